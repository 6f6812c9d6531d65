"""The home page tells an operator each ladder's state without the admin token: running or
stopped (or why waiting bots get no match), bots waiting, the latest match's time; refreshed
by a button. Stopped and started again through the admin RPC of the shared arena's referee."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from kozel.v1 import admin_pb2 as apb
from tests.web.conftest import LADDER, Arena, admin, get, shot

HOSTILE_REASON = "<b>maintenance</b>"


def _state(page) -> str:
    return page.get_attribute(f"tr:has(a[href='/ladders/{LADDER}']) [data-state]", "data-state")


def test_the_api_and_the_home_page_show_each_ladders_state(arena: Arena, page) -> None:
    ended = [
        m.ended_at
        for m in arena.store.matches(ladder=LADDER, limit=200)
        if m.status == "finished" and m.ended_at is not None
    ]
    before = max(e if e.tzinfo else e.replace(tzinfo=UTC) for e in ended)
    (ladder,) = json.loads(get(arena.url("/api/ladders"))[2])
    assert ladder["state"] == "running" and isinstance(ladder["waiting_bots"], int)
    last = datetime.fromisoformat(ladder["last_match_at"])
    assert before <= last <= datetime.now(UTC)
    page.goto(arena.url("/"))
    page.wait_for_selector("table.ladders tbody tr")
    assert _state(page) == "running"
    row = page.locator(f"table.ladders tr:has(a[href='/ladders/{LADDER}'])").inner_text()
    assert last.strftime("%Y-%m-%d") in row
    admin(arena, "StopLadder", apb.StopLadderRequest(ladder=LADDER, reason=HOSTILE_REASON))
    try:
        page.click("button[data-action='refresh ladders']")
        page.wait_for_function(
            "() => document.querySelector('table.ladders [data-state]').dataset.state === 'stopped'"
        )
        shot(page, "home-ladder-stopped")
        text = page.inner_text("table.ladders")
        assert "stopped" in text and HOSTILE_REASON not in text  # who and why: operators only
        assert page.locator("table.ladders b").count() == 0
    finally:
        admin(arena, "StartLadder", apb.StartLadderRequest(ladder=LADDER, reason="test over"))
    page.click("button[data-action='refresh ladders']")
    page.wait_for_function(
        "() => document.querySelector('table.ladders [data-state]').dataset.state === 'running'"
    )
    assert page.errors == [], page.errors
