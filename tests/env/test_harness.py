"""The in-process harness (kozel.env.harness): bots get the referee's own messages, byte for
byte, and play whole matches of every preset through the referee's rules."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kozel.core.clock import Clock
from kozel.env.harness import make_bot, play_match, wants_events
from kozel.sdk import GreedyBot, RandomBot, play
from kozel.sdk.bot import Bot
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc
from tests.env.states import CONFIGS
from tests.server.conftest import start_referee_process, stop_referee_process

CLOCK = Clock(move_ms=20_000, bank_ms=60_000, max_strikes=2, max_retries=2, grace_ms=5000)


class Recorder(GreedyBot):
    """GreedyBot, keeping the bytes of every DealStart, Event, request and DealEnd it is
    sent."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, bytes]] = []
        self.match_id = ""

    def on_match_start(self, msg: rpb.MatchStart) -> None:
        super().on_match_start(msg)
        self.match_id = msg.match_id

    def on_deal_start(self, msg: rpb.DealStart) -> None:
        self.seen.append(("deal_start", msg.SerializeToString()))

    def on_deal_end(self, msg: rpb.DealEnd) -> None:
        self.seen.append(("deal_end", msg.SerializeToString()))

    def on_event(self, msg: rpb.Event) -> None:
        self.seen.append(("event", msg.SerializeToString()))

    def choose(self, request: rpb.DecisionRequest) -> int:
        self.seen.append(("decision", request.SerializeToString()))
        return super().choose(request)


async def _over_grpc(address: str, preset: str, players: int, seed: bytes) -> list[Recorder]:
    import grpc

    async with grpc.aio.insecure_channel(address) as channel:
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        table = await stub.CreateTable(
            rpb.CreateTableRequest(
                ruleset=pb.Ruleset(preset=preset),
                players=players,
                time_control=CLOCK.to_pb(),
                seed=seed,
            )
        )
    bots = [Recorder() for _ in range(players)]
    factories = iter(bots)
    await asyncio.wait_for(
        asyncio.gather(
            *(
                play(lambda: next(factories), address, name=f"rec{i}", join_table=table.table_id)
                for i in range(players)
            )
        ),
        120,
    )
    return bots


@pytest.mark.parametrize(("preset", "players"), [("classic", 2), ("courtyard", 4), ("money", 3)])
def test_bots_see_the_referees_bytes(tmp_path: Path, preset: str, players: int) -> None:
    """The same seed at a real referee (a ``kozel serve`` process, real gRPC) and in the
    harness: every seat is sent the same DealStarts, events, requests and DealEnds, byte for
    byte."""
    seed = bytes(range(32))
    ref = start_referee_process(tmp_path / "replays")
    try:
        remote = asyncio.run(_over_grpc(ref.address, preset, players, seed))
    finally:
        stop_referee_process(ref)
    # Seats were assigned by the referee; the harness seats bot i at seat i, so find each
    # remote bot's seat from its own first request.
    seats = {}
    for bot in remote:
        first = rpb.DecisionRequest.FromString(next(b for k, b in bot.seen if k == "decision"))
        seats[first.observation.seat] = bot
    local = [Recorder() for _ in range(players)]
    played = play_match(
        local,
        rules=preset,
        seed=seed,
        match_id=remote[0].match_id,
        clock=CLOCK,
    )
    assert played.result.reason != pb.MATCH_END_REASON_UNSPECIFIED
    for seat, bot in enumerate(local):
        assert bot.seen == seats[seat].seen, f"seat {seat} saw other bytes"
        assert sum(k == "decision" for k, _ in bot.seen) > 10
        assert sum(k == "event" for k, _ in bot.seen) > 10


@pytest.mark.parametrize(("preset", "players"), CONFIGS)
def test_house_bots_play_every_preset(preset: str, players: int) -> None:
    played = play_match(["greedy"] + ["random"] * (players - 1), rules=preset, seed=7)
    assert played.result.reason in (pb.MATCH_END_REASON_LIMIT, pb.MATCH_END_REASON_FIXED_DEALS)
    assert not played.result.forfeits and sum(played.result.rejections) == 0
    assert played.match.over and played.decisions > 0
    again = play_match(["greedy"] + ["random"] * (players - 1), rules=preset, seed=7)
    assert again.result == played.result  # seeded bots and deals: the match repeats


class Stubborn(Bot):
    """Answers an index out of range: refused, retried, then forfeited by the referee's rules."""

    def __init__(self) -> None:
        self.rejections: list[rpb.Rejection] = []

    def on_rejection(self, msg: rpb.Rejection) -> None:
        self.rejections.append(msg)

    def choose(self, request: rpb.DecisionRequest) -> int:
        return 99


def test_bad_answers_meet_the_referees_rules() -> None:
    stubborn = Stubborn()
    played = play_match([stubborn, "random"], seed=1)
    assert played.result.reason == pb.MATCH_END_REASON_FORFEIT
    assert [f.reason for f in played.result.forfeits] == [pb.FORFEIT_REASON_ILLEGAL_ACTIONS]
    assert [r.retry_allowed for r in stubborn.rejections] == [True, True, False]
    assert played.result.rejections[0] == 3


def test_bots_are_made_and_seeded() -> None:
    assert isinstance(make_bot("greedy"), GreedyBot)
    a, b = make_bot(RandomBot(), 5), make_bot(RandomBot, 5)
    assert isinstance(a, RandomBot) and isinstance(b, RandomBot)
    assert a.rng.random() == b.rng.random()
    with pytest.raises(ValueError, match="unknown house bot 'nope'"):
        make_bot("nope")
    assert not wants_events(RandomBot())
    assert wants_events(type("Watcher", (RandomBot,), {"on_event": lambda self, m: None})())


def test_options_reach_the_table() -> None:
    from kozel.engine.rules import Ruleset

    rules = Ruleset.preset("classic", {"limit": 4})
    played = play_match(["random", "random"], rules=rules, seed=3)
    assert max(played.result.penalty_totals) >= 4
