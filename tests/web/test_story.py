"""The replay viewer tells the story, checked in Chromium against the replay, the engine and the
API: the header names the sides (links to the bots), the winner and the rule that decided it,
and the rating changes; the last step names the winner; every label counts deals from 1."""

from __future__ import annotations

import json
import re
from urllib.parse import unquote

from kozel.engine.observation import PlayView, TrickView
from kozel.server.replay.file import read_replay
from kozel.v1 import game_pb2
from kozel.web.replay_json import why_won
from tests.web.conftest import LADDER, Arena, get, shot
from tests.web.engine_views import views

CARD_CODE = re.compile(r"\b[6-9TJQKA][SCDH]\b")


def _finished(arena: Arena) -> str:
    rows = [m.id for m in arena.store.matches(ladder=LADDER, limit=200) if m.status == "finished"]
    assert rows
    return rows[0]


def _open(arena: Arena, page, match_id: str, where: str = "") -> None:
    page.goto(arena.url(f"/matches/{match_id}{where}"))
    page.wait_for_selector("main[data-ready]")


def test_header_names_the_sides_the_winner_the_rule_and_rating_changes(arena: Arena, page) -> None:
    match_id = _finished(arena)
    replay = read_replay(arena.replay_dir / f"{match_id}.kzr")
    seats = sorted(replay.seats, key=lambda s: s.seat)
    _open(arena, page, match_id)
    links = page.eval_on_selector_all(
        "h1[data-sides] a", "as => as.map(a => [a.textContent, a.getAttribute('href')])"
    )
    by_side = sorted(seats, key=lambda s: (s.side, s.seat))
    assert [[t, unquote(h)] for t, h in links] == [[s.name, f"/bots/{s.name}"] for s in by_side]
    assert page.locator("main img").count() == 0  # the hostile name stays text
    r = replay.result
    assert r.reason in (game_pb2.MATCH_END_REASON_LIMIT, game_pb2.MATCH_END_REASON_FORFEIT)
    winner = " + ".join(s.name for s in seats if s.side == r.winner_side)
    assert page.get_attribute("[data-result]", "data-winner") == ("" if r.draw else winner)
    text = page.inner_text("[data-result]")
    assert text.startswith(f"{winner} wins: ")
    if r.reason == game_pb2.MATCH_END_REASON_LIMIT:
        loser = next(s for s in seats if s.side != r.winner_side)
        total = r.penalty_totals[loser.side]
        assert f"{loser.name} reached {total} penalty points" in text
        assert "(reaching 12 penalties loses)" in text
    assert page.locator(f"main a[href='/ladders/{LADDER}']").count() == 1
    detail = json.loads(get(arena.url(f"/api/matches/{match_id}"))[2])
    rated = [s for s in detail["seats"] if "rating" in s]
    assert rated, detail  # a finished ladder match has its rating changes
    for s in rated:
        before, after = s["rating"]["mu_before"], s["rating"]["mu_after"]
        shown = page.inner_text(f"[data-rating='{s['seat']}']")
        assert f"{before:.2f} → {after:.2f}" in shown, (shown, s)
        assert shown.startswith(s["bot"])
    shot(page, "viewer-header")
    page.keyboard.press("End")  # the last step of the last deal names the winner
    assert page.inner_text("[data-ending]") == "Match over: " + text
    assert text in page.inner_text("[data-final]")
    assert page.errors == [], page.errors


def test_the_exported_file_names_the_winner_without_links(arena: Arena, browser, tmp_path) -> None:
    from kozel.web.html_export import replay_html

    match_id = _finished(arena)
    replay = read_replay(arena.replay_dir / f"{match_id}.kzr")
    out = tmp_path / "m.html"
    out.write_text(replay_html(replay), encoding="utf-8")
    context = browser.new_context(offline=True)
    page = context.new_page()
    page.goto(out.as_uri())
    page.wait_for_selector("main[data-ready]")
    assert page.locator("h1[data-sides] a").count() == 0  # no server to link to
    names = {s.name for s in replay.seats}
    assert {x.strip() for x in re.split(r" vs | \+ ", page.inner_text("h1[data-sides]"))} == names
    assert page.inner_text("[data-result]").endswith(".")
    assert "wins" in page.inner_text("[data-result]")
    context.close()


def test_one_numbering_and_no_null_at_the_first_step(arena: Arena, page) -> None:
    match_id = _finished(arena)
    replay = read_replay(arena.replay_dir / f"{match_id}.kzr")
    n = len(replay.deals)
    for d in range(n):
        _open(arena, page, match_id, f"#d={d}&s=0&v=all")
        page.wait_for_function(
            f"() => document.querySelector('[data-where]').dataset.deal === '{d}'"
        )
        info = page.inner_text("[data-stepinfo]")
        assert "null" not in info, info
        assert info.startswith(f"Deal {d + 1}: dealt by "), info
        assert f"deal {d + 1}/{n}" in page.inner_text("[data-where]")
    deals = page.eval_on_selector_all(
        ".scores tbody tr", "rs => rs.map(r => r.cells[0].textContent)"
    )
    assert deals == [str(i + 1) for i in range(n)]
    _open(arena, page, match_id, "#d=0&s=0&v=all")
    page.keyboard.press("ArrowDown")  # the first finished trick: its winner holds 1 trick
    facts = page.eval_on_selector_all("[data-facts]", "fs => fs.map(f => f.textContent)")
    assert any("· 1 trick ·" in f for f in facts), facts
    assert not any(re.search(r"\b1 (cards|tricks)\b", f) for f in facts), facts
    label = page.inner_text("[data-last] .label")
    assert label.lower() == "last trick: trick 1 of the deal", label
    assert page.errors == [], page.errors


