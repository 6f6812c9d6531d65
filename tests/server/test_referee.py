"""The referee over real gRPC on loopback, against a real ``kozel serve`` process."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Sequence

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from kozel.server.replay.file import decode_replay, read_replay
from kozel.server.replay.verify import verify_replay
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc

from .conftest import RefereeProcess
from .rawbot import RawBot, create_table, reply, table_hello, wait_table

TABLES = [
    ("classic", 2),
    ("classic", 3),
    ("classic", 4),
    ("classic-no-shokha", 2),
    ("classic-no-shokha", 3),
    ("classic-no-shokha", 4),
    ("classic-35", 3),
    ("classic-no-combos", 2),
    ("classic-no-combos", 3),
    ("classic-no-combos", 4),
    ("courtyard", 4),
    ("balkan", 2),
    ("balkan", 3),
    ("balkan", 4),
    ("money", 2),
    ("money", 3),
    ("money", 4),
    ("money", 5),
]


SLOW = pb.TimeControl(move_ms=10_000, bank_ms=30_000, max_strikes=2, max_retries=2, grace_ms=1500)


async def play_table(
    address: str,
    preset: str,
    players: int,
    bots: list[RawBot] | None = None,
    house: Sequence[str] = (),
    clock: pb.TimeControl | None = None,
) -> tuple[rpb.WaitTableResponse, list[RawBot]]:
    table = await create_table(address, preset, players, house=list(house), clock=clock)
    bots = bots or [RawBot(address, f"raw-{i}", seed=i) for i in range(players - len(house))]
    for bot in bots:
        bot.hello = bot.hello or table_hello(bot.name, table)
    runs = [asyncio.create_task(b.run()) for b in bots]
    result = await wait_table(address, table)
    await asyncio.wait_for(asyncio.gather(*runs), 30)
    return result, bots


@pytest.mark.parametrize(("preset", "players"), TABLES)
def test_full_match_over_grpc(referee: RefereeProcess, preset: str, players: int) -> None:
    # A clock no loaded CI machine runs out (the fixture's 400 ms is for the clock tests): a
    # timed-out answer would be refused as stale, and this test is about the match itself.
    result, bots = asyncio.run(play_table(referee.address, preset, players, clock=SLOW))
    assert result.result.reason in (pb.MATCH_END_REASON_LIMIT, pb.MATCH_END_REASON_FIXED_DEALS)
    assert not result.result.forfeits
    for bot in bots:
        ends = bot.of("match_end")
        assert len(ends) == 1 and ends[0].result == result.result
        start = bot.of("match_start")[0]
        assert start.players == players and sorted(p.name for p in start.seating) == sorted(
            b.name for b in bots
        )
        assert start.seating[start.seat].name == bot.name
        assert not bot.of("rejection"), bot.of("rejection")
        hands = [d.hand for d in bot.of("deal_start")]
        assert all(len(h) == 4 for h in hands[:1])
    replay = read_replay(result.replay_path)
    assert verify_replay(replay) == []
    assert replay.match_id == result.match_id and replay.players == players


def _only_own_cards(bot: RawBot, seat: int) -> None:
    for d in bot.of("decision"):
        obs = d.observation
        assert obs.seat == seat
        for other in obs.seats:
            if other.seat != seat:
                assert set(other.known_cards) <= {obs.trump_card} | _faced_up(obs)


def _faced_up(obs: pb.Observation) -> set[str]:
    cards: set[str] = set()
    for t in list(obs.tricks) + [obs.trick]:
        for p in t.plays:
            if p.kind != pb.ACTION_KIND_DISCARD:
                cards.update(p.cards)
    return cards


def test_requests_carry_only_the_seats_view(referee: RefereeProcess) -> None:
    _, bots = asyncio.run(play_table(referee.address, "classic", 3, clock=SLOW))
    for bot in bots:
        seat = bot.of("match_start")[0].seat
        _only_own_cards(bot, seat)
        for d in bot.of("decision"):
            for t in list(d.observation.tricks):
                for p in t.plays:
                    if p.kind == pb.ACTION_KIND_DISCARD and p.seat != seat:
                        assert not p.cards, "a face-down card of another seat was sent"


def test_sleeping_bot_times_out_gets_strikes_and_forfeits(referee: RefereeProcess) -> None:
    async def sleepy(bot: RawBot, req: rpb.DecisionRequest) -> None:
        return None  # never answers

    async def scenario():
        other = asyncio.create_task(play_table(referee.address, "classic", 2))
        clock = pb.TimeControl(move_ms=100, bank_ms=100, max_strikes=2)
        # No combinations, so no sealed declaration windows: a strike earned inside one is
        # held until the deal ends (tests/server/test_hostile_counts.py), which would make
        # the count at the forfeit depend on the deal. Here every strike counts at once.
        result, bots = await play_table(
            referee.address,
            "classic-no-combos",
            2,
            bots=[
                RawBot(referee.address, "sleepy", answer=sleepy),
                RawBot(referee.address, "awake", seed=3),
            ],
            clock=clock,
        )
        return result, bots, await other

    result, bots, (other_result, _) = asyncio.run(scenario())
    sleeper, awake = bots[0].seat, bots[1].seat
    assert result.result.reason == pb.MATCH_END_REASON_FORFEIT
    assert [(f.seat, f.reason) for f in result.result.forfeits] == [
        (sleeper, pb.FORFEIT_REASON_STRIKES)
    ]
    assert result.result.winner_side == awake and not result.result.draw
    assert list(result.result.timeouts)[sleeper] == 3
    # The sleeper hears of all its timeouts; the other seat not of one inside a sealed
    # declaration window (that would tell it a window was open), so count the sleeper's.
    notices = [e.notice for e in bots[0].of("event") if e.WhichOneof("kind") == "notice"]
    assert [n.kind for n in notices].count(rpb.NOTICE_KIND_TIMEOUT) == 3
    seen = [e.notice for e in bots[1].of("event") if e.WhichOneof("kind") == "notice"]
    assert seen[-1].kind == rpb.NOTICE_KIND_FORFEIT and seen[-1].seat == sleeper
    replay = read_replay(result.replay_path)
    assert verify_replay(replay) == []
    assert sum(s.timeout for d in replay.deals for s in d.steps) == 2  # the third forfeits
    assert other_result.result.reason != pb.MATCH_END_REASON_FORFEIT


def test_illegal_actions_are_refused_then_forfeit(referee: RefereeProcess) -> None:
    async def illegal(bot: RawBot, req: rpb.DecisionRequest) -> list[rpb.ActionReply]:
        bad = rpb.ActionReply(match_id=req.match_id, request_id=req.request_id)
        bad.action.CopyFrom(
            pb.Action(kind=pb.ACTION_KIND_LEAD, cards=["XX"])
            if bot.rng.random() < 0.5
            else pb.Action(kind=pb.ACTION_KIND_BEAT, cards=["AH", "AH"])
        )
        return [bad]

    # The slow clock: this test is about retries, and on a loaded machine a retry could come
    # after the fixture's 400 ms (a strike and a new request, not the refusals counted here).
    result, bots = asyncio.run(
        play_table(
            referee.address,
            "classic",
            2,
            bots=[RawBot(referee.address, "liar", answer=illegal), RawBot(referee.address, "fair")],
            clock=SLOW,
        )
    )
    rejections = bots[0].of("rejection")
    assert len(rejections) == 3  # max_retries 2: two retries, then forfeit
    assert [r.retry_allowed for r in rejections] == [True, True, False]
    assert {r.code for r in rejections} <= {
        pb.ERROR_CODE_MALFORMED,
        pb.ERROR_CODE_WRONG_DECISION,
        pb.ERROR_CODE_NOT_YOUR_TURN,
        pb.ERROR_CODE_DUPLICATE_CARD,
    }
    assert all(r.message for r in rejections)
    assert [(f.seat, f.reason) for f in result.result.forfeits] == [
        (bots[0].seat, pb.FORFEIT_REASON_ILLEGAL_ACTIONS)
    ]
    assert not bots[1].of("rejection")


def test_an_illegal_then_legal_answer_is_accepted(referee: RefereeProcess) -> None:
    answered: set[int] = set()

    async def first_wrong(bot: RawBot, req: rpb.DecisionRequest) -> list[rpb.ActionReply]:
        if req.request_id in answered:  # the retry after the rejection was already sent
            return []
        answered.add(req.request_id)
        return [reply(req, len(req.legal_actions) + 5), reply(req, 0)]

    result, bots = asyncio.run(
        play_table(
            referee.address,
            "classic",
            2,
            bots=[
                RawBot(referee.address, "clumsy", answer=first_wrong),
                RawBot(referee.address, "fair"),
            ],
            clock=pb.TimeControl(max_retries=1000),
        )
    )
    rejections = bots[0].of("rejection")
    assert rejections and all(r.code == pb.ERROR_CODE_MALFORMED for r in rejections)
    assert "outside" in rejections[0].message
    assert not result.result.forfeits
    replay = read_replay(result.replay_path)
    assert verify_replay(replay) == []
    clumsy = bots[0].seat
    assert all(len(s.rejections) == 1 for d in replay.deals for s in d.steps if s.seat == clumsy)


def test_stale_and_unknown_request_ids_are_refused_harmlessly(referee: RefereeProcess) -> None:
    async def confused(bot: RawBot, req: rpb.DecisionRequest) -> list[rpb.ActionReply]:
        stale = reply(req, 0)
        stale.request_id = req.request_id + 1000
        unknown = reply(req, 0)
        unknown.match_id = "no-such-match"
        return [stale, unknown, reply(req, bot.rng.randrange(len(req.legal_actions)))]

    result, bots = asyncio.run(
        play_table(
            referee.address,
            "classic",
            2,
            bots=[
                RawBot(referee.address, "confused", answer=confused),
                RawBot(referee.address, "fair"),
            ],
        )
    )
    codes = {r.code for r in bots[0].of("rejection")}
    assert codes == {pb.ERROR_CODE_UNKNOWN_REQUEST}
    assert not result.result.forfeits
    assert verify_replay(read_replay(result.replay_path)) == []


def test_disconnect_and_resume_continue_the_match(referee: RefereeProcess) -> None:
    async def scenario():
        table = await create_table(referee.address, "classic", 2, house=["random"])
        bot = RawBot(referee.address, "flaky", hello=table_hello("flaky", table))
        # Drop the stream as soon as the third request arrives, unanswered.
        await bot.run(stop_after=lambda b, m: len(b.of("decision")) == 3)
        pending = bot.of("decision")[-1]
        await asyncio.sleep(0.2)
        await bot.run()  # Hello with the resume token
        return bot, pending, await wait_table(referee.address, table)

    bot, pending, result = asyncio.run(scenario())
    welcomes = bot.of("welcome")
    assert [w.resumed for w in welcomes] == [False, True]
    resent = [d for d in bot.of("decision") if d.resent]
    assert resent and resent[0].request_id == pending.request_id
    assert len(bot.of("match_start")) == 2  # sent again on resume
    assert not result.result.forfeits
    assert verify_replay(read_replay(result.replay_path)) == []


def test_disconnect_without_resume_forfeits_after_grace(referee: RefereeProcess) -> None:
    async def scenario():
        table = await create_table(
            referee.address,
            "classic",
            2,
            house=["random"],
            clock=pb.TimeControl(move_ms=5000, grace_ms=300),
        )
        bot = RawBot(referee.address, "gone", hello=table_hello("gone", table))
        await bot.run(stop_after=lambda b, m: len(b.of("decision")) == 1)
        return await wait_table(referee.address, table)

    result = asyncio.run(scenario())
    assert [(f.seat, f.reason) for f in result.result.forfeits] == [
        (1, pb.FORFEIT_REASON_DISCONNECTED)
    ]  # the house bot was seated first
    assert result.result.winner_side == 0


def test_resume_with_unknown_token_is_refused(referee: RefereeProcess) -> None:
    bot = RawBot(referee.address, "ghost", hello=rpb.Hello(protocol_version=1, bot_name="ghost"))
    bot.resume_token = "not-a-token"
    asyncio.run(bot.run())
    assert bot.status == grpc.StatusCode.NOT_FOUND and "resume_token" in bot.details


def test_a_stream_without_hello_is_closed(referee: RefereeProcess) -> None:
    async def scenario():
        bot = RawBot(referee.address, "mute")
        await asyncio.wait_for(bot.run(send_hello=False), 10)
        return bot

    bot = asyncio.run(scenario())
    assert bot.status == grpc.StatusCode.DEADLINE_EXCEEDED and "Hello" in bot.details


@pytest.mark.parametrize(
    ("hello", "code", "words"),
    [
        (
            rpb.Hello(protocol_version=7, bot_name="x", join_table=rpb.JoinTable(table_id="t")),
            grpc.StatusCode.FAILED_PRECONDITION,
            "protocol version 7",
        ),
        (
            rpb.Hello(protocol_version=1, bot_name="x", join_table=rpb.JoinTable(table_id="nope")),
            grpc.StatusCode.NOT_FOUND,
            "no table",
        ),
        (
            rpb.Hello(protocol_version=1, bot_name="", join_table=rpb.JoinTable(table_id="t")),
            grpc.StatusCode.INVALID_ARGUMENT,
            "bot_name",
        ),
        (rpb.Hello(protocol_version=1, bot_name="x"), grpc.StatusCode.INVALID_ARGUMENT, "join_"),
        (
            rpb.Hello(
                protocol_version=1,
                bot_name="x",
                join_queue=rpb.JoinQueue(ruleset=pb.Ruleset(preset="classic"), players=7),
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
            "not 7",
        ),
    ],
)
def test_bad_hello_gets_a_clear_status(
    referee: RefereeProcess, hello: rpb.Hello, code: grpc.StatusCode, words: str
) -> None:
    bot = RawBot(referee.address, "bad", hello=hello)
    asyncio.run(bot.run())
    assert bot.status == code and words in bot.details


def test_queue_starts_a_match_when_enough_bots_wait(referee: RefereeProcess) -> None:
    async def scenario():
        hello = rpb.Hello(
            protocol_version=1,
            bot_name="q",
            join_queue=rpb.JoinQueue(ruleset=pb.Ruleset(preset="balkan"), players=2),
        )
        bots = [RawBot(referee.address, f"q{i}", hello=hello, seed=i) for i in range(2)]
        await asyncio.wait_for(asyncio.gather(*(b.run() for b in bots)), 30)
        return bots

    bots = asyncio.run(scenario())
    ends = [b.of("match_end") for b in bots]
    assert len(ends[0]) == 1 and ends[0][0].replay_id == ends[1][0].replay_id


def test_replay_can_be_fetched_by_id(referee: RefereeProcess) -> None:
    async def scenario():
        result, _ = await play_table(referee.address, "classic", 2)
        async with grpc.aio.insecure_channel(referee.address) as channel:
            stub = referee_pb2_grpc.RefereeServiceStub(channel)
            got = await stub.GetReplay(rpb.GetReplayRequest(replay_id=result.replay_id))
            with pytest.raises(grpc.aio.AioRpcError) as missing:
                await stub.GetReplay(rpb.GetReplayRequest(replay_id="0" * 32))
            with pytest.raises(grpc.aio.AioRpcError) as hostile:
                await stub.GetReplay(rpb.GetReplayRequest(replay_id="../../etc/passwd"))
        return result, got, missing.value, hostile.value

    result, got, missing, hostile = asyncio.run(scenario())
    replay = decode_replay(got.replay_gz)
    assert replay.match_id == result.match_id and verify_replay(replay) == []
    assert missing.code() == grpc.StatusCode.NOT_FOUND
    assert hostile.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_garbage_bytes_do_not_hurt_the_server(referee: RefereeProcess) -> None:
    host, port = referee.address.rsplit(":", 1)
    for payload in (
        b"\x00" * 64,
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        bytes(range(256)) * 8,
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\xff" * 100,
    ):
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(payload)
            s.settimeout(2)
            with contextlib.suppress(TimeoutError, ConnectionResetError):
                s.recv(1024)

    async def check():
        async with grpc.aio.insecure_channel(referee.address) as channel:
            health = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service="kozel.v1.RefereeService")
            )
        result, _ = await play_table(referee.address, "classic", 2)
        return health, result

    health, result = asyncio.run(check())
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    assert result.result.reason == pb.MATCH_END_REASON_LIMIT
    assert referee.proc.poll() is None


def test_house_bots_fill_seats_and_replays_are_written(referee: RefereeProcess) -> None:
    result, _ = asyncio.run(play_table(referee.address, "classic", 3, house=["greedy", "random"]))
    assert [p.name for p in result.seating][:2] == ["greedy-0", "random-1"]
    assert read_replay(result.replay_path).seats[0].name == "greedy-0"


def test_results_missed_while_away_are_delivered_on_resume(referee: RefereeProcess) -> None:
    async def scenario():
        clock = pb.TimeControl(move_ms=20, bank_ms=1, max_strikes=1000, grace_ms=20_000)
        table = await create_table(referee.address, "classic", 2, house=["random"], clock=clock)
        bot = RawBot(referee.address, "away", hello=table_hello("away", table))
        await bot.run(stop_after=lambda b, m: len(b.of("decision")) == 1)
        result = await wait_table(referee.address, table)  # default actions finish the match
        await bot.run()
        return bot, result

    bot, result = asyncio.run(scenario())
    welcome = bot.of("welcome")[-1]
    assert welcome.resumed and list(welcome.running_match_ids) == []
    ends = bot.of("match_end")
    assert len(ends) == 1 and ends[0].match_id == result.match_id
    assert len(bot.of("deal_end")) == result.result.deals
    assert result.result.timeouts[1] > 0 and not result.result.forfeits


def test_skip_events_leaves_out_event_messages_only(referee: RefereeProcess) -> None:
    async def scenario():
        table = await create_table(referee.address, "classic", 2, house=["greedy"])
        hello = table_hello("quiet", table)
        hello.skip_events = True
        bot = RawBot(referee.address, "quiet", hello=hello)
        await bot.run()
        return bot, await wait_table(referee.address, table)

    bot, result = asyncio.run(scenario())
    assert not bot.of("event")
    assert len(bot.of("deal_start")) == len(bot.of("deal_end")) == result.result.deals
    assert len(bot.of("decision")) > 10 and len(bot.of("match_end")) == 1
    assert not bot.of("rejection") and not result.result.forfeits  # it played from requests


def test_reflection_lists_the_services(referee: RefereeProcess) -> None:
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    async def scenario():
        async with grpc.aio.insecure_channel(referee.address) as channel:
            stub = reflection_pb2_grpc.ServerReflectionStub(channel)
            call = stub.ServerReflectionInfo(
                iter([reflection_pb2.ServerReflectionRequest(list_services="")])
            )
            async for resp in call:
                return [s.name for s in resp.list_services_response.service]
        return None

    names = asyncio.run(scenario())
    assert "kozel.v1.RefereeService" in names and "grpc.health.v1.Health" in names


def test_a_bot_that_leaves_an_unfilled_table_frees_its_seat(referee: RefereeProcess) -> None:
    async def scenario():
        table = await create_table(referee.address, "classic", 2)
        ghost = RawBot(referee.address, "ghost", hello=table_hello("ghost", table))
        await ghost.run(stop_after=lambda b, m: m.WhichOneof("message") == "welcome")
        await asyncio.sleep(0.3)
        bots = [
            RawBot(referee.address, f"live-{i}", hello=table_hello(f"live-{i}", table), seed=i)
            for i in range(2)
        ]
        runs = [asyncio.create_task(b.run()) for b in bots]
        result = await wait_table(referee.address, table)
        await asyncio.wait_for(asyncio.gather(*runs), 30)
        return result

    result = asyncio.run(scenario())
    assert sorted(p.name for p in result.seating) == ["live-0", "live-1"]
    assert not result.result.forfeits
