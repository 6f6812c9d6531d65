"""A scripted referee for the SDK client, with no sockets (as python-chess's MockTransport):
each stream to an address follows the next script queued for it: expect a request of a kind
(and check it), answer with messages, close, or fail with a gRPC status."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from kozel.v1 import referee_pb2 as rpb

Check = Callable[[rpb.PlayRequest], object]


@dataclass
class Script:
    """One stream: steps run in order."""

    steps: list[tuple[str, object]] = field(default_factory=list)

    def expect(self, kind: str, check: Check | None = None) -> Script:
        """The client sends a request of this oneof kind next (``check`` asserts on it)."""
        self.steps.append(("expect", (kind, check)))
        return self

    def send(self, **message: Any) -> Script:
        """The referee sends ``PlayResponse(**message)``."""
        self.steps.append(("send", rpb.PlayResponse(**message)))
        return self

    def fail(self, code: grpc.StatusCode, details: str = "") -> Script:
        self.steps.append(("fail", (code, details)))
        return self

    def close(self) -> Script:
        self.steps.append(("close", None))
        return self

    def hang(self) -> Script:
        """Stay open until the client cancels."""
        self.steps.append(("hang", None))
        return self


class ScriptedTransport:
    """``connect(address)`` then ``play()`` runs the next script queued for that address; a
    stream with no script left fails UNAVAILABLE (nobody listens there)."""

    def __init__(self) -> None:
        self.scripts: dict[str, deque[Script]] = {}
        self.sent: list[tuple[str, rpb.PlayRequest]] = []
        self.streams: list[str] = []  # addresses, in the order streams were opened

    def at(self, address: str) -> Script:
        script = Script()
        self.scripts.setdefault(address, deque()).append(script)
        return script

    def connect(self, address: str) -> _Connection:
        return _Connection(self, address)

    def left(self) -> int:
        """Scripts not played."""
        return sum(len(q) for q in self.scripts.values())


class _Connection:
    def __init__(self, transport: ScriptedTransport, address: str) -> None:
        self.transport = transport
        self.address = address

    def play(self, requests: AsyncIterator[rpb.PlayRequest]) -> _Call:
        self.transport.streams.append(self.address)
        queue = self.transport.scripts.get(self.address)
        script = queue.popleft() if queue else Script().fail(grpc.StatusCode.UNAVAILABLE)
        return _Call(self.transport, self.address, script, requests)

    async def close(self) -> None:
        return None


class _Call:
    def __init__(
        self,
        transport: ScriptedTransport,
        address: str,
        script: Script,
        requests: AsyncIterator[rpb.PlayRequest],
    ) -> None:
        self.transport, self.address, self.script = transport, address, script
        self.requests = requests
        self._cancelled = asyncio.Event()
        self._done = False

    def __aiter__(self) -> AsyncIterator[rpb.PlayResponse]:
        return self._run()

    def cancel(self) -> bool:
        self._cancelled.set()
        return True

    def done(self) -> bool:
        return self._done

    async def _run(self) -> AsyncIterator[rpb.PlayResponse]:
        try:
            for step, arg in self.script.steps:
                self._check_cancel()
                if step == "expect":
                    await self._expect(*arg)  # type: ignore[misc]
                elif step == "send":
                    yield arg  # type: ignore[misc]
                elif step == "fail":
                    raise _error(*arg)  # type: ignore[misc]
                elif step == "close":
                    return
                elif step == "hang":
                    await self._cancelled.wait()
            self._check_cancel()
        finally:
            self._done = True

    async def _expect(self, kind: str, check: Check | None) -> None:
        nxt = asyncio.ensure_future(anext(self.requests))
        stop = asyncio.ensure_future(self._cancelled.wait())
        await asyncio.wait([nxt, stop], return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        if not nxt.done():
            nxt.cancel()
            self._check_cancel()
        request = nxt.result()
        self.transport.sent.append((self.address, request))
        got = request.WhichOneof("message")
        assert got == kind, f"expected {kind}, the client sent {got}: {request}"
        if check is not None:
            check(request)

    def _check_cancel(self) -> None:
        if self._cancelled.is_set():
            raise _error(grpc.StatusCode.CANCELLED, "cancelled by the client")


def _error(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details)
