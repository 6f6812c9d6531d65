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


class CpuCap:
    """ASGI middleware: an HTTP request starts only when the budget allows (one at a time
    while it is spent, in the order they came)."""

    def __init__(self, app: Any, budget: CpuBudget) -> None:
        self.app = app
        self.budget = budget
        self._turn = asyncio.Lock()
        self.waited_s = 0.0  # in all, for the curious (tests, a debugger)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("path") not in EXEMPT:
            async with self._turn:
                while (wait := self.budget.delay()) > 0:
                    self.waited_s += wait
                    await asyncio.sleep(wait)
        await self.app(scope, receive, send)
