"""The ladder store opened for reading only, for the web.

The referee's :class:`~kozel.ladder.store.Store` begins every SQLite transaction with
``BEGIN IMMEDIATE`` (it takes the write lock at once, so two result commits never race). A web
page only reads: its transactions are deferred (in WAL mode a reader never blocks the
referee's commits) and its connections refuse writes (SQLite ``query_only``, PostgreSQL
``default_transaction_read_only``). The query methods are the store's own.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.orm import sessionmaker

from kozel.ladder.store import Store


class ReadOnlyStore(Store):
    """A :class:`Store` for queries only (no migrations, no writes)."""

    def __init__(self, url: str) -> None:  # no super().__init__(): it would set write-locking
        if url.startswith("sqlite"):
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
