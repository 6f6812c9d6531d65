"""A person plays in Chromium by clicking: a whole two-player match against greedy (with a
multi-card lead, a discard and a reload in the middle that resumes the seat) and a four-player
teams match with three house bots; the result names the winner and links the replay."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import HOSTILE, shot
from tests.web.seat_helpers import pick, serve

pytestmark = [
    pytest.mark.timeout(900),
    pytest.mark.skipif(
        not os.environ.get("CI") and not Path("/usr/bin/chromium").exists(),
        reason="needs Chromium",
    ),
]


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from (w for _, w in serve(tmp_path_factory.mktemp("seat-page")))


def sit_down(page, web: str, name: str, players: int, deals: str) -> None:
    page.goto(web + "/play")
    page.fill("#name", name)
    page.select_option("#players", str(players))
    for sel in page.query_selector_all("#opponents select"):
        sel.select_option("greedy")
    page.select_option("#clock", "relaxed")  # a loaded machine never times the person out
    page.select_option("#deals", deals)
    page.click("#open")
    page.wait_for_selector(".seat-hand", timeout=30_000)


def answer_one(page, played: dict[str, int]) -> bool:
    """Wait for the next decision and answer it by clicking; False once the match is over."""
    page.wait_for_function(
        "() => Seat.state && (Seat.state.request || Seat.state.end || Seat.state.error)",
        timeout=60_000,
    )
    request: dict[str, Any] | None = page.evaluate("() => Seat.state.request")
    if request is None:
        return False
    assert "for this move" in page.inner_text("#seat-clock") or "bank" in page.inner_text(
        "#seat-clock"
    )
    action = request["legal_actions"][pick(request)]
    kind = action["kind"].removeprefix("ACTION_KIND_")
    if kind == "DECLARE":
        page.click(f"button[data-action=DECLARE-{action['combo'].removeprefix('COMBO_')}]")
    elif kind == "PASS":
        page.click("button[data-action=PASS]")
    else:
        for card in action["cards"]:
            page.click(f"button.hand-card[data-card='{card}']")
        page.click(f"button[data-action={kind}]")
    key = f"{kind}{len(action.get('cards', [])) if kind == 'LEAD' else ''}"
    played[key] = played.get(key, 0) + 1
    page.wait_for_function(
        "(rid) => !Seat.state.request || Seat.state.request.request_id !== rid",
        arg=request["request_id"],
        timeout=60_000,
    )
    return True


def play_to_end(page, played: dict[str, int], reload_after: int | None = None) -> None:
    answered = 0
    while answer_one(page, played):
        answered += 1
        if answered == reload_after:
            match_id = page.evaluate("() => Seat.state.match.match_id")
            page.reload()
            page.wait_for_selector(".seat-hand", timeout=30_000)
            assert page.evaluate("() => Seat.state.match.match_id") == match_id
            played["reloaded"] = 1
        assert answered < 1000


def check_end(page, web: str) -> None:
    page.wait_for_selector("#seat-end", timeout=60_000)
    text = page.inner_text("#seat-end")
    assert "wins" in text or "draw" in text.lower(), text
    href = page.get_attribute("a.replay-link", "href")
    assert href and href.startswith("/matches/")
    page.goto(web + href)
    page.wait_for_selector("[data-result]", timeout=30_000)


def test_a_person_plays_a_whole_match_against_greedy(page, web: str) -> None:
    sit_down(page, web, "Ann", 2, "0")
    assert "(you)" in page.inner_text(".seat-list")
    played: dict[str, int] = {}
    play_to_end(page, played, reload_after=5)
    shot(page, "seat-2p-end")
    assert played.get("reloaded") == 1
    assert played.get("DISCARD", 0) >= 1, played
    assert any(k.startswith("LEAD") and k != "LEAD1" for k in played), played
    check_end(page, web)
    assert not page.errors, page.errors


def test_a_person_plays_a_teams_match_with_three_bots(page, web: str) -> None:
    sit_down(page, web, "Bo", 4, "1")
    assert "(your partner)" in page.inner_text(".seat-list")
    shot(page, "seat-4p")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "seat-4p-phone")
    played: dict[str, int] = {}
    play_to_end(page, played)
    assert sum(played.values()) >= 3
    check_end(page, web)
    assert not page.errors, page.errors


def test_a_hostile_name_is_shown_as_text(page, web: str) -> None:
    page.goto(web + "/play?opponent=own")  # a bot page's "play it by hand"
    page.wait_for_selector("#opponents select")
    assert page.eval_on_selector("#opponents select", "s => s.value") == ""
    shot(page, "seat-form")
    page.goto(web + "/play")
    page.fill("#name", HOSTILE)
    page.select_option("#deals", "1")
    page.click("#open")
    page.wait_for_selector(".seat-list", timeout=30_000)
    assert page.inner_text("h1") == f"{HOSTILE} at the table"
    assert HOSTILE in page.inner_text(".seat-list")
    assert page.query_selector("main img") is None
    assert not page.evaluate("() => window.__xss || false")
    page.goto(web + "/play/0123456789abcdef")  # a seat this browser holds no key of
    page.wait_for_selector(".notice.error")
    assert "key" in page.inner_text(".notice.error")


def test_a_declaration_window_offers_moscow_and_pass(page, web: str) -> None:
    """The page's drawing of a sealed window, fed a state as the seat API gives it (a real
    deal rarely deals a combination to seat 0): the buttons name the combination and the
    click answers its index."""
    seat_id, sent = "00112233445566ff", []
    hand = ["AS", "AH", "TS", "TD"]
    declare = {"kind": "ACTION_KIND_DECLARE", "cards": hand, "combo": "COMBO_MOSCOW"}
    state = {
        "seat_id": seat_id,
        "name": "Ann",
        "version": 3,
        "table_id": "t",
        "own_bot": False,
        "match": {
            "match_id": "ab" * 16,
            "seat": 0,
            "players": 2,
            "seating": [{"name": "Ann"}, {"seat": 1, "name": "greedy-1", "side": 1}],
        },
        "deal": {"trump": "D", "trump_card": "7D"},
        "hand": hand,
        "talon": 27,
        "trick": [],
        "last_trick": None,
        "observation": None,
        "rejection": "",
        "deal_ends": [],
        "end": None,
        "error": "",
        "log": [],
        "request": {
            "request_id": "9",
            "kind": "DECISION_KIND_DECLARE",
            "move_ms": 15000,
            "time_bank_ms": 60000,
            "elapsed_ms": 0,
            "retries_left": 2,
            "legal_actions": [{"kind": "ACTION_KIND_PASS"}, declare],
        },
    }
    # The first state, then a long poll that never answers (nothing happens meanwhile).
    page.route(
        f"**/api/seats/{seat_id}?*",
        lambda route: route.fulfill(json=state) if "after=-1" in route.request.url else None,
    )

    def answered(route) -> None:
        sent.append(route.request.post_data_json)
        route.fulfill(json={})

    page.route(f"**/api/seats/{seat_id}/action", answered)
    page.goto(f"{web}/play/{seat_id}#t=secret")
    page.wait_for_selector("button[data-action=DECLARE-MOSCOW]")
    assert page.inner_text("button[data-action=DECLARE-MOSCOW]") == "Declare Moscow"
    assert page.is_visible("button[data-action=PASS]")
    assert page.is_disabled(f"button.hand-card[data-card='{hand[0]}']")
    assert page.evaluate("() => localStorage.getItem('kozel-seat-00112233445566ff')") == "secret"
    page.click("button[data-action=DECLARE-MOSCOW]")
    page.wait_for_function("() => !Seat.state.request")
    assert sent == [{"request_id": "9", "index": 1}]
    assert not page.errors, page.errors


def test_axe_finds_nothing_on_the_seat_pages(page, web: str) -> None:
    from tests.web.test_axe import _clean

    page.goto(web + "/play")
    page.wait_for_selector("#opponents select")
    _clean(page, "/play")
    sit_down(page, web, "axe", 2, "1")
    _clean(page, "/play/ID")
