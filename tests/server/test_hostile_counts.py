"""A sealed declaration window must not show through a count, over real sockets.

Only seats holding a combination are asked in a declaration window; a timeout or a refused
answer there must not move any public count (GetMatch, a new spectator's snapshot, events)
before the deal ends, when DealEnd shows every hand and so who was asked.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator

import grpc
import pytest

from kozel.core.convert import dict_to_struct
from kozel.engine.actions import Decision
from kozel.engine.match import Match
from kozel.engine.rules import Ruleset
from kozel.v1 import game_pb2 as pb
from kozel.v1 import match_pb2 as mpb
from kozel.v1 import match_pb2_grpc, referee_pb2_grpc
from kozel.v1 import referee_pb2 as rpb

from .conftest import RefereeProcess, start_referee_process, stop_referee_process
from .rawbot import RawBot, reply, table_hello, wait_table

OPTIONS = {"fixed_deals": 2}
# The window times out after this (the bank is spent then, so the next move has move_ms).
CLOCK = pb.TimeControl(move_ms=2500, bank_ms=1, max_strikes=3, max_retries=1)


@pytest.fixture(scope="module")
def referee(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefereeProcess]:
    ref = start_referee_process(tmp_path_factory.mktemp("replays"))
    yield ref
    stop_referee_process(ref)


def window_seed() -> bytes:
    """A seed whose first deal opens with a window in which only seat 1 is asked."""
    rules = Ruleset.preset("classic", OPTIONS)
    for i in range(100_000):
        seed = hashlib.sha256(b"%d" % i).digest()
        deal = Match(rules, 2, seed).deal
        if deal.decision is Decision.DECLARE and tuple(deal.to_act) == (1,):
            return seed
    raise AssertionError("no such seed")


async def observe(
    address: str, match_id: str
) -> tuple[mpb.GetMatchResponse, mpb.SpectatorSnapshot]:
    """What anyone can ask: the match's details and a new spectator's snapshot."""
    async with grpc.aio.insecure_channel(address) as channel:
        stub = match_pb2_grpc.MatchServiceStub(channel)
        details = await stub.GetMatch(mpb.GetMatchRequest(match_id=match_id), timeout=10)
        call = stub.WatchMatch(mpb.WatchMatchRequest(match_id=match_id), timeout=10)
        first = await call.read()
        call.cancel()
        return details, first.event.snapshot


async def spectate(address: str, match_id: str, events: list[mpb.SpectatorEvent]) -> None:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = match_pb2_grpc.MatchServiceStub(channel)
        try:
            async for resp in stub.WatchMatch(
                mpb.WatchMatchRequest(match_id=match_id), timeout=120
            ):
                events.append(resp.event)  # noqa: PERF401 - each kept as it comes
        except grpc.aio.AioRpcError:
            pass


def counts(details: mpb.GetMatchResponse, snapshot: mpb.SpectatorSnapshot) -> dict:
    return {
        "timeouts": list(details.result.timeouts),
        "rejections": list(details.result.rejections),
        "seat_timeouts": [s.timeouts for s in details.seats],
        "snapshot_timeouts": list(snapshot.timeouts),
    }


def test_a_sealed_window_does_not_show_through_counts(referee: RefereeProcess) -> None:
    address = referee.address

    async def scenario():
        ruleset = pb.Ruleset(preset="classic")
        ruleset.options.CopyFrom(dict_to_struct(OPTIONS))
        async with grpc.aio.insecure_channel(address) as channel:
            table = (
                await referee_pb2_grpc.RefereeServiceStub(channel).CreateTable(
                    rpb.CreateTableRequest(
                        ruleset=ruleset,
                        players=2,
                        house_bots=["random"],
                        seed=window_seed(),
                        time_control=CLOCK,
                    )
                )
            ).table_id
        seen: dict[str, dict] = {}
        events: list[mpb.SpectatorEvent] = []
        tasks: list[asyncio.Task] = []
        window: set[int] = set()

        async def answer(bot: RawBot, req: rpb.DecisionRequest) -> list[rpb.ActionReply] | None:
            if not tasks:  # the first request: a spectator watches from now on
                tasks.append(asyncio.create_task(spectate(address, req.match_id, events)))
            if req.kind == pb.DECISION_KIND_DECLARE and not seen:
                if req.request_id in window:
                    return None  # refused once, then silent: it times out in the window
                window.add(req.request_id)
                return [reply(req, 99)]  # out of range: refused
            if "during" not in seen:  # the window timed out; its deal goes on
                seen["during"] = counts(*await observe(address, req.match_id))
            elif bot.of("deal_end") and "after" not in seen:
                seen["after"] = counts(*await observe(address, req.match_id))
            return [reply(req, bot.rng.randrange(len(req.legal_actions)))]

        bot = RawBot(address, "asked", hello=table_hello("asked", table), answer=answer)
        await asyncio.wait_for(bot.run(), 120)
        result = await wait_table(address, table)
        await asyncio.wait_for(asyncio.gather(*tasks), 30)
        return bot, seen, events, result

    bot, seen, events, result = asyncio.run(scenario())
    assert bot.seat == 1
    own = [e.notice for e in bot.of("event") if e.WhichOneof("kind") == "notice"]
    assert own and own[0].kind == rpb.NOTICE_KIND_TIMEOUT  # it did time out in the window
    assert [r.code for r in bot.of("rejection")][:1] == [pb.ERROR_CODE_MALFORMED]
    zero = {
        "timeouts": [0, 0],
        "rejections": [0, 0],
        "seat_timeouts": [0, 0],
        "snapshot_timeouts": [0, 0],
    }
    assert seen["during"] == zero, seen
    # Spectators heard of nothing before the deal ended.
    kinds = [e.WhichOneof("kind") for e in events]
    first_end = kinds.index("deal_end")
    assert not [
        e
        for e in events[:first_end]
        if e.WhichOneof("kind") == "event" and e.event.WhichOneof("kind") == "notice"
    ]
    # Once the deal is over (every hand shown), the counts are public.
    assert seen["after"] == {
        "timeouts": [0, 1],
        "rejections": [0, 1],
        "seat_timeouts": [0, 1],
        "snapshot_timeouts": [0, 1],
    }, seen
    assert list(result.result.timeouts) == [0, 1] and list(result.result.rejections) == [0, 1]
    assert not result.result.forfeits


@pytest.mark.parametrize(
    ("mode", "reason"),
    [("illegal", pb.FORFEIT_REASON_ILLEGAL_ACTIONS), ("silent", pb.FORFEIT_REASON_STRIKES)],
)
def test_a_forfeit_earned_in_a_window_waits_for_the_deal_end(
    referee: RefereeProcess, mode: str, reason: int
) -> None:
    """Retries spent (or the last strike) inside the window: the seat passes, plays the deal
    out, and forfeits only once the deal has ended."""
    from kozel.server.replay.file import read_replay
    from kozel.server.replay.verify import verify_replay

    address = referee.address
    # Silent: one strike allowed; the window's timeout and one in public make two, which
    # counts only once the deal is over.
    clock = pb.TimeControl(
        move_ms=1500, bank_ms=1, max_strikes=1 if mode == "silent" else 3, max_retries=1
    )

    async def scenario():
        ruleset = pb.Ruleset(preset="classic")
        ruleset.options.CopyFrom(dict_to_struct(OPTIONS))
        async with grpc.aio.insecure_channel(address) as channel:
            table = (
                await referee_pb2_grpc.RefereeServiceStub(channel).CreateTable(
                    rpb.CreateTableRequest(
                        ruleset=ruleset,
                        players=2,
                        house_bots=["random"],
                        seed=window_seed(),
                        time_control=clock,
                    )
                )
            ).table_id
        during: list[dict] = []
        state = {"window": True}

        async def answer(bot: RawBot, req: rpb.DecisionRequest) -> list[rpb.ActionReply] | None:
            if state["window"] and req.kind == pb.DECISION_KIND_DECLARE:
                if mode == "silent":
                    state["window"] = False
                    return None
                if len(bot.of("rejection")) >= 1:
                    state["window"] = False
                return [reply(req, 99)]
            if not during:
                details, snapshot = await observe(address, req.match_id)
                during.append(
                    {**counts(details, snapshot), "forfeits": list(details.result.forfeits)}
                )
                if mode == "silent":
                    return None  # a public timeout: one strike, within the limit
            return [reply(req, bot.rng.randrange(len(req.legal_actions)))]

        bot = RawBot(address, "asked", hello=table_hello("asked", table), answer=answer)
        await asyncio.wait_for(bot.run(), 120)
        return bot, during, await wait_table(address, table)

    bot, during, result = asyncio.run(scenario())
    assert during[0]["forfeits"] == [] and during[0]["timeouts"] == [0, 0]
    assert during[0]["rejections"] == [0, 0], during
    res = result.result
    assert [(f.seat, f.reason, f.deal_index) for f in res.forfeits] == [(1, reason, 1)], res
    assert res.reason == pb.MATCH_END_REASON_FORFEIT and res.deals >= 1
    assert list(res.rejections) == ([0, 2] if mode == "illegal" else [0, 0])
    assert list(res.timeouts) == ([0, 0] if mode == "illegal" else [0, 2])
    assert verify_replay(read_replay(result.replay_path)) == []
    deal_ends = bot.of("deal_end")
    assert not deal_ends[0].voided and deal_ends[-1].voided  # deal 0 played out, then voided
