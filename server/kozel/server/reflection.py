"""gRPC server reflection that also finds method symbols, within caps.

The Python reflection service asks the descriptor pool for the file containing a symbol, and
the pool does not index methods (grpc/grpc#34743), so ``grpcurl describe
kozel.v1.RefereeService.Play`` fails. This servicer answers a method name with its service's
file, which is what reflection clients then read the method from.

A reflection stream is long-lived and carries no credentials: thousands of them held open
took every gRPC slot of a port (health checks and new bots then got RESOURCE_EXHAUSTED). So
streams are capped in all and per peer address, each is closed once it has waited
``idle_s`` for its next request, and their slots are counted in the port's
``maximum_concurrent_rpcs`` (:class:`kozel.server.limits.CallCaps`) below the slots kept for
short calls. A stream's requests are read by one reader task into a small queue (its reads
are never cancelled, see ``kozel.server.service``); the idle limit waits on the queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

import grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc

from kozel.server.peers import Proxies

QUEUED = 8  # requests read ahead of the answers (a client that does not read waits)


@dataclass(frozen=True, slots=True)
class ReflectionCaps:
    """Reflection streams of one port (see docs/referee.md, Limits)."""

    total: int = 16  # at once
    per_peer: int = 4  # ... from one address
    idle_s: float = 30.0  # closed after waiting this long for a request
    proxies: Proxies = field(default_factory=Proxies)  # whose x-forwarded-for counts


class _Idle(Exception):
    """A stream waited too long for its next request."""


class MethodAwareReflection(reflection.aio.ReflectionServicer):
    """The stock aio reflection servicer, plus ``Service.Method`` symbols, within caps."""

    def __init__(self, service_names: Iterable[str], caps: ReflectionCaps) -> None:
        super().__init__(tuple(service_names))
        self.caps = caps
        self.open = 0
        self.by_peer: dict[str, int] = {}
        self._readers: set[asyncio.Task[None]] = set()

    async def ServerReflectionInfo(  # noqa: N802 (the gRPC method's name)
        self, request_iterator: Any, context: grpc.aio.ServicerContext
    ) -> None:
        host = self.caps.proxies.host(context)
        if why := self._enter(host):
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, why)
        queue: asyncio.Queue[Any] = asyncio.Queue(QUEUED)
        try:
            reader = asyncio.get_running_loop().create_task(_read(context, queue))
            self._readers.add(reader)
            reader.add_done_callback(self._readers.discard)
            answers = super().ServerReflectionInfo(self._requests(queue), context)
            try:
                async for answer in answers:
                    await context.write(answer)
            except _Idle:
                pass
            else:
                return
        finally:
            self._leave(host)
            while not queue.empty():  # a reader waiting to queue a request goes on to its end
                queue.get_nowait()
        await context.abort(
            grpc.StatusCode.DEADLINE_EXCEEDED,
            f"a reflection stream is closed after {self.caps.idle_s:g} s without a request "
            "(limits.reflection_idle_s)",
        )

    async def _requests(self, queue: asyncio.Queue[Any]) -> AsyncIterator[Any]:
        while True:
            try:
                async with asyncio.timeout(self.caps.idle_s):
                    request = await queue.get()
            except TimeoutError:
                raise _Idle from None
            if request is None:
                return
            yield request

    def _enter(self, host: str) -> str:
        if self.open >= self.caps.total:
            return (
                f"the referee holds {self.caps.total} reflection streams already "
                "(limits.max_reflection_rpcs); retry later"
            )
        if self.by_peer.get(host, 0) >= self.caps.per_peer:
            return (
                f"your address holds {self.caps.per_peer} reflection streams already "
                "(limits.max_reflection_rpcs_per_peer); end one first"
            )
        self.open += 1
        self.by_peer[host] = self.by_peer.get(host, 0) + 1
        return ""

    def _leave(self, host: str) -> None:
        self.open -= 1
        if (left := self.by_peer.pop(host) - 1) > 0:
            self.by_peer[host] = left

    def _file_containing_symbol(self, request: Any, fully_qualified_name: str) -> Any:
        pool = self._pool
        service, _, method = fully_qualified_name.rpartition(".")
        try:
            pool.FindFileContainingSymbol(fully_qualified_name)
        except KeyError:
            try:
                found = pool.FindServiceByName(service)
            except KeyError:
                found = None
            if found is not None and method in found.methods_by_name:
                fully_qualified_name = service
        return super()._file_containing_symbol(request, fully_qualified_name)


async def _read(context: grpc.aio.ServicerContext, queue: asyncio.Queue[Any]) -> None:
    """Every request of the stream into ``queue``, then None."""
    try:
        while (request := await context.read()) is not grpc.aio.EOF:
            await queue.put(request)
    except Exception:  # noqa: BLE001 (the stream broke: its end is all that is left)
        pass
    finally:
        if queue.full():
            queue.get_nowait()  # room for the end (the answers are not read anyway)
        queue.put_nowait(None)


def enable_reflection(
    service_names: Iterable[str], server: grpc.aio.Server, caps: ReflectionCaps
) -> None:
    """Serve reflection for ``service_names`` on ``server``, within ``caps``."""
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(
        MethodAwareReflection(service_names, caps), server
    )
