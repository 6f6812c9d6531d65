"""Failed logins slowed down per address: bad ladder tokens (``Hello.token``) and bad admin
tokens (``authorization: Bearer``).

Each failure from an address is answered later than the one before (``first_s``, doubling up
to ``max_s``); an address quiet for ``memory_s`` starts again from ``first_s``. A success
does not clear the count: many clients may share one address (a NAT, a load balancer), and
one of them guessing must not be helped by another logging in. Each delayed refusal holds a
slot of its caller (a stream, a call), so at most ``max_pending`` wait at once per address.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_HOSTS = 10_000  # addresses remembered; past it the memory starts afresh


@dataclass
class FailureThrottle:
    """Counts and delays of failed logins, by address."""

    first_s: float = 0.05
    max_s: float = 5.0
    memory_s: float = 600.0
    max_pending: int = 4
    clock: Callable[[], float] = time.monotonic
    failures: dict[str, tuple[int, float]] = field(default_factory=dict)  # count, last
    pending: dict[str, int] = field(default_factory=dict)  # refusals waiting out a delay

    def failed(self, host: str) -> tuple[int, float]:
        """Count a failure from ``host``: its number in the current spell, and the delay
        before it is answered."""
        if len(self.failures) > MAX_HOSTS:
            self.failures.clear()
        now = self.clock()
        n, last = self.failures.get(host, (0, now))
        n = 1 if now - last > self.memory_s else n + 1
        self.failures[host] = (n, now)
        return n, min(self.first_s * 2 ** min(n - 1, 64), self.max_s)

    def crowded(self, host: str) -> bool:
        """Whether ``host`` already has ``max_pending`` refusals waiting out their delay."""
        return self.pending.get(host, 0) >= self.max_pending

    async def wait(self, host: str, delay: float) -> None:
        """Sleep ``delay`` seconds as one of ``host``'s pending refusals."""
        self.pending[host] = self.pending.get(host, 0) + 1
        try:
            await asyncio.sleep(delay)
        finally:
            if (left := self.pending.pop(host) - 1) > 0:
                self.pending[host] = left
