"""The pages in a real browser (Debian's Chromium through Playwright) against a real referee
with house bots playing: standings, bot page, match list, the replay viewer step by step
against the engine's own views, the seat switch, the self-contained HTML file, hostile names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

from kozel.server.replay.file import read_replay
from tests.web.conftest import HOSTILE, LADDER, Arena, shot
from tests.web.engine_views import expected_table, views

READ_BOARD = """() => {
  const cards = (node) => [...node.querySelectorAll('[data-card]')].map((c) => c.dataset.card);
  const hands = {};
  document.querySelectorAll('[data-board] [data-hand]').forEach((h) => {
    hands[h.dataset.hand] = cards(h);
  });
  const plays = (sel) => [...document.querySelectorAll(sel + ' .play')].map(cards);
  const where = document.querySelector('[data-where]').dataset;
  const talon = document.querySelector('[data-talon]');
  return { hands, trick: plays('[data-trick]'), last: plays('[data-last]'),
           talon: talon ? +talon.dataset.talon : null,
           deal: +where.deal, step: +where.step, view: where.view };
}"""


def _finished(arena: Arena, n: int = 1) -> list[str]:
    rows = [m.id for m in arena.store.matches(ladder=LADDER, limit=200) if m.status == "finished"]
    assert len(rows) >= n
    return rows[:n]


def _no_errors(page) -> None:
    assert page.errors == [], page.errors


def _compare(page, replay, deal_index: int, as_seat: int | None) -> int:
    """Step through one deal with the → key from its first frame; every frame must show
    exactly what the engine's view shows. Returns the frames compared."""
    n = 0
    for full, seats in views(replay, deal_index):
        board = page.evaluate(READ_BOARD)
        assert (board["deal"], board["step"]) == (deal_index, n)
        want = expected_table(full if as_seat is None else seats[as_seat], as_seat)
        got = {
            "hands": {int(k): v for k, v in board["hands"].items()},
            "trick": board["trick"],
            "last": board["last"],
            "talon": board["talon"],
        }
        assert got == want, f"deal {deal_index} step {n} as {as_seat}: {got} != {want}"
        page.keyboard.press("ArrowRight")
        n += 1
    return n


def test_standings_page_matches_the_store_and_sorts(arena: Arena, page) -> None:
    page.goto(arena.url(f"/ladders/{LADDER}"))
    page.wait_for_selector("table.standings tbody tr")
    rows = page.eval_on_selector_all(
        "table.standings tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))"
    )
    standings = arena.store.standings(LADDER)
    assert [r[1] for r in rows] and {r[1] for r in rows} == {s.name for s in standings}
    by_name = {s.name: s for s in standings}
    for r in rows:  # bots keep playing: a row is never ahead of the store
        assert int(r[5]) <= by_name[r[1]].matches
    shot(page, "standings")
    page.click("th[data-key=matches]")
    counts = page.eval_on_selector_all(
        "table.standings tbody tr", "rs => rs.map(r => +r.cells[5].textContent)"
    )
    assert counts == sorted(counts, reverse=True)
    page.click("th[data-key=bot]")
    names = page.eval_on_selector_all(
        "table.standings tbody tr", "rs => rs.map(r => r.cells[1].textContent)"
    )
    assert names == sorted(names, key=str.lower) or names == sorted(names)
    _no_errors(page)


def test_home_and_match_list_pages(arena: Arena, page) -> None:
    page.goto(arena.url("/"))
    page.wait_for_selector("table.matches tbody tr")
    assert page.locator("table.ladders").inner_text().count(LADDER) == 1
    shot(page, "home")
    page.goto(arena.url("/matches?bot=greedy-a&status=finished"))
    page.wait_for_selector("table.matches tbody tr")
    seats = page.eval_on_selector_all(
        "table.matches tbody tr", "rs => rs.map(r => r.cells[2].textContent)"
    )
    assert seats and all("greedy-a" in s for s in seats)
    assert page.input_value("input[name=bot]") == "greedy-a"
    shot(page, "matches")
    _no_errors(page)


def test_hostile_bot_name_renders_as_text(arena: Arena, page) -> None:
    dialogs: list[str] = []

    def on_dialog(d) -> None:
        dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", on_dialog)
    page.goto(arena.url("/bots/" + quote(HOSTILE, safe="")))
    page.wait_for_selector("h1 .bot-name")
    assert page.inner_text("h1 .bot-name") == HOSTILE
    page.wait_for_selector(f"[data-chart='{LADDER}']")
    assert page.locator(f"[data-chart='{LADDER}'] canvas").count() >= 1  # uPlot drew it
    shot(page, "bot-hostile-name")
    for path in ("/", f"/ladders/{LADDER}", "/matches"):
        page.goto(arena.url(path))
        page.wait_for_selector("table tbody tr")
        assert HOSTILE in page.inner_text("main")
        assert page.locator("main img").count() == 0  # the name never became an element
    assert dialogs == []
    _no_errors(page)


