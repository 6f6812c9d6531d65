"""Guessing the admin token, over real sockets against a ``kozel serve`` process: every wrong
token from an address is answered later than the last (50 ms doubling to 5 s), at most four
wait at once per address and more are refused before their token is looked at, so guessing
runs at a few tokens a second instead of thousands; the operator at another address is
served at once meanwhile. The attacker connects over IPv4, the operator over IPv6."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator

import grpc
import pytest

from kozel.v1 import admin_pb2 as apb
from kozel.v1 import admin_pb2_grpc

from .served import Served, base_config, serve

TOKEN = "f" * 8 + "0123456789abcdef" * 3
ATTACK_S = 3.0


@pytest.fixture(scope="module")
def ref(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("auth")
    config = base_config(tmp, listen="[::]:0", operator={"listen": "[::]:0", "admin_token": TOKEN})
    served = serve(config, tmp, want=("bot", "operator"))
    yield served
    served.stop()


async def _call(stub: admin_pb2_grpc.AdminServiceStub, token: str) -> grpc.StatusCode:
    try:
        await stub.ListLadders(
            apb.ListLaddersRequest(), metadata=(("authorization", f"Bearer {token}"),), timeout=30
        )
        return grpc.StatusCode.OK
    except grpc.aio.AioRpcError as exc:
        return exc.code()


def test_guessing_the_admin_token_is_slow_and_the_operator_is_served(ref: Served) -> None:
    port = ref.ports["operator"]

    async def guesser(stub, codes: Counter, until: float, n: int) -> None:
        i = 0
        while time.monotonic() < until:
            i += 1
            codes[await _call(stub, f"guess-{n}-{i:040d}")] += 1

    async def scenario() -> tuple[Counter, list[float], grpc.StatusCode]:
        codes: Counter = Counter()
        async with (
            grpc.aio.insecure_channel(f"127.0.0.1:{port}") as bad,
            grpc.aio.insecure_channel(f"[::1]:{port}") as good,
        ):
            until = time.monotonic() + ATTACK_S
            attack = [
                asyncio.create_task(guesser(admin_pb2_grpc.AdminServiceStub(bad), codes, until, n))
                for n in range(16)
            ]
            await asyncio.sleep(1.0)
            honest, took = admin_pb2_grpc.AdminServiceStub(good), []
            for _ in range(3):
                started = time.monotonic()
                ok = await _call(honest, TOKEN)
                took.append(time.monotonic() - started)
            await asyncio.gather(*attack)
        return codes, took, ok

    codes, took, ok = asyncio.run(scenario())
    # Tokens looked at and refused: 50 ms, 100 ms ... in a row, four at a time at most.
    assert 3 <= codes[grpc.StatusCode.UNAUTHENTICATED] <= 4 * 7, codes
    assert codes[grpc.StatusCode.OK] == 0
    assert ok == grpc.StatusCode.OK and max(took) < 1.0, took
