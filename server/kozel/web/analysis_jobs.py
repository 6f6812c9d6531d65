"""Replay analyses for the web, computed on demand in a bounded background worker.

The first ``GET /api/matches/{id}/analysis`` of a replay queues its analysis and answers 202
with the progress; later ones answer 202 with the progress until the result is ready, then
200 with it (kept in a bounded cache, by replay digest and settings). At most one analysis
runs at a time, in one worker process (started on first use, at the lowest priority), deal by
deal, never in the event loop; at most ``queue`` wait. With a CPU cap on the web
(``cpu_share``), the worker throttles itself to ``share`` of it and the requests' budget is
lowered by as much while it runs, so the two together stay within the cap.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import os
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kozel.analysis.review import Settings
from kozel.server.replay.file import ReplayError, decode_replay
from kozel.web.analysis import AnalysisError, analyze_deal, assemble, cache_key, check
from kozel.web.cpu import CpuBudget


def _lowest_priority() -> None:  # pragma: no cover - runs in the worker process
    with contextlib.suppress(OSError):
        os.nice(19)


@dataclass
class Job:
    """One analysis, queued or running: its progress in steps, or why it failed."""

    total: int
    done: int = 0
    running: bool = False
    error: str | None = None
    task: asyncio.Task[None] | None = field(default=None, repr=False)

    def progress(self) -> dict[str, Any]:
        return {
            "status": "running" if self.running else "queued",
            "done": self.done,
            "total": self.total,
        }


class Busy(Exception):
    """The queue of analyses is full."""


class AnalysisJobs:
    """The web's analyses (see the module docstring). ``budget`` is the web's CPU budget
    (None: no cap), ``share`` the part of it the worker may use."""

    def __init__(
        self,
        settings: Settings,
        *,
        budget: CpuBudget | None = None,
        share: float = 0.5,
        cache: int = 16,
        queue: int = 4,
    ) -> None:
        self.settings = settings
        self.budget = budget
        self.worker_share = budget.share * share if budget is not None else 0.0
        self.cache_size = cache
        self.queue = queue
        self._done: OrderedDict[str, bytes] = OrderedDict()
        self._failed: OrderedDict[str, str] = OrderedDict()
        self._jobs: dict[str, Job] = {}
        self._turn = asyncio.Semaphore(1)
        self._pool: ProcessPoolExecutor | None = None

    def lookup(self, data: bytes) -> tuple[str, bytes | Job | str | None]:
        """The replay's key and what is known of its analysis: the result's JSON, the job in
        progress, why it failed, or None."""
        key = cache_key(data, self.settings)
        if key in self._done:
            self._done.move_to_end(key)
            return key, self._done[key]
        if key in self._jobs:
            return key, self._jobs[key]
        return key, self._failed.get(key)

    def start(self, key: str, data: bytes) -> Job:
        """Queue the analysis of ``data``; :class:`Busy` when the queue is full,
        :class:`AnalysisError` for a replay outside the analysis."""
        if len(self._jobs) >= self.queue:
            raise Busy(f"{len(self._jobs)} analyses are queued already; ask again later")
        try:
            replay = decode_replay(data)
        except ReplayError as exc:
            raise AnalysisError(f"the replay cannot be read: {exc}") from None
        check(replay)
        job = Job(total=sum(len(d.steps) for d in replay.deals))
        self._jobs[key] = job
        job.task = asyncio.create_task(self._run(key, data, job))
        return job

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            spawn = multiprocessing.get_context("spawn")  # no fork of a threaded server
            self._pool = ProcessPoolExecutor(1, mp_context=spawn, initializer=_lowest_priority)
        return self._pool

    async def _run(self, key: str, data: bytes, job: Job) -> None:
        try:
            async with self._turn:
                job.running = True
                if self.budget is not None:
                    self.budget.reserved = self.worker_share
                try:
                    body = await self._analyse(data, job)
                finally:
                    if self.budget is not None:
                        self.budget.reserved = 0.0
            self._keep(self._done, key, body)
        except (AnalysisError, ReplayError, OSError, RuntimeError) as exc:
            self._keep(self._failed, key, str(exc))
        finally:
            del self._jobs[key]

    async def _analyse(self, data: bytes, job: Job) -> bytes:
        loop = asyncio.get_running_loop()
        replay = decode_replay(data)
        deals = []
        for i, d in enumerate(replay.deals):
            deals.append(
                await loop.run_in_executor(
                    self._executor(), analyze_deal, data, i, self.settings, self.worker_share
                )
            )
            job.done += len(d.steps)
        result = assemble(replay, deals, self.settings)
        return json.dumps(result, separators=(",", ":")).encode()

    def _keep(self, store: OrderedDict[str, Any], key: str, value: Any) -> None:
        store[key] = value
        while len(store) > self.cache_size:
            store.popitem(last=False)

    async def close(self) -> None:
        """Stop: queued analyses are dropped, the worker process ends."""
        for job in list(self._jobs.values()):
            if job.task is not None:
                job.task.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