def test_bot_page_chart_shows_the_rating_history(arena: Arena, page) -> None:
    page.goto(arena.url("/bots/greedy-a"))
    page.wait_for_selector(f"[data-chart='{LADDER}'] canvas")
    points = int(page.get_attribute(f"[data-chart='{LADDER}']", "data-points"))
    assert points >= 1
    assert page.locator("table.opponents tbody tr").count() >= 1
    shot(page, "bot")
    _no_errors(page)


def test_viewer_shows_exactly_the_engines_cards_at_every_step(arena: Arena, page) -> None:
    match_id = _finished(arena)[0]
    replay = read_replay(arena.replay_dir / f"{match_id}.kzr")
    page.goto(arena.url(f"/matches/{match_id}"))
    page.wait_for_selector("main[data-ready]")
    shot(page, "viewer-start")
    frames = 0
    for d in range(len(replay.deals)):  # everything, every deal, one play at a time
        frames += _compare(page, replay, d, None)
    assert frames == sum(len(d.steps) + 1 for d in replay.deals)
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    shot(page, "viewer-everything")
    _no_errors(page)


def test_seat_switch_hides_what_the_seat_did_not_know(arena: Arena, page) -> None:
    match_id = _finished(arena)[0]
    replay = read_replay(arena.replay_dir / f"{match_id}.kzr")
    page.goto(arena.url(f"/matches/{match_id}"))
    page.wait_for_selector("main[data-ready]")
    for seat in range(replay.players):
        page.keyboard.press(str(seat))
        for d in range(min(2, len(replay.deals))):
            page.goto(arena.url(f"/matches/{match_id}#d={d}&s=0&v={seat}"))
            page.wait_for_selector("main[data-ready]")
            _compare(page, replay, d, seat)
    page.goto(arena.url(f"/matches/{match_id}#d=0&s=6&v=1"))
    page.wait_for_selector("main[data-ready]")
    assert page.evaluate(READ_BOARD)["view"] == "1"
    hidden = page.locator("[data-hand='0'] [data-card=back]").count()
    assert hidden > 0  # seat 1 does not see seat 0's hand
    shot(page, "viewer-as-seat-1")
    page.select_option("select[data-action=view]", "all")
    assert page.locator("[data-hand='0'] [data-card=back]").count() == 0
    _no_errors(page)


def test_viewer_link_trick_and_deal_steps(arena: Arena, page) -> None:
    match_id = _finished(arena)[0]
    replay = read_replay(arena.replay_dir / f"{match_id}.kzr")
    page.goto(arena.url(f"/matches/{match_id}#d=1&s=3&v=all"))
    page.wait_for_selector("main[data-ready]")
    b = page.evaluate(READ_BOARD)
    assert (b["deal"], b["step"]) == (1, 3)
    page.goto(arena.url(f"/matches/{match_id}#d=0&s=0&v=all"))
    page.wait_for_selector("main[data-ready]")
    page.keyboard.press("ArrowDown")  # one trick: to the first frame with a trick completed
    b = page.evaluate(READ_BOARD)
    tricks = [len(full.tricks) for full, _ in views(replay, 0)]
    assert tricks[b["step"]] == 1 and tricks[b["step"] - 1] == 0
    page.keyboard.press("ArrowUp")
    assert page.evaluate(READ_BOARD)["step"] == 0
    page.keyboard.press("PageDown")
    b = page.evaluate(READ_BOARD)
    assert (b["deal"], b["step"]) == (1, 0)
    page.click("button[data-action='next play']")
    assert page.evaluate(READ_BOARD)["step"] == 1
    page.select_option("select[data-action=speed]", "8")
    page.evaluate("() => document.activeElement.blur()")  # Space on a control presses it
    page.keyboard.press(" ")  # play
    page.wait_for_function(
        "() => +document.querySelector('[data-where]').dataset.step >= 4", timeout=20_000
    )
    page.keyboard.press(" ")  # pause
    at = page.evaluate(READ_BOARD)["step"]
    page.wait_for_timeout(600)
    assert page.evaluate(READ_BOARD)["step"] == at
    think = page.get_attribute("[data-think]", "data-think")
    assert think is not None and f"of {replay.time_control.move_ms} ms" in page.inner_text(
        "[data-stepinfo]"
    )
    _no_errors(page)


def test_self_contained_html_works_from_file_offline(arena: Arena, browser, tmp_path: Path) -> None:
    match_id = _finished(arena)[0]
    src = arena.replay_dir / f"{match_id}.kzr"
    out = tmp_path / "match.html"
    subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", "replay", "html", str(src), "-o", str(out)],
        check=True,
        capture_output=True,
    )
    replay = read_replay(src)
    context = browser.new_context(offline=True)
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(out.as_uri())
    page.wait_for_selector("main[data-ready]")
    _compare(page, replay, 0, None)
    page.goto(out.as_uri() + "#d=0&s=0&v=0")
    page.reload()
    page.wait_for_selector("main[data-ready]")
    _compare(page, replay, 0, 0)
    shot(page, "file-html")
    assert errors == []
    assert all(u.startswith("file://") for u in requests), requests  # nothing from the network
    context.close()
