"""The card table, drawn by one module (js/table.js) for the viewer and the live page, checked
in Chromium by where its parts land: two players face each other, three sit around, four
sit with partners opposite; each seat names its side or team in text; on a phone the trick
is above the hands. And the viewer's think-time strip marks a real timeout."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from kozel.server.replay.file import read_replay
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc
from kozel.web.html_export import replay_html
from tests.web.conftest import Arena, get, shot

LATE_BOT = """
import sys, time
from kozel.sdk import GreedyBot, run_bot

class Late(GreedyBot):
    decisions = 0

    def choose(self, request):
        Late.decisions += 1
        if Late.decisions == 3:
            time.sleep(2.0)  # past the move clock and a bank of 1 ms: a timeout
        return super().choose(request)

run_bot(Late, sys.argv[1], name="late", join_table=sys.argv[2])
"""


def _played(tmp: Path, players: int) -> Path:
    """A match of house bots played by ``kozel match`` (its own referee), as an HTML file."""
    out = tmp / f"p{players}"
    subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", "match", "--bots", ",".join(["greedy"] * players)]
        + ["--replay-dir", str(out)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (kzr,) = out.glob("*.kzr")
    html = out / "match.html"
    html.write_text(replay_html(read_replay(kzr)), encoding="utf-8")
    return html


def _boxes(page) -> dict[str, dict]:
    """Each seat's box (by seat number) and the middle's, as the page laid them out."""
    out = {"center": page.locator("[data-board] .center").bounding_box()}
    for seat in page.locator("[data-board] section.seat").all():
        out[seat.get_attribute("data-seat")] = seat.bounding_box()
    return out


def _mid(box: dict) -> tuple[float, float]:
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    tmp = tmp_path_factory.mktemp("table")
    return {n: _played(tmp, n) for n in (2, 3, 4)}


def test_four_players_sit_with_partners_opposite(played, browser) -> None:
    context = browser.new_context(viewport={"width": 1200, "height": 900}, offline=True)
    page = context.new_page()
    page.goto(played[4].as_uri())
    page.wait_for_selector("main[data-ready]")
    b = _boxes(page)
    cx, cy = _mid(b["center"])
    (x0, y0), (x1, y1), (x2, y2), (x3, y3) = (_mid(b[str(s)]) for s in range(4))
    assert y0 > cy > y2 and abs(x0 - cx) < 5 and abs(x2 - cx) < 5  # seats 0 and 2: one team
    assert x1 < cx < x3 and abs(y1 - cy) < 5 and abs(y3 - cy) < 5  # seats 1 and 3: the other
    for s in range(4):
        tag = page.inner_text(f"section.seat[data-seat='{s}'] .tag.side")
        assert tag == f"seat {s} · team {s % 2}"  # the colour is also said in words
    colours = [
        page.eval_on_selector(
            f"section.seat[data-seat='{s}']", "e => getComputedStyle(e).borderLeftColor"
        )
        for s in range(4)
    ]
    assert colours[0] == colours[2] != colours[1] == colours[3]
    shot(page, "table-4p")
    page.select_option("select[data-action=view]", "1")  # as seat 1 saw it: seat 1 at the bottom
    b = _boxes(page)
    assert _mid(b["1"])[1] > _mid(b["center"])[1] > _mid(b["3"])[1]
    context.close()


def test_two_face_and_three_sit_around(played, browser) -> None:
    context = browser.new_context(viewport={"width": 1200, "height": 900}, offline=True)
    page = context.new_page()
    page.goto(played[2].as_uri())
    page.wait_for_selector("main[data-ready]")
    b = _boxes(page)
    assert _mid(b["0"])[1] > _mid(b["center"])[1] > _mid(b["1"])[1]
    page.goto(played[3].as_uri())
    page.wait_for_selector("main[data-ready]")
    b = _boxes(page)
    (cx, cy), (_, y0), (x1, y1), (x2, y2) = (_mid(b[k]) for k in ("center", "0", "1", "2"))
    assert y0 > cy and x1 < cx < x2 and abs(y1 - y2) < 5
    shot(page, "table-3p")
    context.close()


def test_on_a_phone_the_trick_is_above_the_hands(played, browser) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, offline=True)
    page = context.new_page()
    page.goto(played[4].as_uri() + "#d=0&s=1&v=all")
    page.wait_for_selector("main[data-ready]")
    trick = page.locator("[data-trick]").bounding_box()
    hands = [h.bounding_box() for h in page.locator("[data-hand]").all()]
    assert all(trick["y"] + trick["height"] <= h["y"] for h in hands)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, width  # nothing wider than the phone
    shot(page, "phone-table-4p")
    context.close()


@pytest.fixture
def late_match(arena: Arena) -> Iterator[str]:
    """A table match in the arena where one bot answers its third decision too late."""
    with grpc.insecure_channel(arena.grpc) as channel:
        table = (
            referee_pb2_grpc.RefereeServiceStub(channel)
            .CreateTable(
                rpb.CreateTableRequest(
                    ruleset=pb.Ruleset(preset="classic"),
                    players=2,
                    house_bots=["greedy"],
                    time_control=pb.TimeControl(move_ms=500, bank_ms=1, max_strikes=50),
                )
            )
            .table_id
        )
    bot = subprocess.Popen(
        [sys.executable, "-c", LATE_BOT, arena.grpc, table],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        match_id = ""
        deadline = time.monotonic() + 60
        while not match_id and time.monotonic() < deadline:
            live = json.loads(get(arena.url("/api/live"))[2])["matches"]
            match_id = next((m["match_id"] for m in live if m["table_id"] == table), "")
            time.sleep(0.1)
        assert match_id, "the late bot's match never started"
        bot.wait(timeout=240)  # the bot ends with its match
        assert bot.returncode == 0, bot.stderr.read() if bot.stderr else ""
        replay = arena.replay_dir / f"{match_id}.kzr"
        while not replay.exists() and time.monotonic() < deadline + 60:
            time.sleep(0.1)
        yield match_id
    finally:
        if bot.poll() is None:
            bot.kill()


def test_the_think_time_strip_marks_a_timeout(arena: Arena, page, late_match: str) -> None:
    replay = json.loads(get(arena.url(f"/api/matches/{late_match}/replay.json"))[2])
    found = [
        (d["index"], step["seat"], i + 1)
        for d in replay["deals"]
        for i, step in enumerate(d["steps"])
        if step["timeout"]
    ]
    assert found, "the late bot timed out nowhere"
    deal, seat, frame = found[0]
    page.goto(arena.url(f"/matches/{late_match}#d={deal}&s={frame}&v=all"))
    page.wait_for_selector("main[data-ready]")
    strip = f"[data-strip='{seat}']"
    marked = page.eval_on_selector_all(
        f"{strip} [data-timeout]", "bs => bs.map(b => +b.dataset.step)"
    )
    assert marked == [f for d, s, f in found if d == deal and s == seat]
    assert page.inner_text(f"{strip} [data-step='{frame}']") == "\N{MULTIPLICATION SIGN}"
    assert "timed out" in page.get_attribute(f"{strip} [data-step='{frame}']", "title")
    assert "timeout" in page.inner_text(f"{strip} .think-words")  # also in words
    steps = page.locator(f"{strip} [data-step]").count()
    decided = sum(
        1 for d in replay["deals"] if d["index"] == deal for s in d["steps"] if s["seat"] == seat
    )
    assert steps == decided  # one bar per decision of the deal
    shot(page, "viewer-timeout")
    page.click(f"{strip} [data-step='{frame}']")  # a bar is a way to its step
    assert page.get_attribute("[data-where]", "data-step") == str(frame)
    assert page.errors == [], page.errors
