"""A ladder of six house bots, each a real process over gRPC, against a real referee process
and a real store (SQLite and PostgreSQL): at least 100 rated matches, greedy above random."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from kozel.ladder.store import Store
from kozel.server.replay.file import read_replay
from kozel.server.replay.verify import verify_replay
from tests.server.conftest import start_referee_process, stop_referee_process

LADDER = {
    "ladders": [
        {
            "name": "classic-2p",
            "players": 2,
            "ruleset": {"preset": "classic"},
            "time_control": {"move_ms": 2000, "bank_ms": 5000},
        }
    ]
}
BOTS = [
    ("greedy", "greedy-a"),
    ("greedy", "greedy-b"),
    ("greedy", "greedy-c"),
    ("random", "random-a"),
    ("random", "random-b"),
    ("random", "random-c"),
]

pytestmark = pytest.mark.timeout(600)


def test_six_bots_play_a_rated_ladder(store_url: str, tmp_path: Path) -> None:
    ladders = tmp_path / "ladders.yaml"
    ladders.write_text(yaml.safe_dump(LADDER))
    store = Store(store_url)
    store.migrate()
    tokens = {name: store.register_bot(name) for _, name in BOTS}
    ref = start_referee_process(tmp_path / "replays", "--ladders", str(ladders), "--db", store_url)
    bots = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kozel.cli.main",
                "bot",
                kind,
                "--server",
                ref.address,
                "--ladder",
                "classic-2p",
                "--token",
                tokens[name],
                "--name",
                name,
                "--max-matches",
                "2",
                "--quiet",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for kind, name in BOTS
    ]
    try:
        deadline = time.monotonic() + 400
        while store.match_counts("classic-2p").get("finished", 0) < 100:
            assert time.monotonic() < deadline, store.match_counts()
            assert ref.proc.poll() is None, "the referee died"
            time.sleep(1)
        _check_ladder_service(ref.address, store)
    finally:
        for bot in bots:
            bot.terminate()
        for bot in bots:
            bot.wait(timeout=30)
        stop_referee_process(ref)
    standings = store.standings("classic-2p")
    names = [s.name for s in standings]
    assert sorted(names) == sorted(name for _, name in BOTS)
    assert all(n.startswith("greedy") for n in names[:3]), standings
    assert store.check_consistency() == []
    assert sum(s.matches for s in standings) == 2 * store.match_counts()["finished"]
    assert "running" not in store.match_counts()  # stopped cleanly: nothing left half-done
    for row in store.matches(ladder="classic-2p", limit=5):
        if row.status == "finished":
            assert row.replay_path is not None
            assert verify_replay(read_replay(row.replay_path)) == []
    store.close()


def test_a_bad_token_is_refused_and_counted(store_url: str, tmp_path: Path) -> None:
    import asyncio

    from kozel.v1 import referee_pb2 as rpb
    from tests.server.rawbot import RawBot

    ladders = tmp_path / "ladders.yaml"
    ladders.write_text(yaml.safe_dump(LADDER))
    Store(store_url).migrate()
    ref = start_referee_process(tmp_path / "replays", "--ladders", str(ladders), "--db", store_url)
    try:

        async def attempt(token: str) -> tuple[RawBot, float]:
            bot = RawBot(
                ref.address,
                "intruder",
                hello=rpb.Hello(
                    protocol_version=1,
                    bot_name="intruder",
                    token=token,
                    join_ladder=rpb.JoinLadder(ladder="classic-2p"),
                ),
            )
            start = time.monotonic()
            await bot.run()
            return bot, time.monotonic() - start

        results = [asyncio.run(attempt("wrong")) for _ in range(5)]
        missing = asyncio.run(attempt(""))[0]
        nowhere = RawBot(
            ref.address,
            "x",
            hello=rpb.Hello(
                protocol_version=1,
                bot_name="x",
                token="t",
                join_ladder=rpb.JoinLadder(ladder="no-such-ladder"),
            ),
        )
        asyncio.run(nowhere.run())
    finally:
        stop_referee_process(ref)
    for bot, _ in results:
        assert bot.status is not None
        assert bot.status.name == "UNAUTHENTICATED" and "token" in bot.details
    assert results[-1][1] > results[0][1] + 0.3  # repeated failures are slowed down
    assert missing.status is not None and missing.status.name == "UNAUTHENTICATED"
    assert nowhere.status is not None
    assert nowhere.status.name == "NOT_FOUND" and "classic-2p" in nowhere.details


def _check_ladder_service(address: str, store: Store) -> None:
    """The LadderService RPCs agree with the store, and a replay streams back whole."""
    import grpc

    from kozel.server.replay.file import decode_replay
    from kozel.v1 import ladder_pb2 as lpb
    from kozel.v1 import ladder_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        stub = ladder_pb2_grpc.LadderServiceStub(channel)
        standings = stub.GetStandings(lpb.GetStandingsRequest(ladder="classic-2p"))
        assert {s.bot for s in standings.standings} == {name for _, name in BOTS}
        ords = [s.ordinal for s in standings.standings]
        assert ords == sorted(ords, reverse=True)
        listed = stub.ListMatches(lpb.ListMatchesRequest(bot="greedy-a", limit=5))
        assert 0 < len(listed.matches) <= 5
        done = next(
            m
            for m in stub.ListMatches(lpb.ListMatchesRequest(ladder="classic-2p", limit=50)).matches
            if m.status == "finished"
        )
        data = b"".join(
            c.chunk for c in stub.DownloadReplay(lpb.DownloadReplayRequest(replay_id=done.match_id))
        )
        replay = decode_replay(data)
        assert replay.match_id == done.match_id and verify_replay(replay) == []
        with pytest.raises(grpc.RpcError) as missing:
            stub.GetStandings(lpb.GetStandingsRequest(ladder="nope"))
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
