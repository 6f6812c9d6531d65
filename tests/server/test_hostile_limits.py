"""Exhaustion, over real sockets against a ``kozel serve`` process with low limits: one client
that tries to deny service to everyone is capped, and an honest client is still served while
the attack runs (Hello welcomed, its match started in bounded time, health answered).

The attacker connects over IPv4 (127.0.0.1), the honest client over IPv6 (::1): two peer
addresses for the per-address limits. The attacks are small, the limits are set low to match.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from kozel.core.convert import dict_to_struct
from kozel.v1 import game_pb2 as pb
from kozel.v1 import match_pb2 as mpb
from kozel.v1 import match_pb2_grpc, referee_pb2_grpc
from kozel.v1 import referee_pb2 as rpb

from .rawbot import RawBot, create_table, reply, table_hello
from .served import Served, base_config, serve
from .tamper import TamperProxy

LIMITS = {
    "max_tables_per_peer": 5,
    "empty_table_linger_s": 1.5,
    "max_match_deals": 30,
    "max_running_matches": 2,
    "admission_lag_ms": 0,
    "max_idle_rpcs": 12,
    "max_idle_rpcs_per_peer": 6,
    "max_idle_rpc_s": 4,
    "reserved_rpcs": 8,
    "operator_max_idle_rpcs": 4,
    "max_spectators": 3,
    "max_spectators_per_match": 2,
    "max_refused_answers": 20,
    "max_lingering_sessions": 5,
    "keepalive_time_s": 1,
    "keepalive_timeout_s": 1,
    "hello_timeout_s": 5,
}
SHORT = {"limit": 4}


@pytest.fixture(scope="module")
def ref(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("limits")
    config = base_config(
        tmp,
        listen="[::]:0",
        limits=LIMITS,
        operator={"listen": "[::]:0"},
        clock={"move_ms": 5000, "bank_ms": 10000},
    )
    served = serve(config, tmp, want=("bot", "operator"))
    yield served
    served.stop()


def attacker(ref: Served, which: str = "bot") -> str:
    return f"127.0.0.1:{ref.ports[which]}"


def honest(ref: Served, which: str = "bot") -> str:
    return f"[::1]:{ref.ports[which]}"


async def status_of(call) -> tuple[grpc.StatusCode, str]:  # noqa: ANN001
    try:
        await call
        return grpc.StatusCode.OK, ""
    except grpc.aio.AioRpcError as exc:
        return exc.code(), exc.details() or ""


async def wait_outcome(address: str, table: str, timeout: float = 90) -> rpb.WaitTableResponse:
    """WaitTable, called again each time the referee cuts the waiting call short."""
    deadline = time.monotonic() + timeout
    async with grpc.aio.insecure_channel(address) as channel:
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        while True:
            try:
                return await stub.WaitTable(rpb.WaitTableRequest(table_id=table), timeout=30)
            except grpc.aio.AioRpcError as exc:
                if exc.code() != grpc.StatusCode.DEADLINE_EXCEEDED or time.monotonic() > deadline:
                    raise


async def honest_table_match(ref: Served, name: str) -> rpb.WaitTableResponse:
    """A table with a house bot, created and joined from the honest address."""
    table = await create_table(honest(ref), "classic", 2, house=["random"], options=SHORT)
    bot = RawBot(honest(ref), name, hello=table_hello(name, table))
    run = asyncio.create_task(bot.run())
    result = await wait_outcome(honest(ref), table)
    await asyncio.wait_for(run, 30)
    assert bot.of("welcome") and bot.of("match_end"), (bot.status, bot.details)
    return result


def queue_hello(name: str, options: dict, players: int = 2) -> rpb.Hello:
    ruleset = pb.Ruleset(preset="classic")
    ruleset.options.CopyFrom(dict_to_struct(options))
    return rpb.Hello(
        protocol_version=1,
        bot_name=name,
        join_queue=rpb.JoinQueue(ruleset=ruleset, players=players),
    )


def test_one_address_cannot_fill_the_tables(ref: Served) -> None:
    async def scenario():
        codes = [await status_of(create_table(attacker(ref), "classic", 2)) for _ in range(7)]
        result = await honest_table_match(ref, "honest-tables")
        started = time.monotonic()  # empty tables go after empty_table_linger_s
        while (await status_of(create_table(attacker(ref), "classic", 2)))[0] != grpc.StatusCode.OK:
            assert time.monotonic() - started < 20, "empty tables did not expire"
            await asyncio.sleep(0.2)
        return codes, result

    codes, result = asyncio.run(scenario())
    assert [c for c, _ in codes] == [grpc.StatusCode.OK] * 5 + [
        grpc.StatusCode.RESOURCE_EXHAUSTED
    ] * 2, codes
    assert "limits.max_tables_per_peer" in codes[-1][1]
    assert result.result.reason == pb.MATCH_END_REASON_LIMIT


async def _when_tables_free(create: Callable[[], Awaitable[str]], timeout: float = 30) -> str:
    """``create()``, again while the address holds its share of open tables (empty tables
    expire after ``empty_table_linger_s``)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await create()
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.RESOURCE_EXHAUSTED or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


