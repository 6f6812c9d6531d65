"""A referee's presence and scheduler roles as PostgreSQL advisory locks.

Each referee holds, on one connection of its own (never the pool's), a session-level advisory
lock on a key registered in its ``referees`` row: while its process lives the lock is held, and
when the process dies (a crash, SIGKILL, a lost machine) PostgreSQL drops the connection and the
lock with it. Other referees read ``pg_locks`` (:func:`held_keys`), so they see a dead referee
within one poll, not when its lease lapses. On the same connection it tries the scheduler lock
of each shared ladder: one holder per ladder, replaced within one poll after a crash and at once
after a clean stop or a drain (:meth:`Presence.release_ladders`).

SQLite has no such locks: there the ladders' host rows and leases decide (one machine).
Blocking: call from a worker thread, one call at a time.
"""

from __future__ import annotations

import secrets
import zlib
from collections.abc import Sequence

import structlog
from sqlalchemy import text, update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from kozel.ladder.models import RefereeRow
from kozel.ladder.store import Store

log = structlog.get_logger("kozel.presence")

# The two-key advisory lock namespaces (the first key; pg_locks.classid).
PRESENCE_NS = 0x4B5A0001
SCHEDULER_NS = 0x4B5A0002


def ladder_key(ladder: str) -> int:
    """A ladder's scheduler lock key (two ladders that collide share one scheduler: harmless)."""
    return zlib.crc32(ladder.encode()) & 0x7FFFFFFF


def held_keys(s: Session) -> set[int] | None:
    """The presence keys held now (None on SQLite: no presence locks there)."""
    held = _holders(s, PRESENCE_NS)
    return None if held is None else set(held)


def scheduler_holders(s: Session) -> dict[int, int] | None:
    """Which backend process holds each ladder's scheduler lock, by ladder key (None on
    SQLite)."""
    return _holders(s, SCHEDULER_NS)


def presence_pids(s: Session) -> dict[int, int]:
    """Which backend process holds each presence key (a referee's connection)."""
    return _holders(s, PRESENCE_NS) or {}


def _holders(s: Session, ns: int) -> dict[int, int] | None:
    if s.get_bind().dialect.name != "postgresql":
        return None
    rows = s.execute(
        text(
            "SELECT objid, pid FROM pg_locks WHERE locktype = 'advisory' AND classid = :ns "
            "AND objsubid = 2 AND granted"
        ),
        {"ns": ns},
    )
    return {int(k): int(pid) for k, pid in rows}


class Presence:
    """This referee's locks (see the module docstring)."""

    def __init__(self, store: Store, referee_id: str) -> None:
        self.store = store
        self.referee_id = referee_id
        self.enabled = store.engine.dialect.name == "postgresql"
        self._conn: Connection | None = None
        self.key = 0
        self.ladders: set[str] = set()  # scheduler locks held

    def hold(self, ladders: Sequence[str]) -> set[str]:
        """Keep the presence lock (reconnecting and registering a new key after a lost
        connection) and try the scheduler lock of each of ``ladders``; returns those held."""
        if not self.enabled:
            return set()
        conn = self._connection()
        try:
            conn.exec_driver_sql("SELECT 1")
            for ladder in ladders:
                if ladder not in self.ladders and _try(conn, SCHEDULER_NS, ladder_key(ladder)):
                    self.ladders.add(ladder)
                    log.info("scheduler_taken", ladder=ladder, referee=self.referee_id)
        except Exception:
            self._drop()
            raise
        return set(self.ladders)

    def release_ladders(self) -> None:
        """Give up every scheduler role now (a drain): another referee takes them at its next
        poll."""
        if self._conn is None:
            self.ladders.clear()
            return
        try:
            for ladder in sorted(self.ladders):
                self._conn.execute(
                    text("SELECT pg_advisory_unlock(:ns, :key)"),
                    {"ns": SCHEDULER_NS, "key": ladder_key(ladder)},
                )
            self._conn.commit()
        except Exception:  # noqa: BLE001 - a dead connection holds nothing either
            self._drop()
        self.ladders.clear()

    def close(self) -> None:
        """Let go of everything (a clean stop)."""
        self._drop()

    def _connection(self) -> Connection:
        if self._conn is not None:
            return self._conn
        conn = self.store.engine.connect()
        try:
            conn.execution_options(isolation_level="AUTOCOMMIT")
            key = 0
            for _ in range(16):
                key = 1 + secrets.randbelow(0x7FFFFFFE)
                if _try(conn, PRESENCE_NS, key):
                    break
            else:
                raise RuntimeError("no free presence lock key in 16 tries")
            with self.store.transaction() as s:
                s.execute(
                    update(RefereeRow).where(RefereeRow.id == self.referee_id).values(lock_key=key)
                )
        except Exception:
            conn.invalidate()
            conn.close()
            raise
        self._conn, self.key, self.ladders = conn, key, set()
        return conn

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        self.ladders.clear()
        if conn is not None:
            try:
                conn.invalidate()  # the pool must not keep a connection holding our locks
                conn.close()
            except Exception:
                log.debug("presence_close_failed", exc_info=True)


def _try(conn: Connection, ns: int, key: int) -> bool:
    got = conn.execute(
        text("SELECT pg_try_advisory_lock(:ns, :key)"), {"ns": ns, "key": key}
    ).scalar_one()
    conn.commit()
    return bool(got)
