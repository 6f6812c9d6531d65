"""Store calls in one ordered queue, run in a worker thread, retried through outages.

The event loop never waits for the database: calls run one at a time in a worker thread, in
the order they were made (a bot's rating row before its match, a match's start before its
result). A call that fails transiently (connection refused or lost, timeout, serialization
conflict: :func:`kozel.ladder.store.is_transient`) is retried with exponential backoff for as
long as the referee runs, and the calls behind it wait, so results are committed in order once
the store is back. A call the store refuses (:class:`StoreError` and other errors) is logged and
dropped. Every call must be idempotent: a retry after a lost reply must not record twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from kozel.ladder.store import is_transient
from kozel.server import metrics

log = structlog.get_logger("kozel.store")


@dataclass(frozen=True, slots=True)
class Backoff:
    """Retry delays: ``first`` doubled on every failure up to ``most`` (jittered by 20 %)."""

    first_s: float = 0.1
    most_s: float = 5.0

    def delay(self, failures: int) -> float:
        base = min(self.most_s, self.first_s * 2 ** max(failures - 1, 0))
        return base * random.uniform(0.8, 1.2)


class StoreQueue:
    """Queue a blocking store call with :meth:`submit`; ``on_health(ok)`` hears when calls
    start failing transiently and when they succeed again."""

    def __init__(
        self, backoff: Backoff | None = None, on_health: Callable[[bool], None] | None = None
    ) -> None:
        self.backoff = backoff or Backoff()
        self._on_health = on_health
        self._calls: deque[tuple[Callable[..., object], tuple]] = deque()
        self.done = 0  # calls done (committed or refused), for flush's progress
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self.healthy = True  # False while the head call keeps failing transiently
        self._task: asyncio.Task[None] | None = None

    @property
    def backlog(self) -> int:
        """Calls waiting, the one in progress included."""
        return len(self._calls)

    def submit(self, call: Callable[..., object], *args: object) -> None:
        """Queue ``call(*args)`` behind the earlier calls."""
        self._calls.append((call, args))
        metrics.STORE_BACKLOG.set(len(self._calls))
        self._idle.clear()
        self._wake.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="store-queue")

    async def _run(self) -> None:
        while True:
            if not self._calls:
                self._idle.set()
                self._wake.clear()
                await self._wake.wait()
                continue
            call, args = self._calls[0]
            failures = 0
            while True:
                try:
                    await asyncio.to_thread(call, *args)
                except Exception as exc:
                    if is_transient(exc):
                        failures += 1
                        metrics.STORE_ERRORS.labels("transient").inc()
                        if failures == 1 or failures % 20 == 0:
                            log.warning(
                                "store_unreachable",
                                call=_name(call),
                                failures=failures,
                                backlog=len(self._calls),
                                error=str(exc).splitlines()[0][:200],
                            )
                        self._set_health(False)
                        await asyncio.sleep(self.backoff.delay(failures))
                        continue
                    metrics.STORE_ERRORS.labels("refused").inc()
                    log.error("store_call_refused", call=_name(call), exc_info=exc)
                break
            self._set_health(True)
            self._calls.popleft()
            self.done += 1
            metrics.STORE_BACKLOG.set(len(self._calls))

    def _set_health(self, ok: bool) -> None:
        if ok == self.healthy:
            return
        self.healthy = ok
        if ok:
            log.info("store_reachable", backlog=len(self._calls) - 1)
        if self._on_health is not None:
            self._on_health(ok)

    async def flush(self, timeout: float | None = None) -> int:
        """Wait for every queued call while they make progress: give up once none has been
        done for ``timeout`` s (a store that answers, however slowly, is drained; one that
        does not is left to the replays). Returns how many are left (their results are in the
        replays, which the next start commits)."""
        while self._calls:
            done = self.done
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._idle.wait()
            if self.done == done:  # nothing done for ``timeout`` s: the store does not answer
                break
        return len(self._calls)

    async def close(self) -> None:
        """Stop the worker (after :meth:`flush`); calls still queued are dropped."""
        await cancel(self._task)
        self._task = None


async def cancel(task: asyncio.Task[None] | None) -> None:
    """Cancel a background task and wait until it has stopped."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _name(call: Callable[..., object]) -> str:
    name = getattr(call, "__qualname__", None) or getattr(call, "__name__", None)
    return str(name) if name else repr(call)