def test_house_bot_tables_wait_for_admission_and_matches_are_bounded(ref: Served) -> None:
    async def scenario():
        endless = await status_of(
            create_table(
                attacker(ref), "classic", 2, house=["random"], options={"fixed_deals": 10**9}
            )
        )
        # Matches of house bots alone whose penalty limit is never reached (created once the
        # empty tables another test left from this address have expired).
        tables = [
            await _when_tables_free(
                lambda: create_table(
                    attacker(ref),
                    "classic",
                    2,
                    house=["random", "random"],
                    options={"limit": 10**6},
                )
            )
            for _ in range(4)
        ]
        bots = [
            RawBot(honest(ref), f"honest-q{i}", hello=queue_hello(f"honest-q{i}", SHORT), seed=i)
            for i in range(2)
        ]
        started = time.monotonic()
        runs = [asyncio.create_task(b.run()) for b in bots]
        while not all(b.of("match_start") for b in bots):
            assert time.monotonic() - started < 60, "the honest match did not start"
            await asyncio.sleep(0.05)
        waited = time.monotonic() - started
        await asyncio.wait_for(asyncio.gather(*runs), 90)
        results = [await wait_outcome(attacker(ref), t) for t in tables]
        return endless, bots, waited, results

    endless, bots, waited, results = asyncio.run(scenario())
    assert endless[0] == grpc.StatusCode.INVALID_ARGUMENT and "max_match_deals" in endless[1]
    assert all(b.of("welcome") for b in bots) and waited < 60
    assert all(len(b.of("match_end")) == 1 for b in bots)
    for r in results:  # cut at max_match_deals, recorded as aborted
        assert r.result.reason == pb.MATCH_END_REASON_ABORTED and r.result.deals == 30, r.result


def test_idle_calls_cannot_take_every_slot_and_health_is_answered(ref: Served) -> None:
    async def hold_watches(address: str, n: int) -> list[tuple[grpc.StatusCode, float]]:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)

            async def one() -> tuple[grpc.StatusCode, float]:
                t0 = time.monotonic()
                try:
                    async for _ in stub.Watch(
                        health_pb2.HealthCheckRequest(service=""), timeout=60
                    ):
                        pass
                    return grpc.StatusCode.OK, time.monotonic() - t0
                except grpc.aio.AioRpcError as exc:
                    return exc.code(), time.monotonic() - t0

            return await asyncio.gather(*(one() for _ in range(n)))

    async def check(address: str, service: str = "") -> int:
        async with grpc.aio.insecure_channel(address) as channel:
            resp = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=10
            )
            return resp.status

    async def scenario():
        attack = asyncio.create_task(hold_watches(attacker(ref), 10))
        op_attack = asyncio.create_task(hold_watches(attacker(ref, "operator"), 6))
        await asyncio.sleep(1.0)  # the attack holds its calls
        honest_watches = asyncio.create_task(hold_watches(honest(ref), 7))
        await asyncio.sleep(0.5)
        served = {
            "health": await check(honest(ref)),
            "liveness": await check(honest(ref, "operator"), "kozel.liveness"),
            "liveness_attacker": await check(attacker(ref, "operator"), "kozel.liveness"),
        }
        bot = RawBot(honest(ref), "honest-hello", hello=queue_hello("honest-hello", SHORT, 4))
        await bot.run(stop_after=lambda b, m: m.WhichOneof("message") == "welcome")
        served["welcomed"] = bool(bot.of("welcome"))
        return (await attack, await op_attack, await honest_watches, served)

    attack, op_attack, honest_watches, served = asyncio.run(scenario())
    serving = health_pb2.HealthCheckResponse.SERVING
    assert served == {
        "health": serving,
        "liveness": serving,
        "liveness_attacker": serving,
        "welcomed": True,
    }
    codes = sorted(c.name for c, _ in attack)
    assert codes == ["DEADLINE_EXCEEDED"] * 6 + ["RESOURCE_EXHAUSTED"] * 4, attack
    assert (
        sorted(c.name for c, _ in op_attack)
        == ["DEADLINE_EXCEEDED"] * 4 + ["RESOURCE_EXHAUSTED"] * 2
    ), op_attack
    # The honest address gets what is left of the total (12 - 6), no more.
    assert sorted(c.name for c, _ in honest_watches) == ["DEADLINE_EXCEEDED"] * 6 + [
        "RESOURCE_EXHAUSTED"
    ], honest_watches
    # Held calls end at max_idle_rpc_s (4 s), not at the client's 60 s.
    assert max(t for c, t in attack if c == grpc.StatusCode.DEADLINE_EXCEEDED) < 20