def _trick(plays: list[tuple[int, str, tuple[str, ...]]], winner: int, combo=None) -> TrickView:
    views_ = tuple(PlayView(seat, kind, len(cards), cards) for seat, kind, cards in plays)
    return TrickView(plays[0][0], winner, views_, combo, 0)


def test_why_a_trick_was_won() -> None:
    """Hearts are trump in each case."""
    lead = (0, "lead", ("AS",))
    assert why_won(_trick([lead, (1, "beat", ("7H",))], 1), "H", True) == "trumped"
    assert why_won(_trick([lead, (1, "beat", ("6S",))], 1), "H", True) == "super-trump 6♠"
    assert why_won(_trick([(0, "lead", ("7S",)), (1, "beat", ("KS",))], 1), "H", True) == (
        "beaten in suit"
    )
    assert why_won(_trick([(0, "lead", ("7H",)), (1, "beat", ("KH",))], 1), "H", True) == (
        "beaten in suit"  # a trump lead beaten by a higher trump is not "trumped"
    )
    assert why_won(_trick([lead, (1, "discard", ("7C",))], 0), "H", True) == "lead not beaten"
    assert why_won(_trick([(0, "lead", ("6S", "9S"))], 0), "H", True) == "nobody answered"
    six = _trick([(0, "lead", ("6S",)), (1, "discard", ("7C",))], 0)
    assert why_won(six, "H", True) == "super-trump 6♠"
    assert why_won(six, "H", False) == "lead not beaten"  # no shokha: the lowest spade
    moscow = _trick(
        [(0, "lead", ("AS", "AH", "TS", "6S")), (1, "discard", ("7C",) * 4)], 0, "moscow"
    )
    assert why_won(moscow, "H", True) == "combination: moscow"


def test_trick_list_matches_the_engine_and_each_row_goes_to_its_step(arena: Arena, page) -> None:
    match_id = _finished(arena)
    replay = read_replay(arena.replay_dir / f"{match_id}.kzr")
    names = {s.seat: s.name for s in replay.seats}
    frames = list(views(replay, 0))
    tricks = frames[-1][0].tricks
    _open(arena, page, match_id, "#d=0&s=0&v=all")
    rows = page.eval_on_selector_all(
        "[data-tricks] tbody tr",
        "rs => rs.map(r => ({step: +r.dataset.step, cells: [...r.cells].map(c => c.textContent),"
        " cards: [...r.querySelectorAll('[data-card]')].map(c => c.dataset.card)}))",
    )
    assert len(rows) == len(tricks) > 0
    assert page.inner_text("[data-tricks-head]") == f"Tricks of deal 1 ({len(tricks)} tricks)"
    for i, (row, t) in enumerate(zip(rows, tricks, strict=True)):
        done = frames[row["step"]][0]
        assert len(done.tricks) == i + 1 and len(frames[row["step"] - 1][0].tricks) == i
        assert row["cells"][0] == str(i + 1)
        assert (row["cells"][1], row["cells"][3]) == (names[t.leader], names[t.winner])
        assert row["cells"][4] == str(done.tricks[i].known_points)
        assert row["cells"][5] == why_won(t, done.trump, True)
        assert row["cards"] == [c for p in done.tricks[i].plays for c in p.cards]
    page.click("[data-tricks] tbody tr:nth-child(2) button[data-goto]")
    where = page.get_attribute("[data-where]", "data-step")
    assert where == str(rows[1]["step"])
    last = page.eval_on_selector_all("[data-last] [data-card]", "cs => cs.map(c => c.dataset.card)")
    assert last == rows[1]["cards"]
    assert page.get_attribute("[data-trick-row='1']", "aria-current") == "step"
    assert page.inner_text("[data-points-head]") == "Points"
    page.keyboard.press("1")  # as seat 1 saw it: points of the cards it saw
    assert page.inner_text("[data-points-head]") == "Points seen"
    assert page.inner_text("[data-last-winner]").endswith(" points seen")
    page.keyboard.press("a")
    shot(page, "viewer-tricks")
    assert page.errors == [], page.errors


def _six_of_spades_in_hand(arena: Arena):
    """(match id, deal, step, seat, full view) of a frame where the 6♠ is in a hand."""
    rows = [m.id for m in arena.store.matches(ladder=LADDER, limit=50) if m.status == "finished"]
    for match_id in rows:
        replay = read_replay(arena.replay_dir / f"{match_id}.kzr")
        for d in range(len(replay.deals)):
            for step, (full, _) in enumerate(views(replay, d)):
                for s in full.seats:
                    if "6S" in s.known_cards:
                        return match_id, d, step, s.seat, full
    return None


def test_super_trump_trump_and_seat_to_act_are_said_in_text(arena: Arena, page) -> None:
    found = _six_of_spades_in_hand(arena)
    assert found is not None
    match_id, d, step, holder, full = found
    _open(arena, page, match_id, f"#d={d}&s={step}&v=all")
    six = page.locator(f"[data-hand='{holder}'] [data-card='6S']")
    assert six.get_attribute("aria-label") == "6♠ super-trump"
    assert six.locator(".mark").inner_text().lower() == "super"
    assert "6♠ is the super-trump" in page.inner_text("[data-board]")
    trump = {"S": "spades", "C": "clubs", "D": "diamonds", "H": "hearts"}[full.trump]
    assert f"{trump} are trump" in page.inner_text("[data-trump]")
    acting = page.eval_on_selector_all(
        "[data-to-act]", "ts => ts.map(t => t.closest('[data-seat]').dataset.seat)"
    )
    assert acting == [str(s) for s in full.to_act]
    assert page.errors == [], page.errors
