"""A cap on the CPU time the web process spends: a token bucket of CPU seconds that refills at
``share`` of one core, checked before each request starts.

A referee's web child runs at idle priority, but on a small machine (two cores) a child that
fills every idle moment still slows the referee and its bots (shared cores and caches), and
the match clocks feel it in their tail. With a cap, requests wait their turn instead: the
pages get slower, the clocks do not.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

Clock = Callable[[], float]
EXEMPT = ("/healthz",)  # probes are answered at once whatever the budget


class CpuBudget:
    """``share`` of one core on average (``share`` > 0), in bursts of up to ``burst_s`` CPU
    seconds. ``cpu`` is the process's CPU time and ``now`` a monotonic wall clock (both
    injectable, for tests). ``reserved`` (below ``share``) is set aside for work done
    elsewhere (the analysis worker): the bucket refills at ``share - reserved``."""

    def __init__(
        self,
        share: float,
        burst_s: float = 0.1,
        *,
        cpu: Clock = time.process_time,
        now: Clock = time.monotonic,
    ) -> None:
        if share <= 0:
            raise ValueError("the CPU share must be above 0")
        self.share = share
        self.burst_s = burst_s
        self._cpu, self._now = cpu, now
        self._tokens = burst_s
        self._last_cpu, self._last_now = cpu(), now()
        self.reserved = 0.0

    def delay(self) -> float:
        """Seconds to wait before the next request may start (0: at once): the CPU spent since
        the last call is charged, the time passed refills the bucket."""
        cpu, now = self._cpu(), self._now()
        rate = max(self.share - self.reserved, self.share / 100)
        refill = rate * (now - self._last_now)
        self._tokens = min(self.burst_s, self._tokens + refill) - (cpu - self._last_cpu)
        self._last_cpu, self._last_now = cpu, now
        return 0.0 if self._tokens >= 0 else -self._tokens / rate


class CpuGate:
    """Turns to spend the budget: while it is spent, waiting work starts one piece at a time,
    client addresses in turn (each address's own in the order they came). A request is one
    piece, and so is each event a live stream sends: a crowd of streams or requests from
    one address waits behind itself, and a page from another address is next but one. An
    address with ``max_waiting`` requests waiting has more refused at once."""

    def __init__(self, budget: CpuBudget, max_waiting: int = 32) -> None:
        self.budget = budget
        self.max_waiting = max_waiting
        self._waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()
        self._turns: asyncio.Task[None] | None = None
        self.waited_s = 0.0  # in all, for the curious (tests, a debugger)

    async def turn(self, address: str, bounded: bool = True) -> bool:
        """Wait for ``address``'s next turn; False (at once) when ``bounded`` and the address
        has ``max_waiting`` waiting already."""
        if not self._waiting and self.budget.delay() <= 0:
            return True
        queue = self._waiting.setdefault(address, deque())
        if bounded and len(queue) >= self.max_waiting:
            if not queue:
                del self._waiting[address]
            return False
        loop = asyncio.get_running_loop()
        turn = loop.create_future()
        queue.append(turn)
        if self._turns is None or self._turns.done():
            self._turns = loop.create_task(self._give_turns())
        started = loop.time()
        try:
            await turn
        finally:
            if not turn.done():  # the client went away: its place is given up
                turn.cancel()
            self.waited_s += loop.time() - started
        return True

    async def _give_turns(self) -> None:
        while self._waiting:
            if (wait := self.budget.delay()) > 0:
                await asyncio.sleep(wait)  # the bucket refills: nothing to wait on but time
                continue
            address, queue = self._waiting.popitem(last=False)
            while queue:
                turn = queue.popleft()
                if not turn.done():
                    turn.set_result(None)
                    break
            if queue:
                self._waiting[address] = queue  # back of the line


class CpuCap:
    """ASGI middleware: an HTTP request starts on its address's turn (:class:`CpuGate`); 429
    when its address has too many waiting."""

    def __init__(self, app: Any, gate: CpuGate) -> None:
        self.app = app
        self.gate = gate

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("path") not in EXEMPT:
            client = scope.get("client")
            if not await self.gate.turn(str(client[0]) if client else ""):
                await _too_many(send)
                return
        await self.app(scope, receive, send)


async def _too_many(send: Any) -> None:
    body = b'{"detail":"too many requests from your address are waiting; retry later"}'
    await send(
        {
            "type": "http.response.start",
            "status": 429,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", b"5"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
