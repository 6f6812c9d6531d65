"""A referee's membership in a shared store: its lease, its ladders, orphans it takes over.

Every ``lease_s / 4`` the keeper renews the referee's lease (on the database's clock) in a worker
thread, outside the write queue so a backlog cannot starve it, publishing the referee's status
and reading the ladders' states (started or stopped, for every referee). Every other renewal it
also claims the ladders it waits for as a standby (not in a cluster, where every referee serves
every ladder), and takes over the orphans of the ladders it hosts:
running matches whose host's lease expired, committed from the host's replay when it can be read,
else aborted (:func:`kozel.server.recovery.adopt`). A renewal that fails marks the store
unavailable (no new rated match starts) until one succeeds; a ladder that another referee took
while the lease had lapsed is no longer scheduled here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import structlog

from kozel.ladder.store import LadderState, Store, is_transient
from kozel.server import metrics
from kozel.server.recovery import adopt
from kozel.server.replay.archive import ReplayArchive
from kozel.server.store_queue import cancel

log = structlog.get_logger("kozel.lease")


class LeaseKeeper:
    """Keeps ``referee_id``'s lease; ``held`` is the set of ladders it hosts now."""

    def __init__(
        self,
        store: Store,
        referee_id: str,
        ladders: Sequence[str],
        lease_s: float,
        held: set[str],
        on_change: Callable[[], None],
        replays: ReplayArchive,
        status: Callable[[], dict[str, object]] = dict,
        on_states: Callable[[dict[str, LadderState]], None] = lambda states: None,
        draining: Callable[[], bool] = lambda: False,
        claim: bool = True,
    ) -> None:
        self.store = store
        self.replays = replays  # where orphans' replays are read from
        self.referee_id = referee_id
        self.ladders = tuple(ladders)
        self.lease_s = lease_s
        self.held = held
        self.ok = True  # the last renewal succeeded
        self._on_change = on_change
        self._status = status  # what this referee publishes with each renewal
        self._on_states = on_states  # the ladders' states, as the store holds them
        self._draining = draining
        # Claim the ladders waited for as a standby (not in a cluster: there the scheduler
        # role is an advisory lock or the scheduler's host row, kozel.ladder.presence).
        self._claim = claim
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="lease")

    async def stop(self) -> None:
        await cancel(self._task)
        self._task = None

    async def _run(self) -> None:
        beat = 0
        while True:
            await asyncio.sleep(self.lease_s / 4)
            beat += 1
            try:
                hosted, states = await asyncio.to_thread(
                    self.store.renew_lease,
                    self.referee_id,
                    self.lease_s,
                    self._status(),
                    self._draining(),
                )
                self._on_states(states)
                if self._claim:
                    self._lost(self.held - hosted)
                if beat % 2 == 0:
                    await self._sweep()
            except Exception as exc:
                if not is_transient(exc):
                    log.exception("lease_renewal_failed")
                metrics.STORE_ERRORS.labels("transient" if is_transient(exc) else "refused").inc()
                self._set(False)
                continue
            self._set(True)

    async def _sweep(self) -> None:
        """Claim the ladders waited for, then adopt the orphans of the ladders held."""
        waiting = [name for name in self.ladders if name not in self.held]
        if waiting and self._claim:
            others = await asyncio.to_thread(self.store.claim_ladders, self.referee_id, waiting)
            taken = [name for name in waiting if name not in others]
            if taken:
                self.held.update(taken)
                log.warning("ladders_taken_over", ladders=taken)
                self._on_change()
        if not self.held:
            return
        orphans = await asyncio.to_thread(
            self.store.claim_orphans, self.referee_id, sorted(self.held)
        )
        if orphans:
            done = await asyncio.to_thread(
                adopt, self.store, self.referee_id, orphans, self.replays
            )
            metrics.ORPHANS.labels("committed").inc(len(done.committed))
            metrics.ORPHANS.labels("aborted").inc(len(done.aborted))
            log.warning("orphans_taken_over", committed=done.committed, aborted=done.aborted)
            self._on_change()

    def _lost(self, ladders: set[str]) -> None:
        """Ladders another referee took while this one's lease had lapsed: schedule them no
        more (their running matches here still finish and commit); wait for them as a
        standby."""
        if ladders:
            self.held.difference_update(ladders)
            log.warning(
                "ladders_lost",
                ladders=sorted(ladders),
                note="another referee took them over while this lease had lapsed",
            )
            self._on_change()

    def _set(self, ok: bool) -> None:
        if ok != self.ok:
            self.ok = ok
            metrics.LEASE_OK.set(int(ok))
            log.warning("lease_renewed" if ok else "lease_renewal_failing", referee=self.referee_id)
            self._on_change()
