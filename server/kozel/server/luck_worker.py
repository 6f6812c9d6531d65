"""The referee's luck worker: after a ladder match or a tournament game is committed, its luck
(docs/luck.md) is computed from its replay and stored (:mod:`kozel.ladder.luck_store`), never
in the event loop or a match's path.

One thread of its own, at the lowest priority, takes at most ``batch`` finished matches per
pass that this referee hosted, or a referee that is gone (orphans: nobody else would do them),
and whose luck is not stored (ladder matches first, then tournament games), and sleeps
``idle_s`` when none are left; so matches committed while the referee was down, or before the
worker existed, are done at the next start. A duplicate match whose replay is still sealed
waits until its group is played, and a tournament game until its seed group is (its luck
would tell the bots of the later matches about their cards). Its metrics (``kozel_luck_*``,
docs/operations.md): matches corrected, stored without luck by reason, still to do, the CPU
time spent and when the last pass ended. What computes the luck (``compute``, from
:mod:`kozel.analysis` through :mod:`kozel.tools`) is handed in by the composition root
(``kozel serve``): the referee does not import the analysis."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import structlog

from kozel.ladder import luck_store
from kozel.ladder.luck_store import MatchLuck
from kozel.ladder.store import Store
from kozel.server import metrics
from kozel.server.replay.archive import ReplayArchive
from kozel.server.replay.file import ReplayError
from kozel.v1 import replay_pb2

log = structlog.get_logger("kozel.luck")

LuckCompute = Callable[[replay_pb2.Replay], MatchLuck]
BATCH = 20  # matches per pass
IDLE_S = 5.0  # the pause when no match waits


def _lowest_priority() -> None:
    with contextlib.suppress(OSError, AttributeError):  # per thread on Linux
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


class LuckWorker:
    """Computes and stores the luck of this referee's finished ladder matches and
    tournament games (``referee_id`` None: any referee's)."""

    def __init__(
        self,
        store: Store,
        replays: ReplayArchive,
        ladders: Sequence[str],
        referee_id: str | None,
        compute: LuckCompute,
        *,
        tournaments: Sequence[str] = (),
        batch: int = BATCH,
        idle_s: float = IDLE_S,
    ) -> None:
        self.store = store
        self.replays = replays
        self.ladders = list(ladders)
        self.tournaments = list(tournaments)
        self.referee_id = referee_id
        self.compute = compute
        self.batch = batch
        self.idle_s = idle_s
        self.stored = 0  # matches whose luck this worker stored
        self._sealed: set[str] = set()  # skipped until their duplicate group is played
        self._pool = ThreadPoolExecutor(1, "kozel-luck", initializer=_lowest_priority)
        for reason in luck_store.NO_LUCK:  # every series from the start, at zero
            metrics.LUCK_MISSING.labels(reason)

    async def run(self) -> None:
        """Pass after pass until cancelled; a failing store only delays it."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                try:
                    done = await loop.run_in_executor(self._pool, self.pass_once)
                except Exception:
                    log.warning("luck_pass_failed", exc_info=True)
                    done = 0
                await asyncio.sleep(self.idle_s if done < self.batch else 0)
        finally:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def pass_once(self) -> int:
        """(Blocking.) One pass: the luck of up to ``batch`` matches stored; how many."""
        self._sealed = {m for m in self._sealed if self.replays.sealed(m)}
        done = 0
        if self.ladders:
            ids = luck_store.pending(
                self.store, self.ladders, self.referee_id, self.batch, skip=self._sealed
            )
            done += self._store_each(ids, luck_store.save)
        if self.tournaments and done < self.batch:
            ids = luck_store.pending_games(
                self.store, self.tournaments, self.referee_id, self.batch - done, self._sealed
            )
            done += self._store_each(ids, luck_store.save_game)
        metrics.LUCK_PENDING.set(
            luck_store.pending_count(self.store, self.ladders, self.tournaments, self.referee_id)
        )
        metrics.LUCK_LAST_PASS.set_to_current_time()
        return done

    def _store_each(self, ids: Sequence[str], save: Callable[[Store, str, MatchLuck], bool]) -> int:
        """Compute and save the luck of ``ids`` (those still sealed here skipped); how many
        were done."""
        done = 0
        for match_id in ids:
            if self.replays.sealed(match_id):
                self._sealed.add(match_id)
                continue
            cpu = time.thread_time()
            luck = self._luck(match_id)
            metrics.LUCK_CPU.inc(time.thread_time() - cpu)
            if save(self.store, match_id, luck):
                self.stored += 1
                if luck.error:
                    metrics.LUCK_MISSING.labels(luck.reason or "failed").inc()
                else:
                    metrics.LUCK_CORRECTED.inc()
            done += 1
        return done

    def _luck(self, match_id: str) -> MatchLuck:
        """A match's luck from its replay, or why there is none."""
        try:
            replay = self.replays.read(match_id)
        except (ReplayError, OSError) as exc:
            return MatchLuck(0, error=f"the replay cannot be read: {exc}", reason="unreadable")
        if replay is None:
            return MatchLuck(0, error="no replay is kept", reason="no_replay")
        try:
            return self.compute(replay)
        except Exception as exc:  # a bug must not stop the worker: say so and go on
            log.warning("luck_failed", match_id=match_id, exc_info=True)
            return MatchLuck(0, error=f"the luck could not be computed: {exc}", reason="failed")
