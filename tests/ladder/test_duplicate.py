"""Duplicate ladders: every match is followed by its twin with the same seed and the seats
rotated; the first half's seed and replay stay secret until the twin has been played."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import ClassVar

import grpc
import pytest

from kozel.ladder.config import ConfigError, parse_ladders
from kozel.ladder.store import Store, default_url
from kozel.sdk import play
from kozel.sdk.house import RandomBot
from kozel.server.replay.file import decode_replay
from kozel.server.replay.verify import verify_replay
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc
from tests.server.served import base_config, serve

LADDER = {
    "name": "dup",
    "players": 2,
    "ruleset": {"preset": "classic"},
    "duplicate": True,
    "time_control": {"move_ms": 2000, "bank_ms": 4000},
}


class Recorder(RandomBot):
    """A slowish random bot that records every MatchEnd (class-wide, in arrival order)."""

    ends: ClassVar[list[tuple[str, rpb.MatchEnd]]] = []
    decks: ClassVar[dict[str, list[int]]] = {}  # match id -> deck sizes shown in DealEnds

    def __init__(self, name: str = "") -> None:
        super().__init__()
        self.name = name

    def choose(self, request: rpb.DecisionRequest) -> int:
        time.sleep(0.01)
        return super().choose(request)

    def on_match_start(self, msg: rpb.MatchStart) -> None:
        self.name = msg.seating[msg.seat].name

    def on_deal_end(self, msg: rpb.DealEnd) -> None:
        Recorder.decks.setdefault(msg.match_id, []).append(len(msg.deck))

    def on_match_end(self, msg: rpb.MatchEnd) -> None:
        Recorder.ends.append((self.name, msg))


async def _scenario(address: str, tokens: dict[str, str]) -> str | None:
    tasks = [
        asyncio.create_task(
            play(
                Recorder,
                address,
                name=name,
                join_ladder="dup",
                token=token,
                matches=2,
                reconnect=False,
            )
        )
        for name, token in tokens.items()
    ]
    refused: str | None = None
    async with grpc.aio.insecure_channel(address) as channel:
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        while not Recorder.ends:
            await asyncio.sleep(0.005)
        first = Recorder.ends[0][1]
        try:  # the twin is being played now: the first half's replay is sealed
            await stub.GetReplay(rpb.GetReplayRequest(replay_id=first.replay_id), timeout=5)
        except grpc.aio.AioRpcError as exc:
            refused = f"{exc.code().name}: {exc.details()}"
        await asyncio.gather(*tasks)
    return refused


def test_twins_share_the_seed_with_seats_rotated(tmp_path: Path) -> None:
    store = Store(default_url(tmp_path / "data"))
    store.migrate()
    tokens = {name: store.register_bot(name) for name in ("north", "south")}
    ref = serve(base_config(tmp_path, ladders=[LADDER]), tmp_path)
    Recorder.ends, Recorder.decks = [], {}
    try:
        refused = asyncio.run(_scenario(ref.addr(), tokens))
        with grpc.insecure_channel(ref.addr()) as channel:
            stub = referee_pb2_grpc.RefereeServiceStub(channel)
            replays = {}
            for _, end in Recorder.ends:
                data = stub.GetReplay(rpb.GetReplayRequest(replay_id=end.replay_id)).replay_gz
                replays[end.replay_id] = decode_replay(data)
    finally:
        assert ref.stop() == 0
    assert refused is not None and refused.startswith("FAILED_PRECONDITION"), refused
    assert "sealed" in refused
    first_ids = [e.match_id for _, e in Recorder.ends[:2]]
    twin_ids = [e.match_id for _, e in Recorder.ends[2:]]
    assert len(set(first_ids)) == 1 and len(set(twin_ids)) == 1 and first_ids != twin_ids
    assert all(e.seed == b"" for _, e in Recorder.ends[:2])  # withheld in the first half
    assert set(Recorder.decks[first_ids[0]]) == {0}  # so are the deck orders
    assert set(Recorder.decks[twin_ids[0]]) == {36}
    assert all(len(e.seed) == 32 for _, e in Recorder.ends[2:])  # the twin's
    first, twin = replays[first_ids[0]], replays[twin_ids[0]]
    assert first.seed == twin.seed and len(first.seed) == 32
    names = lambda r: [s.name for s in r.seats]  # noqa: E731
    assert names(twin) == list(reversed(names(first)))
    assert first.deals[0].deck == twin.deals[0].deck  # the same cards, other hands
    assert verify_replay(first) == [] and verify_replay(twin) == []
    assert store.match_counts("dup") == {"finished": 2}


def test_duplicate_needs_a_two_sided_game() -> None:
    with pytest.raises(ConfigError, match="two-sided"):
        parse_ladders({"ladders": [{**LADDER, "players": 3}]})
    assert parse_ladders({"ladders": [{**LADDER, "players": 4}]})[0].duplicate  # teams
