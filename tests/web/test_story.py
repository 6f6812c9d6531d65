"""The replay viewer tells the story, checked in Chromium against the replay, the engine and the
API: the header names the sides (links to the bots), the winner and the rule that decided it,
and the rating changes; the last step names the winner; every label counts deals from 1."""

from __future__ import annotations

import json
import re
from urllib.parse import unquote

from kozel.server.replay.file import read_replay
from kozel.v1 import game_pb2
from tests.web.conftest import LADDER, Arena, get, shot

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
