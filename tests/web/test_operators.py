"""What an operator reads on the standings and bot pages, checked in Chromium against the API:
the ladder's state (running or stopped, bots waiting, matches, the latest match's time) with a
refresh; each of a bot's latest matches with its result and rating change; its chart of the
ordinal (the figure standings sort by) with ticks at whole numbers only."""

from __future__ import annotations

import json
from urllib.parse import quote

from kozel.v1 import admin_pb2 as apb
from tests.web.conftest import LADDER, Arena, admin, get, shot


def test_the_standings_page_shows_the_ladders_state_and_refreshes(arena: Arena, page) -> None:
    (ladder,) = json.loads(get(arena.url("/api/ladders"))[2])
    page.goto(arena.url(f"/ladders/{LADDER}"))
    page.wait_for_selector("[data-ladder-state] [data-state]")
    assert page.get_attribute("[data-ladder-state] [data-state]", "data-state") == "running"
    waiting = page.get_attribute("[data-waiting]", "data-waiting")
    assert waiting.isdigit() and isinstance(ladder["waiting_bots"], int)
    shown = page.get_attribute("[data-last-match]", "data-last-match")
    assert shown and shown[:10] == ladder["last_match_at"][:10]
    assert "played" in page.inner_text("[data-ladder-state]")
    capped = page.get_attribute("[data-capped]", "data-capped")  # no repeat_cap: none at it
    assert capped == str(ladder["capped_groups"]) == "0" and ladder["groups"] >= 0
    admin(arena, "StopLadder", apb.StopLadderRequest(ladder=LADDER, reason="<b>why</b>"))
    try:
        page.click("button[data-action='refresh state']")
        page.wait_for_selector("[data-ladder-state] [data-state=stopped]")
        shot(page, "standings-stopped")
        assert "<b>why</b>" not in page.inner_text("main")  # who and why: operators only
    finally:
        admin(arena, "StartLadder", apb.StartLadderRequest(ladder=LADDER, reason="test over"))
    page.click("button[data-action='refresh state']")
    page.wait_for_selector("[data-ladder-state] [data-state=running]")
    assert page.errors == [], page.errors


def test_the_bot_page_shows_results_rating_changes_and_the_ordinal(arena: Arena, page) -> None:
    name = "greedy-a"
    page.goto(arena.url(f"/bots/{quote(name)}"))
    page.wait_for_selector("table.recent tbody tr")
    chart = f"[data-chart='{LADDER}']"
    page.wait_for_selector(f"{chart} canvas")
    # The bots keep playing: the API is read after the page, and only the rows both hold count.
    bot = json.loads(get(arena.url(f"/api/bots/{quote(name)}"))[2])
    on_page = set(page.eval_on_selector_all("[data-result]", "es => es.map(e => e.dataset.result)"))
    checked = 0
    for m in bot["recent_matches"]:
        if m["match_id"] not in on_page or m["status"] != "finished":
            continue
        me = next(s for s in m["seats"] if s["bot"] == name)
        result = page.inner_text(f"[data-result='{m['match_id']}']")
        if result == "running":  # it ended between the page and the API
            continue
        others = [s for s in m["seats"] if s["side"] != me["side"]]
        if me["rank"] == 1:
            assert result == ("drawn" if any(s["rank"] == 1 for s in others) else "won")
        else:
            assert result == "lost"  # two sides: no rank to tell
        delta = me["mu_after"] - me["mu_before"]  # a finished ladder match is rated
        sign = "+" if delta >= 0 else "\N{MINUS SIGN}"
        change = f"{me['mu_before']:.2f} → {me['mu_after']:.2f} ({sign}{abs(delta):.2f})"
        assert page.inner_text(f"[data-change='{m['match_id']}']") == change
        checked += 1
    assert checked >= 3
    # The chart draws the ordinal, the figure the standings sort by (mu - 3 sigma).
    (mine,) = [r for r in bot["ladders"] if r["ladder"] == LADDER]
    assert abs(mine["ordinal"] - (mine["mu"] - 3 * mine["sigma"])) < 1e-9
    n = int(page.get_attribute(chart, "data-points"))
    history = json.loads(get(arena.url(f"/api/bots/{quote(name)}/ratings?ladder={LADDER}"))[2])
    point = history["points"][n - 1]
    ordinal = point["mu"] - 3 * point["sigma"]
    assert page.get_attribute(chart, "data-last-ordinal") == f"{ordinal:.2f}"
    for axis in ("data-x-ticks", "data-y-ticks"):
        ticks = page.get_attribute(chart, axis).split()
        assert ticks and all(float(t) == int(float(t)) for t in ticks), (axis, ticks)
    assert "ordinal" in page.inner_text(f"{chart} .u-legend")
    shot(page, "bot-ordinal")
    assert page.errors == [], page.errors
