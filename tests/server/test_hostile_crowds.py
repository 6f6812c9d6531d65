"""Crowds from one address, over real sockets against a ``kozel serve`` process: streams that
send Hello and never read, Hellos padded to the message limit, and clients that share one
address behind a proxy. An honest client is served within its normal time and the referee's
memory stays bounded.

The attacker connects over IPv4 (127.0.0.1), the honest client over IPv6 (::1): two peer
addresses for the per-address limits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import grpc
import pytest

from kozel.v1 import game_pb2 as pb
from kozel.v1 import match_pb2 as mpb
from kozel.v1 import match_pb2_grpc, referee_pb2_grpc
from kozel.v1 import referee_pb2 as rpb

from .rawbot import RawBot, create_table, wait_table
from .served import Served, base_config, serve
from .test_hostile import rss_mb
from .test_hostile_limits import SHORT, queue_hello, status_of

SHARE = 3  # limits.max_queue_matches_per_peer here
MUTES = 40  # streams that send Hello and never read
PADDING = b"\xfa\x3e" + bytes([0xE0, 0xD4, 0x03]) + b"x" * 60_000  # unknown field 999, 60 KB


@pytest.fixture(scope="module")
def ref(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("crowds")
    config = base_config(
        tmp,
        listen="[::]:0",
        drain_timeout_s=1,
        trusted_proxies="127.0.0.1",  # a balancer in front of the referee
        limits={
            "max_queue_matches_per_peer": SHARE,
            "max_running_matches": 2 * SHARE,
            "admission_lag_ms": 0,
            "max_tables_per_peer": 2,
            "max_spectators_per_peer": 4,
        },
        # The mute seats' matches last: each of their moves times out only after 15 s.
        clock={"move_ms": 5000, "bank_ms": 10000},
    )
    served = serve(config, tmp)
    yield served
    served.stop()


def at(ref: Served, host: str) -> str:
    return f"{host}:{ref.ports['bot']}"


async def live_matches(address: str) -> list[mpb.LiveMatch]:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = match_pb2_grpc.MatchServiceStub(channel)
        return list((await stub.ListLiveMatches(mpb.ListLiveMatchesRequest())).matches)


def test_streams_that_never_read_do_not_keep_a_newcomer_waiting(ref: Served) -> None:
    attacker, honest = at(ref, "127.0.0.1"), at(ref, "[::1]")

    async def scenario() -> tuple[float, list[mpb.LiveMatch], list[RawBot]]:
        channels = [grpc.aio.insecure_channel(attacker) for _ in range(4)]
        mutes = []
        for i in range(MUTES):  # Hello, then never a read nor an answer
            call = referee_pb2_grpc.RefereeServiceStub(channels[i % 4]).Play()
            await call.write(rpb.PlayRequest(hello=queue_hello(f"mute-{i}", SHORT)))
            mutes.append(call)
        started = time.monotonic()
        while len(await live_matches(honest)) < SHARE:  # the mute crowd plays its share
            assert time.monotonic() - started < 30, "the mute streams were never paired"
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # ... and would take every running slot if it could
        crowd = await live_matches(honest)
        bots = [
            RawBot(honest, f"newcomer-{i}", hello=queue_hello(f"newcomer-{i}", SHORT), seed=i)
            for i in range(2)
        ]
        started = time.monotonic()
        runs = [asyncio.create_task(b.run()) for b in bots]
        while not all(b.of("match_start") for b in bots):
            assert time.monotonic() - started < 60, "the newcomers never got a match"
            await asyncio.sleep(0.02)
        waited = time.monotonic() - started
        await asyncio.wait_for(asyncio.gather(*runs), 90)
        for call in mutes:
            call.cancel()
        for channel in channels:
            await channel.close()
        return waited, crowd, bots

    waited, crowd, bots = asyncio.run(scenario())
    assert len(crowd) == SHARE, [m.seats for m in crowd]  # not 2 * SHARE: the cap's other half
    assert all(s.startswith("mute-") for m in crowd for s in m.seats)
    assert bots[0].of("match_start")[0].match_id == bots[1].of("match_start")[0].match_id
    assert all(len(b.of("match_end")) == 1 for b in bots)
    assert waited < 10, waited  # behind the crowd it was every mute match's timeouts (15 s+)


def test_padded_hellos_are_not_kept_for_the_linger_time(ref: Served) -> None:
    """Each Hello carries 60 KB the referee does not read; every session lingers detached."""
    n = 1000

    async def one(i: int) -> RawBot:
        hello = queue_hello(f"padded-{i}", {"limit": 100 + i}, 4)  # alone in its queue
        hello.MergeFromString(PADDING)
        bot = RawBot(at(ref, "127.0.0.3"), f"padded-{i}", hello=hello)
        await bot.run(stop_after=lambda b, m: m.WhichOneof("message") == "welcome")
        return bot

    async def scenario() -> list[RawBot]:
        bots = []
        for start in range(0, n, 50):
            bots += await asyncio.gather(*(one(i) for i in range(start, start + 50)))
        return bots

    before = rss_mb(ref.proc.pid)
    bots = asyncio.run(scenario())
    grown = rss_mb(ref.proc.pid) - before
    assert all(b.of("welcome") for b in bots)
    # 1000 x 60 KB is 60 MB: kept as a part of their requests, they grew it by more than that.
    assert grown < 35, grown


def test_behind_a_trusted_proxy_each_client_has_its_own_limits(ref: Served) -> None:
    """127.0.0.1 is the trusted proxy: the address it forwards counts. Anyone else's
    x-forwarded-for is ignored (a client could write any address into it)."""

    async def tables(address: str, forwarded: list[str]) -> list[grpc.StatusCode]:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = referee_pb2_grpc.RefereeServiceStub(channel)
            request = rpb.CreateTableRequest(ruleset=pb.Ruleset(preset="classic"), players=2)
            return [
                (await status_of(stub.CreateTable(request, metadata=(("x-forwarded-for", f),))))[0]
                for f in forwarded
            ]

    async def scenario() -> dict[str, list[grpc.StatusCode]]:
        return {
            "crowd": await tables(at(ref, "127.0.0.1"), ["198.51.100.7, 203.0.113.5"] * 3),
            "newcomer": await tables(at(ref, "127.0.0.1"), ["203.0.113.9"]),
            "forger": await tables(at(ref, "[::1]"), [f"203.0.113.{i}" for i in (20, 21, 22)]),
        }

    ok, full = grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED
    assert asyncio.run(scenario()) == {
        "crowd": [ok, ok, full],  # limits.max_tables_per_peer is 2
        "newcomer": [ok],  # behind the same proxy, a client of its own
        "forger": [ok, ok, full],
    }


def test_one_address_watches_a_match_a_few_times_only(ref: Served) -> None:
    """Each spectator costs a write per event: a crowd from one client is refused past its
    share of the match."""

    async def watch(address: str, match_id: str, n: int) -> list[tuple[grpc.StatusCode, str]]:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = match_pb2_grpc.MatchServiceStub(channel)
            codes, calls = [], []
            for _ in range(n):
                call = stub.WatchMatch(mpb.WatchMatchRequest(match_id=match_id), timeout=60)
                try:
                    await call.read()  # the snapshot
                    codes.append((grpc.StatusCode.OK, ""))
                    calls.append(call)
                except grpc.aio.AioRpcError as exc:
                    codes.append((exc.code(), exc.details() or ""))
            for call in calls:
                call.cancel()
            return codes

    async def scenario():
        table = await create_table(
            at(ref, "127.0.0.1"),
            "classic",
            2,
            house=["random", "random"],
            options={"fixed_deals": 400},
        )
        started = time.monotonic()
        while not (
            ids := [m.match_id for m in await live_matches(at(ref, "[::1]")) if m.table_id == table]
        ):
            assert time.monotonic() - started < 30, "the match did not start"
            await asyncio.sleep(0.01)
        crowd = await watch(at(ref, "127.0.0.1"), ids[0], 6)
        other = await watch(at(ref, "[::1]"), ids[0], 1)
        result = await wait_table(at(ref, "[::1]"), table)
        return crowd, other, result

    crowd, other, result = asyncio.run(scenario())
    ok, full = grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED
    assert [c for c, _ in crowd] == [ok] * 4 + [full] * 2, crowd
    assert "limits.max_spectators_per_peer" in crowd[-1][1]
    assert [c for c, _ in other] == [ok]
    assert result.result.deals == 400