def test_a_leave_does_not_reset_the_stale_answer_count(ref: Served) -> None:
    async def scenario():
        table = await create_table(
            attacker(ref),
            "classic",
            2,
            house=["random"],
            clock=pb.TimeControl(move_ms=300, bank_ms=100, max_strikes=1, grace_ms=300),
        )

        async def flood(bot: RawBot, req: rpb.DecisionRequest) -> None:
            forged = reply(req, 0)
            forged.request_id += 1000
            for _ in range(200):
                bot.send(rpb.PlayRequest(action=forged))
                bot.send(rpb.PlayRequest(leave=rpb.Leave()))
            return

        bot = RawBot(
            attacker(ref),
            "flooder",
            hello=table_hello("flooder", table),
            answer=flood,
            one_match=False,
        )
        await asyncio.wait_for(bot.run(), 60)
        result = await honest_table_match(ref, "honest-flood")
        return bot, result

    bot, result = asyncio.run(scenario())
    refused = bot.of("rejection")
    assert 0 < len(refused) <= 21, len(refused)  # cut after 20 in a row, Leaves counted
    assert bot.status in (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.INTERNAL)
    assert result.result.reason == pb.MATCH_END_REASON_LIMIT


def test_lingering_sessions_are_bounded_by_count(ref: Served) -> None:
    padding = b"\xfa\x3e" + bytes([0xE0, 0xD4, 0x03]) + b"x" * 60_000  # unknown field 999

    async def scenario():
        tokens = []
        for i in range(8):  # each queues alone, then goes: a detached session lingers
            hello = queue_hello(f"lingerer-{i}", {"limit": 7}, 4)
            hello.MergeFromString(padding)
            bot = RawBot(attacker(ref), f"lingerer-{i}", hello=hello)
            await bot.run(stop_after=lambda b, m: m.WhichOneof("message") == "welcome")
            tokens.append((bot, bot.resume_token))
        resumed = []
        for bot, token in (tokens[0], tokens[-1]):
            again = RawBot(attacker(ref), bot.name, hello=bot.hello, resume_token=token)
            await again.run(stop_after=lambda b, m: m.WhichOneof("message") == "welcome")
            resumed.append(again)
        return resumed

    first, last = asyncio.run(scenario())
    assert first.status == grpc.StatusCode.NOT_FOUND and "resume_token" in first.details
    assert last.of("welcome") and last.of("welcome")[0].resumed


def test_a_half_open_connection_is_closed_by_keepalive(ref: Served) -> None:
    async def scenario() -> float:
        table = await create_table(attacker(ref), "classic", 2)
        async with TamperProxy(attacker(ref)) as proxy:
            bot = RawBot(proxy.address, "half-open", hello=table_hello("half-open", table))
            run = asyncio.create_task(bot.run())
            while not bot.of("welcome"):
                await asyncio.sleep(0.02)
            proxy.blackhole()
            started = time.monotonic()
            await asyncio.wait_for(proxy.server_gone.wait(), 30)
            gone = time.monotonic() - started
            run.cancel()
        return gone

    gone = asyncio.run(scenario())
    assert gone < 10, gone  # keepalive 1 s + 1 s here; the old fixed 30 s + 10 s would fail


