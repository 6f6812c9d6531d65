"""axe-core (the axe.min.js that axe-playwright-python ships) finds no violation on any page,
in Chromium: home, match list, standings, bot pages (one with a hostile name), the replay
viewer (as everything and as a seat), the live page while it plays and once it ended,
tournaments, the operators' page, a matchup and a 404 page (the seat pages: test_seat_page)."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from axe_playwright_python.sync_playwright import Axe

from tests.web.conftest import HOSTILE, LADDER, OPS_TOKEN, Arena
from tests.web.test_live import _table

AXE = Axe()


def _clean(page, where: str) -> None:
    page.wait_for_function("() => !document.querySelector('main .loading')")
    results = AXE.run(page)
    found = [
        (v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3], v["help"])
        for v in results.response["violations"]
    ]
    assert found == [], (where, found)


@pytest.fixture
def ops_page(browser):
    context = browser.new_context(http_credentials={"username": "ops", "password": OPS_TOKEN})
    yield context.new_page()
    context.close()


def test_axe_finds_nothing_on_any_page(arena: Arena, ops_page) -> None:
    page = ops_page
    match_id = next(
        m.id for m in arena.store.matches(ladder=LADDER, limit=50) if m.status == "finished"
    )
    pages = (
        ("/", "table.ladders"),
        ("/matches", "main table"),
        (f"/ladders/{LADDER}", "table.standings"),
        (f"/ladders/{LADDER}/matchup?a=greedy-a&b={quote(HOSTILE)}", "table.matchup-matches"),
        ("/bots/greedy-a", "table.recent"),
        (f"/bots/{quote(HOSTILE, safe='')}", "table.recent"),
        (f"/matches/{match_id}#d=0&s=3&v=all", "main[data-ready]"),
        (f"/matches/{match_id}#d=0&s=3&v=1", "main[data-ready]"),
        ("/tournaments", "main h1"),
        ("/ops", "main h1"),
        ("/no/such/page", "main h1"),
        ("/matches/" + "0" * 32, "main h1"),
    )
    for path, ready in pages:
        page.goto(arena.url(path))
        page.wait_for_selector(ready)
        _clean(page, path)


def test_axe_finds_nothing_on_the_live_page(arena: Arena, page) -> None:
    for match_id, _ in _table(arena, 0.25):
        page.goto(arena.url(f"/live/{match_id}"))
        page.wait_for_selector("section.seat [data-to-act]", timeout=60_000)
        _clean(page, "live")
        page.select_option("select[data-action=pace]", "0")
        page.wait_for_selector("[data-status=ended]", timeout=120_000)
        _clean(page, "live, ended")
