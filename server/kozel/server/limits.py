"""Concurrent-call limits: long calls that carry no credentials (``WaitTable``, ``WatchMatch``,
``health.Watch``) are capped in all and per peer address and given a deadline; ``Play`` streams
(capped by the servicer itself, so no wrapper sits on their messages) and reflection streams
(capped by :mod:`kozel.server.reflection`) have their slots too, all below gRPC's own
``maximum_concurrent_rpcs``. The slots left over are
reserved for short calls, so a health check is answered even while every long-call slot is
taken.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from kozel.server.peers import Proxies

IDLE_METHODS = frozenset(
    {
        "/kozel.v1.RefereeService/WaitTable",
        "/kozel.v1.MatchService/WatchMatch",
        "/grpc.health.v1.Health/Watch",
    }
)


@dataclass(frozen=True, slots=True)
class CallCaps:
    """The caps of one server (see docs/referee.md, Limits)."""

    idle_total: int  # long credential-less calls at once, in all
    idle_per_peer: int  # ... from one peer address
    idle_max_s: float  # how long one may last
    streams: int = 0  # Play streams at once (0: the server has none)
    reserved: int = 64  # slots above all of these, for short calls (health checks)
    reflection: int = 0  # reflection streams at once (capped by kozel.server.reflection)
    proxies: Proxies = field(default_factory=Proxies)  # whose x-forwarded-for counts

    @property
    def grpc_slots(self) -> int:
        """gRPC's ``maximum_concurrent_rpcs`` for the server."""
        return self.streams + self.idle_total + self.reflection + self.reserved


class CallLimits(grpc.aio.ServerInterceptor):
    """Applies :class:`CallCaps` to every call of one server."""

    def __init__(self, caps: CallCaps) -> None:
        self.caps = caps
        self.idle = 0
        self.idle_by_peer: dict[str, int] = {}

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(details)
        if handler is None:
            return handler
        if details.method in IDLE_METHODS:
            return _replace(handler, self._idle_call)
        return handler

    # -- bookkeeping ---------------------------------------------------------------------------

    def _enter_idle(self, host: str) -> str | None:
        caps = self.caps
        if self.idle >= caps.idle_total:
            return (
                f"the referee holds {caps.idle_total} waiting calls (WaitTable, "
                "WatchMatch, health.Watch) already; retry later"
            )
        if self.idle_by_peer.get(host, 0) >= caps.idle_per_peer:
            return (
                f"your address holds {caps.idle_per_peer} waiting calls (WaitTable, "
                "WatchMatch, health.Watch) already; end one first"
            )
        self.idle += 1
        self.idle_by_peer[host] = self.idle_by_peer.get(host, 0) + 1
        return None

    def _leave_idle(self, host: str) -> None:
        self.idle -= 1
        if (left := self.idle_by_peer.pop(host) - 1) > 0:
            self.idle_by_peer[host] = left

    def _too_late(self) -> str:
        return (
            f"a waiting call lasts at most {self.caps.idle_max_s:g} s "
            "(limits.max_idle_rpc_s); call again"
        )

    # -- wrappers ------------------------------------------------------------------------------

    def _idle_call(self, behaviour: Callable, streaming: bool) -> Callable:
        """``behaviour`` counted against the idle caps and cut at their deadline."""
        limits = self

        if streaming and inspect.isasyncgenfunction(behaviour):

            async def generator(request, context):  # noqa: ANN001, ANN202
                host = limits.caps.proxies.host(context)
                if why := limits._enter_idle(host):
                    await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, why)
                deadline = asyncio.get_running_loop().time() + limits.caps.idle_max_s
                responses = behaviour(request, context)
                try:
                    while True:
                        try:  # the deadline covers the wait for a message, never a write
                            async with asyncio.timeout_at(deadline):
                                msg = await anext(responses)
                        except StopAsyncIteration:
                            return
                        except TimeoutError:
                            break
                        yield msg
                finally:
                    limits._leave_idle(host)
                    if not responses.ag_running:  # ends the handler's own clean-up now
                        await responses.aclose()
                await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, limits._too_late())

            return generator

        async def coroutine(request, context):  # noqa: ANN001, ANN202, RET503 (abort raises)
            host = limits.caps.proxies.host(context)
            if why := limits._enter_idle(host):
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, why)
            try:
                async with asyncio.timeout(limits.caps.idle_max_s):
                    return await behaviour(request, context)
            except TimeoutError:
                pass
            finally:
                limits._leave_idle(host)
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, limits._too_late())

        return coroutine


def _replace(
    handler: grpc.RpcMethodHandler, wrap: Callable[[Callable, bool], Callable]
) -> grpc.RpcMethodHandler:
    """The same handler with its behaviour wrapped."""
    kinds = (
        ("unary_unary", grpc.unary_unary_rpc_method_handler, False),
        ("unary_stream", grpc.unary_stream_rpc_method_handler, True),
        ("stream_unary", grpc.stream_unary_rpc_method_handler, False),
        ("stream_stream", grpc.stream_stream_rpc_method_handler, True),
    )
    encode = handler.response_serializer
    assert encode is not None, "every handler of a generated servicer has a serializer"

    def serialize(msg: object) -> bytes:  # a handler may yield messages it encoded once for all
        return msg if isinstance(msg, bytes) else encode(msg)

    for attr, make, streaming in kinds:
        behaviour = getattr(handler, attr)
        if behaviour is not None:
            return make(
                wrap(behaviour, streaming),
                request_deserializer=handler.request_deserializer,
                response_serializer=serialize,
            )
    return handler
