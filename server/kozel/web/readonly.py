"""The ladder store opened for reading only, for the web.

The referee's :class:`~kozel.ladder.store.Store` begins every SQLite transaction with
``BEGIN IMMEDIATE`` (it takes the write lock at once, so two result commits never race). A web
page only reads: its transactions are deferred (in WAL mode a reader never blocks the
referee's commits) and its connections refuse writes. SQLite files are opened read-only
(``mode=ro``: no statement can make such a connection write) and ``query_only``; PostgreSQL
sessions are ``default_transaction_read_only`` (a session could switch that off: a role with
only SELECT rights, given as ``web.database_url``, is the barrier that cannot be). The query
methods are the store's own.

A web child learns the database URL, password included, from its environment
(``KOZEL_WEB_DATABASE_URL``), never from its command line, which any local user can read.
"""

from __future__ import annotations

import sqlite3
from typing import Any
from urllib.parse import quote

from sqlalchemy import create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import sessionmaker

from kozel.ladder.store import Store

DATABASE_URL_ENV = "KOZEL_WEB_DATABASE_URL"  # how `kozel web` may be given its --db


class ReadOnlyStore(Store):
    """A :class:`Store` for queries only (no migrations, no writes)."""

    def __init__(self, url: str) -> None:  # no super().__init__(): it would set write-locking
        if url.startswith("sqlite"):
            path = make_url(url).database or ""
            if path and path != ":memory:":
                uri = f"file:{quote(path)}?mode=ro"
                self.engine = create_engine(
                    "sqlite://",
                    creator=lambda: sqlite3.connect(uri, uri=True, check_same_thread=False),
                    pool_pre_ping=True,
                )
            else:
                self.engine = create_engine(url, pool_pre_ping=True)
            event.listen(self.engine, "connect", _sqlite_read_only)
            event.listen(self.engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN"))
        else:
            self.engine = create_engine(
                url,
                pool_pre_ping=True,
                connect_args={"options": "-c default_transaction_read_only=on"},
            )
        self._session = sessionmaker(self.engine, expire_on_commit=False)
        self.keeps_replays = self.engine.dialect.name == "postgresql"


def _sqlite_read_only(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.isolation_level = None  # transactions are begun explicitly (deferred)
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA query_only=ON")
    cur.close()