def test_spectators_are_capped_in_all(ref: Served) -> None:
    clock = pb.TimeControl(move_ms=20_000, bank_ms=1, max_strikes=1, grace_ms=200)

    async def scenario():
        tables = [await create_table(honest(ref), "classic", 2, clock=clock) for _ in range(2)]
        bots = [
            RawBot(
                honest(ref),
                f"idle-{t}-{i}",
                hello=table_hello(f"idle-{t}-{i}", t),
                answer=lambda b, r: asyncio.sleep(0),
            )
            for t in tables
            for i in range(2)
        ]
        runs = [asyncio.create_task(b.run()) for b in bots]
        while not all(b.of("match_start") for b in bots):
            await asyncio.sleep(0.02)
        ids = [bots[0].of("match_start")[0].match_id, bots[2].of("match_start")[0].match_id]
        codes = []
        async with grpc.aio.insecure_channel(attacker(ref)) as channel:
            stub = match_pb2_grpc.MatchServiceStub(channel)
            calls = []
            for match_id in [ids[0], ids[0], ids[0], ids[1], ids[1]]:
                call = stub.WatchMatch(mpb.WatchMatchRequest(match_id=match_id), timeout=30)
                try:
                    await call.read()
                    codes.append((grpc.StatusCode.OK, ""))
                    calls.append(call)
                except grpc.aio.AioRpcError as exc:
                    codes.append((exc.code(), exc.details() or ""))
            for call in calls:
                call.cancel()
        for run in runs:
            run.cancel()
        for t in tables:  # the seats forfeit after their grace: the matches end
            await wait_outcome(honest(ref), t)
        return codes

    codes = asyncio.run(scenario())
    assert [c for c, _ in codes] == [
        grpc.StatusCode.OK,
        grpc.StatusCode.OK,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.OK,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    ], codes
    assert "2 spectators" in codes[2][1] and "limits.max_spectators" in codes[4][1]


def test_a_hello_is_kept_without_its_unknown_fields(tmp_path: Path) -> None:
    """In-process (real gRPC on loopback) to look at what the referee keeps."""
    from kozel.server.app import start_referee
    from kozel.server.config import ServerConfig

    padding = b"\xfa\x3e" + bytes([0xE0, 0xD4, 0x03]) + b"x" * 60_000  # unknown field 999

    async def scenario() -> list[int]:
        ref = await start_referee(ServerConfig(listen="127.0.0.1:0", replay_dir=tmp_path))
        try:
            for i in range(3):
                hello = queue_hello(f"padded-{i}", {"limit": 7}, 4)
                hello.MergeFromString(padding)
                assert hello.ByteSize() > 60_000
                bot = RawBot(ref.address, f"padded-{i}", hello=hello)
                await bot.run(stop_after=lambda b, m: m.WhichOneof("message") == "welcome")
                assert bot.of("welcome")
            return [s.hello.ByteSize() for s in ref.service.sessions.values()]
        finally:
            await ref.stop(0)

    sizes = asyncio.run(scenario())
    assert len(sizes) == 3 and max(sizes) < 200, sizes


def test_a_table_clock_outside_its_bounds_is_refused_by_name(ref: Served) -> None:
    async def scenario() -> list[tuple[grpc.StatusCode, str]]:
        async with grpc.aio.insecure_channel(honest(ref)) as channel:
            stub = referee_pb2_grpc.RefereeServiceStub(channel)
            clocks = [pb.TimeControl(move_ms=10**9), pb.TimeControl(max_retries=1001)]
            return [
                await status_of(
                    stub.CreateTable(
                        rpb.CreateTableRequest(
                            ruleset=pb.Ruleset(preset="classic"), players=2, time_control=tc
                        )
                    )
                )
                for tc in clocks
            ]

    (code1, why1), (code2, why2) = asyncio.run(scenario())
    assert code1 == code2 == grpc.StatusCode.INVALID_ARGUMENT
    assert why1 == "time_control.move_ms is 1000000000; it must be 10 to 600000"
    assert why2 == "time_control.max_retries is 1001; it must be 0 to 1000"
