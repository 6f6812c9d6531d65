"""Hostile text: names and ids are checked on input over real sockets, and whatever reaches a
terminal through the CLI (``kozel replay show``, ``kozel watch``) has no control character."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import grpc
import pytest

from kozel.core.steps import StepMeta
from kozel.engine.match import Match
from kozel.engine.rules import Ruleset
from kozel.server.replay.build import build_replay
from kozel.server.replay.file import write_replay
from kozel.server.text import escape
from kozel.v1 import game_pb2 as pb
from kozel.v1 import match_pb2 as mpb
from kozel.v1 import match_pb2_grpc, referee_pb2_grpc
from kozel.v1 import referee_pb2 as rpb

from .conftest import RefereeProcess
from .rawbot import RawBot, create_table, table_hello

# Colours, a terminal title change, a bell, a carriage return that forges a line, NUL, a
# right-to-left override, a newline that forges another line.
HOSTILE = [
    "\x1b[31mred\x1b[0m",
    "\x1b]0;owned\x07",
    "ok\rFAKE-NAME-LINE",
    "nul\x00",
    "abc\u202edcba",
    "two\nFAKE-NAME-LINE",
    "del\x7f",
    "iso\u2066late",
]


def assert_clean(out: str) -> None:
    """Nothing but printable characters and line breaks."""
    bad = sorted({c for c in out if not (c.isprintable() or c == "\n")})
    assert not bad, f"unescaped characters reach the terminal: {bad!r}"
    assert "FAKE-NAME-LINE" not in {line.strip() for line in out.splitlines()}


def test_escape_renders_control_characters_visibly() -> None:
    assert escape("a\x1b[31m") == "a\\x1b[31m"
    assert escape("x\u202ey") == "x\\u202ey" and escape("\n") == "\\x0a"
    assert escape("Козёл-1 bot") == "Козёл-1 bot"
    for text in HOSTILE:
        assert escape(text).isprintable()


# -- input -------------------------------------------------------------------------------------


def test_hostile_names_and_ids_are_refused(referee: RefereeProcess) -> None:
    async def scenario():
        table = await create_table(referee.address, "classic", 2)
        bots = [
            RawBot(referee.address, name, hello=table_hello(name, table))
            for name in HOSTILE + [" ", "x" * 65]
        ]
        bad_table = RawBot(referee.address, "fine", hello=table_hello("fine", "t\x1b"))
        await asyncio.gather(*(b.run() for b in [*bots, bad_table]))
        statuses = {}
        async with grpc.aio.insecure_channel(referee.address) as channel:
            stub = referee_pb2_grpc.RefereeServiceStub(channel)
            mstub = match_pb2_grpc.MatchServiceStub(channel)
            for key, call in {
                "long_table": stub.CreateTable(
                    rpb.CreateTableRequest(
                        table_id="t" * 60_000, ruleset=pb.Ruleset(preset="classic"), players=2
                    )
                ),
                "escape_table": stub.CreateTable(
                    rpb.CreateTableRequest(
                        table_id="a\x1b[2J", ruleset=pb.Ruleset(preset="classic"), players=2
                    )
                ),
                "wait_table": stub.WaitTable(rpb.WaitTableRequest(table_id="x\n"), timeout=10),
                "replay_newline": stub.GetReplay(rpb.GetReplayRequest(replay_id="abcdef12\n")),
                "match_newline": mstub.GetMatch(mpb.GetMatchRequest(match_id="abcdef12\n")),
            }.items():
                try:
                    await call
                    statuses[key] = (grpc.StatusCode.OK, "")
                except grpc.aio.AioRpcError as exc:
                    statuses[key] = (exc.code(), exc.details() or "")
        return bots, bad_table, statuses

    bots, bad_table, statuses = asyncio.run(scenario())
    for bot in bots:
        assert bot.status == grpc.StatusCode.INVALID_ARGUMENT, (bot.name, bot.status)
        assert "bot_name" in bot.details and not bot.of("welcome")
        assert bot.details.isprintable()
    assert bad_table.status == grpc.StatusCode.INVALID_ARGUMENT and "table_id" in bad_table.details
    for key, (code, details) in statuses.items():
        assert code == grpc.StatusCode.INVALID_ARGUMENT, (key, code, details)
        assert details.isprintable() and len(details) < 300, (key, details)


# -- output ------------------------------------------------------------------------------------


def hostile_replay(tmp_path: Path) -> Path:
    """A replay file (files come from anywhere) full of hostile names, ids and card codes."""
    rules = Ruleset.preset("classic", {"fixed_deals": 1})
    match = Match(rules, 2, b"\x01" * 32)
    rng = random.Random(1)
    while not match.over:
        seat = match.deal.to_act[0]
        legal = match.deal.legal_actions(seat)
        match.apply(seat, legal[rng.randrange(len(legal))])
    replay = build_replay(
        match,
        match_id="ab" * 16,
        names=HOSTILE[:2],
        time_control=pb.TimeControl(),
        steps=[[StepMeta(i + 1, 0) for i in range(len(r.actions))] for r in match.records],
        result=pb.MatchResult(reason=pb.MATCH_END_REASON_FIXED_DEALS),
        started_at=datetime.now(UTC),
        ended_at=datetime.now(UTC),
        table_id=HOSTILE[5],
    )
    replay.engine_version = HOSTILE[4]
    step = replay.deals[0].steps[0]
    step.rejections.add(
        code=pb.ERROR_CODE_MALFORMED,
        message=HOSTILE[2],
        attempted=pb.Action(kind=pb.ACTION_KIND_LEAD, cards=HOSTILE[1:4]),
    )
    path = tmp_path / "hostile.kzr"
    write_replay(path, replay)
    return path


def kozel(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", *args], capture_output=True, text=True, timeout=60
    )


def test_replay_show_escapes_hostile_text(tmp_path: Path) -> None:
    path = hostile_replay(tmp_path)
    shown = kozel("replay", "show", str(path))
    assert shown.returncode == 0, shown.stderr
    assert_clean(shown.stdout)
    assert "\\x1b[31mred\\x1b[0m" in shown.stdout and "\\u202e" in shown.stdout
    assert "two\\x0aFAKE-NAME-LINE" in shown.stdout
    as_json = kozel("replay", "show", "--json", str(path))
    assert as_json.returncode == 0 and "\\u001b" in as_json.stdout
    assert_clean(as_json.stdout)


class HostileReferee(match_pb2_grpc.MatchServiceServicer):
    """A referee (compromised, or a test double) that streams hostile names and cards."""

    async def WatchMatch(
        self, request: mpb.WatchMatchRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[mpb.WatchMatchResponse]:
        seating = [rpb.Player(seat=i, name=n, side=i) for i, n in enumerate(HOSTILE[:2])]
        events = [
            mpb.SpectatorEvent(
                match_id=request.match_id,
                snapshot=mpb.SpectatorSnapshot(
                    match=rpb.MatchStart(
                        match_id=request.match_id,
                        players=2,
                        seating=seating,
                        table_id=HOSTILE[5],
                        ruleset=pb.Ruleset(preset=HOSTILE[3]),
                    ),
                    ladder=HOSTILE[6],
                ),
            ),
            mpb.SpectatorEvent(
                event=rpb.Event(
                    played=pb.Play(seat=0, kind=pb.ACTION_KIND_LEAD, cards=HOSTILE[1:3])
                )
            ),
            mpb.SpectatorEvent(
                deal_start=rpb.DealStart(
                    trump=HOSTILE[2], trump_card=HOSTILE[0], penalty_totals=[0, 0]
                )
            ),
            mpb.SpectatorEvent(match_end=rpb.MatchEnd(replay_id=HOSTILE[7])),
        ]
        for ev in events:
            yield mpb.WatchMatchResponse(event=ev)
        await context.abort(grpc.StatusCode.INTERNAL, HOSTILE[5])


@pytest.fixture
def hostile_referee() -> Iterator[str]:
    """A fake MatchService on a loopback port, served from a thread of its own."""
    import threading

    ready = threading.Event()
    stop: list = []
    address: list[str] = []

    def run() -> None:
        async def main() -> None:
            server = grpc.aio.server()
            match_pb2_grpc.add_MatchServiceServicer_to_server(HostileReferee(), server)
            port = server.add_insecure_port("127.0.0.1:0")
            await server.start()
            address.append(f"127.0.0.1:{port}")
            done = asyncio.Event()
            stop.append((asyncio.get_running_loop(), done))
            ready.set()
            await done.wait()
            await server.stop(0)

        asyncio.run(main())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(30)
    yield address[0]
    loop, done = stop[0]
    loop.call_soon_threadsafe(done.set)
    thread.join(30)


def test_watch_escapes_hostile_text(hostile_referee: str) -> None:
    watched = kozel("watch", "ab" * 16, "--server", hostile_referee)
    assert watched.returncode == 1  # the stream ended with an error status
    assert_clean(watched.stdout)
    assert "\\x1b]0;owned\\x07" in watched.stdout and "ok\\x0dFAKE-NAME-LINE" in watched.stdout
    assert "error: INTERNAL: two\\x0aFAKE-NAME-LINE" in watched.stdout


def test_console_logs_escape_hostile_text() -> None:
    code = (
        "import structlog; from kozel.server.logs import configure_logging; "
        "configure_logging('INFO', 'console'); "
        f"structlog.get_logger('t').info('session_opened', bot={HOSTILE[1]!r}, "
        f"table={HOSTILE[5]!r}, names={HOSTILE[:3]!r})"
    )
    for fmt in ("console", "json"):
        run = subprocess.run(
            [sys.executable, "-c", code.replace("'console'", repr(fmt))],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 0, run.stderr
        assert "session_opened" in run.stderr
        assert_clean(run.stderr)
