"""Duplicate ladders: every match is followed by its twins with the same seed and the seats
rotated (two sides: both seatings; three players: the three rotations); the group's seed and
replays stay secret until its last match has been played."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import ClassVar

import grpc
import pytest

from kozel.ladder.config import parse_ladders
from kozel.ladder.duplicates import rotate, rotations
from kozel.ladder.store import Store, default_url
from kozel.sdk import play
from kozel.sdk.house import RandomBot
from kozel.server.replay.archive import FolderArchive
from kozel.server.replay.file import decode_replay
from kozel.server.replay.verify import verify_replay
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc
from kozel.web.sources import StandaloneSources
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


async def _scenario(address: str, tokens: dict[str, str], group: int) -> str | None:
    tasks = [
        asyncio.create_task(
            play(
                Recorder,
                address,
                name=name,
                join_ladder="dup",
                token=token,
                matches=group,
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
        try:  # the next match of the group is being played: the first's replay is sealed
            await stub.GetReplay(rpb.GetReplayRequest(replay_id=first.replay_id), timeout=5)
        except grpc.aio.AioRpcError as exc:
            refused = f"{exc.code().name}: {exc.details()}"
        await asyncio.gather(*tasks)
    return refused


def _play_group(tmp_path: Path, players: int, group: int) -> tuple[Store, str | None, dict]:
    """Play one duplicate group of ``group`` matches at ``players`` seats; the store, the
    refusal of the first match's replay while the group was under way, and the replays."""
    store = Store(default_url(tmp_path / "data"))
    store.migrate()
    tokens = {name: store.register_bot(name) for name in NAMES[:players]}
    ref = serve(base_config(tmp_path, ladders=[{**LADDER, "players": players}]), tmp_path)
    Recorder.ends, Recorder.decks = [], {}
    try:
        refused = asyncio.run(_scenario(ref.addr(), tokens, group))
        with grpc.insecure_channel(ref.addr()) as channel:
            stub = referee_pb2_grpc.RefereeServiceStub(channel)
            replays = {}
            for _, end in Recorder.ends:
                data = stub.GetReplay(rpb.GetReplayRequest(replay_id=end.replay_id)).replay_gz
                replays[end.match_id] = decode_replay(data)
    finally:
        assert ref.stop() == 0
    return store, refused, replays


NAMES = ("north", "east", "south", "west")


@pytest.mark.parametrize(("players", "group"), [(2, 2), (3, 3), (4, 2)])
def test_a_group_shares_the_seed_with_the_seats_rotated(
    tmp_path: Path, players: int, group: int
) -> None:
    store, refused, replays = _play_group(tmp_path, players, group)
    assert refused is not None and refused.startswith("FAILED_PRECONDITION"), refused
    assert "sealed" in refused
    order = list(dict.fromkeys(e.match_id for _, e in Recorder.ends))  # in the order played
    assert len(order) == group
    ends = {m: [e for _, e in Recorder.ends if e.match_id == m] for m in order}
    for m in order[:-1]:  # withheld until the group's last match: the seed, the decks
        assert all(e.seed == b"" for e in ends[m]) and set(Recorder.decks[m]) == {0}
    assert all(len(e.seed) == 32 for e in ends[order[-1]])
    assert set(Recorder.decks[order[-1]]) == {36}
    first = replays[order[0]]
    names = [s.name for s in sorted(first.seats, key=lambda s: s.seat)]
    for r, m in enumerate(order):
        replay = replays[m]
        assert replay.seed == first.seed and len(first.seed) == 32
        assert [s.name for s in sorted(replay.seats, key=lambda s: s.seat)] == rotate(names, r)
        assert replay.deals[0].deck == first.deals[0].deck  # the same cards, other hands
        assert verify_replay(replay) == []
    # Over the group every bot held every side's cards once.
    sides = {n: {s.side for m in order for s in replays[m].seats if s.name == n} for n in names}
    assert all(len(v) == group for v in sides.values()), sides
    rows = {r.id: r for r in store.matches(ladder="dup")}
    assert {m: (rows[m].dup_group, rows[m].dup_rotation) for m in order} == {
        m: (order[0], r) for r, m in enumerate(order)
    }
    assert store.match_counts("dup") == {"finished": group}
    _standalone_web_seals(tmp_path, store, order)


def _standalone_web_seals(tmp_path: Path, store: Store, order: list[str]) -> None:
    """A web server that only has the store and the replay folder judges a group's first
    match public once the group's last match (which reveals the seed) is on record, and not
    on a middle match (sealed too) alone."""
    folder = tmp_path / "data" / "replays"
    web = StandaloneSources(store, FolderArchive(folder))
    assert not web._sealed_here(order[0])
    if len(order) > 2:
        last = folder / f"{order[-1]}.kzr"
        last.rename(last.with_suffix(".away"))
        assert StandaloneSources(store, FolderArchive(folder))._sealed_here(order[0])


def test_duplicate_at_every_table_size() -> None:
    for players in (2, 3, 4):
        assert parse_ladders({"ladders": [{**LADDER, "players": players}]})[0].duplicate
    rules = parse_ladders({"ladders": [LADDER]})[0].rules()
    assert [rotations(rules, n) for n in (2, 3, 4, 5)] == [2, 3, 2, 5]  # four: teams
    assert rotate(["a", "b", "c"], 1) == ["c", "a", "b"] and rotate(["a", "b", "c"], -1) == [
        "b",
        "c",
        "a",
    ]
