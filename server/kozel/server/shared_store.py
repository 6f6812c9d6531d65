"""The referee's side of the ladder store, which other referees may share.

One object owns, from start to stop: the store itself, the data-folder lock and the referee id,
the ordered write queue (:mod:`kozel.server.store_queue`), the lease and the ladders this referee
hosts (:mod:`kozel.server.lease`), and the recovery at start (:mod:`kozel.server.recovery`).
It says whether rated play may run (``rated_ok``): the store answers and the ladder is held.
Its stop flushes the queue, gives the lease back and closes the store (on SQLite this
checkpoints the WAL into ``kozel.db``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from kozel.ladder.store import LadderState, Store, default_url
from kozel.server import metrics
from kozel.server.cluster import Cluster
from kozel.server.config import ServerConfig
from kozel.server.identity import FolderLock, referee_id
from kozel.server.lease import LeaseKeeper
from kozel.server.lobby import Lobby
from kozel.server.recovery import Recovery, recover
from kozel.server.replay.archive import FolderArchive, ReplayArchive, StoreArchive
from kozel.server.store_queue import StoreQueue
from kozel.server.version import VERSION

log = structlog.get_logger("kozel.store")


@dataclass
class Opened:
    """What the blocking part of the start found."""

    store: Store
    lock: FolderLock
    referee_id: str
    others: dict[str, str]  # ladders other live referees host, by ladder (standby)
    recovery: Recovery
    replays: ReplayArchive
    states: dict[str, LadderState]  # the ladders' states (a stopped ladder stays stopped)


def open_store(config: ServerConfig, replays: ReplayArchive) -> Opened:
    """(Blocking.) Lock the data folder, migrate, register the lease, take the ladders (or
    refuse: :class:`~kozel.ladder.store.StoreError`), and recover from the replays."""
    lock = FolderLock(config.data_dir)
    store: Store | None = None
    try:
        rid = referee_id(config.data_dir, config.referee_id)
        store = Store(config.database_url or default_url(config.data_dir))
        store.migrate()
        if store.keeps_replays and isinstance(replays, FolderArchive):
            # The store's copies, for every referee.
            replays = StoreArchive(replays.folder, store, replays.limits)
        names = [spec.name for spec in config.ladders]
        # Shared ladders: every referee serves them; the host row is only the scheduler's.
        standby = config.ladder_standby or config.cluster
        others = store.register_referee(rid, names, config.lease_s, standby)
        recovery = recover(store, rid, replays)
        states = store.ladder_states()
    except BaseException:
        if store is not None:
            store.close()
        lock.release()
        raise
    return Opened(store, lock, rid, others, recovery, replays, states)


class SharedStore:
    """The store parts of a running referee (see the module docstring)."""

    def __init__(
        self, opened: Opened, config: ServerConfig, on_change: Callable[[], None], lobby: Lobby
    ) -> None:
        self.store = opened.store
        self.lobby = lobby
        self.streams: Callable[[], int] = lambda: 0  # open Play streams (set by the referee)
        self.referee_id = opened.referee_id
        self.config = config
        self._lock = opened.lock
        self._on_change = on_change
        self.others = dict(opened.others)
        names = [spec.name for spec in config.ladders]
        # In a cluster every referee serves (and settles orphans of) every ladder.
        self.held: set[str] = {n for n in names if config.cluster or n not in self.others}
        self.queue = StoreQueue(on_health=lambda ok: self._changed())
        self.keeper = LeaseKeeper(
            self.store,
            self.referee_id,
            names,
            config.lease_s,
            self.held,
            self._changed,
            opened.replays,
            status=self.status,
            on_states=self.apply_states,
            draining=lambda: lobby.draining,
            claim=not config.cluster,
        )
        self._states = opened.states
        self.cluster: Cluster | None = None  # set by the referee when its ladders are shared
        metrics.STORE_AVAILABLE.set(1)
        metrics.STORE_BACKLOG.set(0)

    def apply_states(self, states: dict[str, LadderState] | None = None) -> None:
        """The ladders' states as the store holds them (each referee obeys them)."""
        for name, state in (self._states if states is None else states).items():
            rt = self.lobby.ladders.get(name)
            if rt is not None:
                rt.apply_state(state)

    def status(self) -> dict[str, object]:
        """What this referee publishes in the store (``kozel cluster status``, the scheduler's
        choice of hosts)."""
        lobby = self.lobby
        return {
            "running": len(lobby.matches),
            "capacity": lobby.match_cap,
            "streams": self.streams(),
            "waiting": sum(len(rt.waiting) for rt in lobby.ladders.values()),
            "admits": lobby.admits(),
            "version": VERSION,
            "lease_s": self.config.lease_s,
            "ladders": {
                name: {
                    "waiting": len(rt.waiting),
                    "stalled": rt.stalled,
                    "capped": list(rt.capped),
                    "shared": rt.shared,
                    "players": rt.spec.players,
                }
                for name, rt in lobby.ladders.items()
            },
        }

    @property
    def available(self) -> bool:
        """The store answers: the write queue is not stuck and the lease was renewed."""
        return self.queue.healthy and self.keeper.ok

    def rated_ok(self, ladder: str) -> bool:
        """Whether a rated match of ``ladder`` may start here now."""
        return self.available and (self.config.cluster or ladder in self.held)

    def standby_reason(self, ladder: str) -> str:
        """Why this referee does not take bots for ``ladder`` ("" when it does)."""
        if ladder in self.held or self.config.cluster:
            return ""
        host = self.others.get(ladder, "another referee")
        return (
            f"ladder {ladder!r} is served by referee {host!r}; this referee "
            f"({self.referee_id}) is its standby and takes over when that one stops"
        )

    def start(self) -> None:
        self.keeper.start()
        if self.cluster is not None:
            self.cluster.start()

    def _changed(self) -> None:
        metrics.STORE_AVAILABLE.set(int(self.available))
        self._on_change()

    async def stop(self) -> None:
        """Flush queued writes (up to ``store_flush_timeout_s``), give back the lease and the
        ladders, close the store. What is left unwritten is in the replays: the next start
        commits it."""
        if self.cluster is not None:
            await self.cluster.stop()  # (again: the referee stops it first)
        await self.keeper.stop()
        left = await self.queue.flush(self.config.store_flush_timeout_s)
        await self.queue.close()
        if left:
            log.warning(
                "store_writes_left",
                backlog=left,
                note="their results are in the replay folder; the next start commits them",
            )
        else:
            try:
                await asyncio.to_thread(self.store.release_referee, self.referee_id)
            except Exception:
                log.warning("lease_not_released", exc_info=True)
        await asyncio.to_thread(self.store.close)
        self._lock.release()
