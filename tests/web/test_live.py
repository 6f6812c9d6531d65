"""Live matches: the SSE stream carries exactly what WatchMatch shows, and the live page moves
as the bots play (a house bot in the referee against a slow bot process at a table)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator

import grpc
import pytest
from google.protobuf.json_format import MessageToDict

from kozel.server.replay.file import read_replay
from kozel.v1 import game_pb2 as pb
from kozel.v1 import match_pb2, match_pb2_grpc, referee_pb2_grpc
from kozel.v1 import referee_pb2 as rpb
from tests.web.conftest import Arena, get, shot

SLOW_BOT = """
import sys, time
from kozel.sdk import GreedyBot, run_bot

class Slow(GreedyBot):
    def choose(self, request):
        time.sleep(float(sys.argv[3]))
        return super().choose(request)

run_bot(Slow, sys.argv[1], name="slowpoke", join_table=sys.argv[2])
"""


def _table(arena: Arena, think_s: float) -> Iterator[tuple[str, subprocess.Popen]]:
    with grpc.insecure_channel(arena.grpc) as channel:
        table = (
            referee_pb2_grpc.RefereeServiceStub(channel)
            .CreateTable(
                rpb.CreateTableRequest(
                    ruleset=pb.Ruleset(preset="classic"),
                    players=2,
                    house_bots=["greedy"],
                    time_control=pb.TimeControl(move_ms=5000, bank_ms=10000),
                )
            )
            .table_id
        )
    bot = subprocess.Popen(
        [sys.executable, "-c", SLOW_BOT, arena.grpc, table, str(think_s)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            _, _, body = get(arena.url("/api/live"))
            found = [m for m in json.loads(body)["matches"] if m["table_id"] == table]
            if found:
                yield found[0]["match_id"], bot
                return
            assert bot.poll() is None, bot.stderr.read() if bot.stderr else ""
            time.sleep(0.1)
        pytest.fail("the table's match never appeared in /api/live")
    finally:
        bot.wait(timeout=120)


@pytest.fixture
def live_match(arena: Arena) -> Iterator[tuple[str, subprocess.Popen]]:
    yield from _table(arena, 0.12)


def _sse(url: str, out: list[tuple[str, dict]], done: threading.Event) -> None:
    with urllib.request.urlopen(url, timeout=120) as r:
        kind = ""
        for raw in r:
            line = raw.decode().rstrip("\r\n")
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:"):
                out.append((kind, json.loads(line[5:].strip())))
                if kind in ("match_end", "dropped"):
                    break
    done.set()


def test_sse_carries_exactly_what_watchmatch_shows(arena: Arena, live_match) -> None:
    match_id, _ = live_match
    channel = grpc.insecure_channel(arena.grpc)
    stream = match_pb2_grpc.MatchServiceStub(channel).WatchMatch(
        match_pb2.WatchMatchRequest(match_id=match_id), timeout=120
    )
    grpc_events: list[dict] = []
    first = next(stream)  # the gRPC spectator is subscribed before the SSE one
    grpc_events.append(MessageToDict(first.event, preserving_proto_field_name=True))
    sse: list[tuple[str, dict]] = []
    done = threading.Event()
    threading.Thread(
        target=_sse, args=(arena.url(f"/api/live/{match_id}/events"), sse, done), daemon=True
    ).start()
    grpc_events.extend(MessageToDict(m.event, preserving_proto_field_name=True) for m in stream)
    channel.close()
    assert done.wait(60)
    kinds = [k for k, _ in sse]
    assert kinds[0] == "snapshot" and kinds[-1] == "match_end"
    assert "hands" not in json.dumps([e for _, e in sse])  # the public view holds no hand
    after = [e for _, e in sse[1:]]
    assert len(after) >= 10
    assert grpc_events[-len(after) :] == after  # the same messages, field for field
    assert sse[0][1]["snapshot"]["match"]["match_id"] == match_id
    status, _, _body = get(arena.url(f"/api/live/{match_id}/events"))
    assert status == 404  # ended: no live stream


def test_full_view_is_refused_without_a_spectator_delay(arena: Arena, live_match) -> None:
    match_id, _ = live_match
    status, _, body = get(arena.url(f"/api/live/{match_id}/events?full=true"))
    assert status in (404, 409), body  # 404 if it already ended
    if status == 409:
        assert b"spectator_delay_s" in body


def test_live_page_moves_as_the_bots_play(arena: Arena, page) -> None:
    for match_id, _ in _table(arena, 0.25):
        page.goto(arena.url(f"/live/{match_id}"))
        page.wait_for_selector("[data-status=live]", timeout=30_000)
        page.wait_for_function(
            "() => +document.querySelector('[data-board]').dataset.events >= 3", timeout=30_000
        )
        first = int(page.get_attribute("[data-board]", "data-events"))
        talon_before = page.get_attribute("[data-talon]", "data-talon")
        page.wait_for_function(
            f"() => +document.querySelector('[data-board]').dataset.events >= {first + 12}",
            timeout=60_000,
        )
        shot(page, "live")
        # Public view: the slow bot's hand is all backs except cards everyone knows.
        backs = page.locator("[data-hand] [data-card=back]").count()
        assert backs > 0
        assert page.locator("[data-log] div").count() >= 5
        log = page.inner_text("[data-log]")
        assert not re.search(r"\b[6-9TJQKA][SCDH]\b", log), log  # symbols, as the board shows
        assert re.search("[♠♣♦♥]", log), log
        _shows_the_seat_to_act_and_its_clock(page)
        _paced_then_caught_up(page)
        page.select_option("select[data-action=pace]", "0")  # as they come, to the end
        page.wait_for_selector("[data-status=ended]", timeout=120_000)
        assert page.locator("[data-to-act], [data-clock]").count() == 0  # nobody acts now
        assert page.locator("a[href^='/matches/']").count() >= 1
        assert talon_before is not None
        _names_the_winner(arena, page, match_id)
        assert page.errors == [], page.errors


def _shows_the_seat_to_act_and_its_clock(page) -> None:
    """The seat to act carries a "to act" tag and its move clock, which counts down (from the
    5 s move clock), and its bank; every seat shows its bank; the standing names who is
    winning by the penalties."""
    page.select_option("select[data-action=pace]", "0.5")  # each state shown for 2 s
    for _ in range(5):
        clock = page.wait_for_selector(
            "section.seat:has([data-to-act]) [data-clock]", timeout=60_000
        )
        left = int(clock.get_attribute("data-left"))
        shown = re.fullmatch(r"clock \d+\.\d s left · bank (\d+\.\d) s", clock.inner_text())
        assert 0 < left <= 5000 and shown and 0 <= float(shown[1]) <= 10.0, clock.inner_text()
        page.wait_for_function(
            "([c, l]) => !c.isConnected || +c.dataset.left < l - 300", arg=[clock, left]
        )
        if clock.evaluate("c => c.isConnected"):
            break  # it counted down while it was shown
    else:
        pytest.fail("the clock never counted down while shown")
    acting = page.locator("section.seat:has([data-to-act])")
    assert 1 <= acting.count() <= 2
    for facts in page.locator("[data-facts]").all_inner_texts():  # every seat's bank (10 s)
        assert re.search(r" · bank (10|\d)\.\d s$", facts), facts
    standing = page.inner_text("[data-standing] div:last-child")
    assert re.match(r"(.+ is winning|Level): penalties ", standing), standing
    assert "(reaching 12 loses)" in standing


def _paced_then_caught_up(page) -> None:
    """Events come faster than the chosen pace shows them: they wait; "catch up" shows them."""
    page.wait_for_function(
        "() => +document.querySelector('[data-queued]').dataset.queued >= 3", timeout=60_000
    )
    queued, received, shown = page.evaluate(
        """() => {
          document.querySelector("[data-action='catch up']").click();
          const q = document.querySelector("[data-queued]").dataset;
          return [+q.queued, +q.received, +document.querySelector("[data-board]").dataset.events];
        }"""
    )
    assert queued == 0 and shown == received + 1, (queued, received, shown)  # + the snapshot


def _names_the_winner(arena: Arena, page, match_id: str) -> None:
    replay = read_replay(arena.replay_dir / f"{match_id}.kzr")
    r = replay.result
    winner = " + ".join(s.name for s in replay.seats if s.side == r.winner_side)
    assert page.get_attribute("[data-result]", "data-winner") == ("" if r.draw else winner)
    assert page.inner_text("[data-result]").startswith(f"{winner} wins: ")
    assert page.get_attribute("[data-live-dot]", "data-live-dot") == "off"
    assert page.inner_text("h1").startswith("Ended: ")
