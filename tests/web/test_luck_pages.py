"""Luck on the ladder pages, in Chromium against the real referee of the arena (its luck
worker stores each finished match's luck): the standings' luck-corrected score, the matchup
page of two bots (one with a hostile name), and the viewer's luck and skill by deal."""

from __future__ import annotations

import json
import math
import re
import time
from urllib.parse import quote

from sqlalchemy import select
from sqlalchemy.orm import Session

from kozel.ladder import luck_store
from kozel.ladder.models import MatchLuckRow
from tests.web.conftest import HOSTILE, LADDER, Arena, get, shot

INTERVAL = re.compile(r"^-?\d+\.\d\d ± \d+\.\d\d$")


def _with_luck(arena: Arena, n: int) -> list[str]:
    """Wait until the luck of ``n`` finished matches is stored; their ids."""
    deadline = time.monotonic() + 120
    while True:
        with Session(arena.store.engine) as s:
            ids = list(s.scalars(select(MatchLuckRow.match_id).where(MatchLuckRow.error.is_(None))))
        if len(ids) >= n:
            return ids
        assert time.monotonic() < deadline, f"the luck of {len(ids)} matches is stored"
        time.sleep(0.5)


def _api(arena: Arena, path: str) -> dict:
    status, _, body = get(arena.url(path))
    assert status == 200, body
    return json.loads(body)


def test_standings_show_the_luck_corrected_score(arena: Arena, page) -> None:
    _with_luck(arena, 4)
    data = _api(arena, f"/api/ladders/{LADDER}/standings")
    with Session(arena.store.engine) as s:
        seats = luck_store.seat_figures(s, LADDER)
    rows = {r["bot"]: r for r in data["standings"]}
    lucky = [r for r in rows.values() if r["luck"] is not None and r["luck"]["low"] is not None]
    assert lucky, rows
    for r in lucky:  # bots keep playing: the API read the store before this test did
        mine = [x for x in seats if x.bot == r["bot"]]
        assert r["luck"]["matches"] <= len({x.match_id for x in mine})
        assert r["luck"]["low"] <= r["luck"]["value"] <= r["luck"]["high"]
        assert 0 <= r["luck"]["plain"] <= 1
    page.goto(arena.url(f"/ladders/{LADDER}"))
    page.wait_for_selector("table.standings tbody tr")
    cells = page.eval_on_selector_all(
        "table.standings tbody tr",
        "rs => rs.map(r => [r.cells[1].textContent, r.querySelector('[data-luck]')?.textContent])",
    )
    shown = {bot: text for bot, text in cells if text}
    assert {r["bot"] for r in lucky} <= set(shown)
    assert all(INTERVAL.match(t) for t in shown.values()), shown
    assert page.locator("th[data-key=corrected]").inner_text() == "Corrected score"
    shot(page, "standings-luck")
    assert page.errors == [], page.errors


def test_matchup_page_lists_the_pairs_matches_and_escapes_names(arena: Arena, page) -> None:
    _with_luck(arena, 4)
    path = f"/api/ladders/{LADDER}/matchup?a=greedy-a&b={quote(HOSTILE)}"
    data = _api(arena, path)
    pair = {
        m.id
        for m in arena.store.matches(ladder=LADDER, bot="greedy-a", limit=10_000)
        if m.status == "finished"
        and HOSTILE in {x.bot for x in arena.store.match_detail(m.id).seats}  # type: ignore[union-attr]
    }
    listed = [m["match_id"] for m in data["matches"]]
    assert listed and set(listed) <= pair and len(pair - set(listed)) <= 2  # (still playing)
    for m in data["matches"]:
        assert {x["bot"] for x in m["seats"]} == {"greedy-a", HOSTILE}
        for x in m["seats"]:
            if x["score"] is not None:
                assert math.isclose(x["corrected"], x["score"] - x["luck"], abs_tol=1e-3)
    assert set(data["performance"]) <= {"greedy-a", HOSTILE}
    assert _api(arena, f"/api/ladders/{LADDER}/matchup?a=greedy-a&b=nobody")["matches"] == []
    page.on("dialog", lambda d: page.errors.append("dialog: " + d.message))
    page.goto(arena.url(f"/ladders/{LADDER}/matchup?a=greedy-a&b={quote(HOSTILE)}"))
    page.wait_for_selector("table.matchup-matches tbody tr")
    assert HOSTILE in page.locator("h1").inner_text()  # as text
    assert page.locator("main img").count() == 0  # never as markup
    shown = page.locator("table.matchup-matches tbody tr").count()
    assert len(listed) <= shown <= len(listed) + 3  # (bots keep playing meanwhile)
    shot(page, "matchup")
    assert page.errors == [], page.errors


def test_viewer_shows_each_deals_luck_and_skill(arena: Arena, page) -> None:
    match_id = _with_luck(arena, 1)[0]
    split = _api(arena, f"/api/matches/{match_id}/luck")
    page.goto(arena.url(f"/matches/{match_id}"))
    page.wait_for_selector("[data-luck-panel] table tbody tr")
    rows = page.eval_on_selector_all(
        "[data-luck-panel] table tbody tr",
        "rs => rs.map(r => [...r.cells].map(c => c.textContent))",
    )
    assert len(rows) == len(split["deals"]) + 1 > 1  # and the match's total
    assert [x["side"] for x in split["sides"]] == [0, 1]
    for side in (0, 1):
        total = float(rows[-1][1 + 3 * side])
        assert math.isclose(total, sum(d["points"][side] for d in split["deals"]), abs_tol=0.06)
    text = page.locator("[data-luck-score]").inner_text()
    x = split["sides"][0]
    assert f"{x['score'] - x['score_luck']:.3f}" in text
    for row, deal in zip(rows, split["deals"]):
        for side in (0, 1):
            points, luck, skill = (float(v) for v in row[1 + 3 * side : 4 + 3 * side])
            assert math.isclose(points, deal["points"][side], abs_tol=0.051)
            assert math.isclose(luck, deal["luck"][side], abs_tol=0.051)
            assert math.isclose(skill, points - luck, abs_tol=0.11)  # skill = result - luck
    shot(page, "viewer-luck")
    assert page.errors == [], page.errors
    assert _api(arena, "/api/matches/" + "0" * 32 + "/luck")["status"] == "none"
    assert split["status"] == "computed"
