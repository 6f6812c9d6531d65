"""Reflection streams held open, over real sockets against a ``kozel serve`` process with few
gRPC slots: once they took every slot of a port, health checks and new bots got
RESOURCE_EXHAUSTED, and a liveness probe failing on the operator port would have had a
referee restarted mid-match. Now they are capped in all and per address and closed when idle;
health is answered on both ports, a newcomer is welcomed, and the honest address still gets
its reflection. The attacker connects over IPv4, the honest client over IPv6."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from .rawbot import RawBot
from .served import Served, base_config, serve
from .test_hostile_limits import queue_hello

LIMITS = {
    "max_streams": 4,
    "max_idle_rpcs": 4,
    "max_idle_rpcs_per_peer": 4,
    "operator_max_idle_rpcs": 2,
    "reserved_rpcs": 4,
    "reflection_idle_s": 3,
}
ATTACK = 60  # streams per port, five times the gRPC slots the caps leave to the rest


@pytest.fixture(scope="module")
def ref(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("reflection")
    config = base_config(tmp, listen="[::]:0", limits=LIMITS, operator={"listen": "[::]:0"})
    served = serve(config, tmp, want=("bot", "operator"))
    yield served
    served.stop()


class Held:
    """Reflection streams opened and held without a further request."""

    def __init__(self) -> None:
        self.codes: Counter[str] = Counter()
        self.calls: list[grpc.aio.StreamStreamCall] = []
        self.ended: list[tuple[str, float]] = []
        self.live = self.peak = 0  # held at once

    async def open(self, channel: grpc.aio.Channel) -> None:
        async def one_request() -> Any:
            yield reflection_pb2.ServerReflectionRequest(list_services="")
            await asyncio.Event().wait()  # held open without a further request

        # Written by gRPC from an iterator: a write that loses the race with a refusal is not
        # an error of its own (written by hand it failed as INTERNAL, "error from Core").
        call = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(one_request())
        try:
            await call.read()
        except grpc.aio.AioRpcError:
            self.codes[(await call.code()).name] += 1
            return
        self.codes["OK"] += 1
        self.live += 1
        self.peak = max(self.peak, self.live)
        self.calls.append(call)
        started = time.monotonic()
        try:
            await call.read()  # the referee ends it
            self.ended.append(("EOF", time.monotonic() - started))
        except grpc.aio.AioRpcError as exc:
            self.ended.append((exc.code().name, time.monotonic() - started))
        self.live -= 1


async def _check(address: str, service: str = "") -> str:
    async with grpc.aio.insecure_channel(address) as channel:
        try:
            got = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=10
            )
        except grpc.aio.AioRpcError as exc:
            return exc.code().name
        return health_pb2.HealthCheckResponse.ServingStatus.Name(got.status)


def test_reflection_streams_cannot_take_the_slots_of_health_and_bots(ref: Served) -> None:
    bot_port, op_port = ref.ports["bot"], ref.ports["operator"]

    async def scenario() -> tuple[dict[str, Held], dict[str, Any]]:
        held = {"bot": Held(), "operator": Held()}
        channels = [
            grpc.aio.insecure_channel(
                f"127.0.0.1:{port}", options=[("grpc.use_local_subchannel_pool", 1)]
            )
            for port in (bot_port, op_port)
            for _ in range(4)
        ]
        tasks = [
            asyncio.create_task(held[which].open(channels[i * 4 + n % 4]))
            for i, which in enumerate(("bot", "operator"))
            for n in range(ATTACK)
        ]
        while sum(sum(h.codes.values()) for h in held.values()) < 2 * ATTACK:
            await asyncio.sleep(0.05)
        served: dict[str, Any] = {
            "health": await _check(f"[::1]:{bot_port}"),
            "operator_health": await _check(f"[::1]:{op_port}"),
            "liveness": await _check(f"[::1]:{op_port}", "kozel.liveness"),
        }
        async with grpc.aio.insecure_channel(f"[::1]:{bot_port}") as channel:
            call = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo()
            await call.write(reflection_pb2.ServerReflectionRequest(list_services=""))
            answer = await call.read()
            served["reflection"] = sorted(s.name for s in answer.list_services_response.service)
            await call.done_writing()
        bot = RawBot(f"[::1]:{bot_port}", "newcomer", hello=queue_hello("newcomer", {"limit": 7}))
        started = time.monotonic()
        await bot.run(stop_after=lambda b, m: m.WhichOneof("message") == "welcome")
        served["welcomed"] = (bool(bot.of("welcome")), time.monotonic() - started)
        await asyncio.wait_for(asyncio.gather(*tasks), 60)
        for channel in channels:
            await channel.close()
        return held, served

    held, served = asyncio.run(scenario())
    assert served["health"] == served["operator_health"] == served["liveness"] == "SERVING"
    assert "kozel.v1.RefereeService" in served["reflection"]
    welcomed, took = served["welcomed"]
    assert welcomed and took < 10, served
    for which, h in held.items():
        # Four at once from the attacker's address (limits.max_reflection_rpcs_per_peer), the
        # rest refused (a slow machine may open more once the first have been closed); each
        # closed after reflection_idle_s (3 s) without a request.
        assert h.peak == 4 and h.codes["OK"] >= 4, (which, h.codes, h.peak)
        # Refused: by the referee (RESOURCE_EXHAUSTED) or, past maximum_concurrent_rpcs, by
        # gRPC itself, which a loaded client may report as INTERNAL ("error from Core").
        assert set(h.codes) <= {"OK", "RESOURCE_EXHAUSTED", "INTERNAL"}, h.codes
        assert {code for code, _ in h.ended} == {"DEADLINE_EXCEEDED"}, (which, h.ended)
        assert all(2 < t < 30 for _, t in h.ended), h.ended
