"""The web's read-only store: it reads what the referee's store wrote, refuses writes, and an
open read never holds back a result commit (SQLite) ; PostgreSQL when the test server is set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from kozel.ladder.cluster_status import read_status
from kozel.ladder.store import Store
from kozel.web.readonly import ReadOnlyStore
from tests.ladder.conftest import store_url  # noqa: F401 (the fixture: SQLite and PostgreSQL)


def test_reads_what_the_store_wrote_and_refuses_writes(store_url: str, tmp_path: Path) -> None:  # noqa: F811
    url = store_url
    which = "sqlite" if url.startswith("sqlite") else "postgresql"
    store = Store(url)
    store.migrate()
    name = f"ro-{os.getpid()}-{tmp_path.name}"[:64]
    store.register_bot(name)
    ro = ReadOnlyStore(url)
    try:
        assert ro.bot(name) is not None
        assert read_status(ro).ladders == ()  # the ladders' states (home page), read only
        with pytest.raises(DBAPIError):
            ro.register_bot(name + "-2")
        assert store.bot(name + "-2") is None
        if which == "sqlite":
            # A read transaction left open does not take the write lock: the referee commits.
            with ro.engine.connect() as conn:
                conn.execute(text("SELECT count(*) FROM bots")).scalar()
                assert conn.in_transaction()
                store.register_bot(name + "-3")
            assert ro.bot(name + "-3") is not None
    finally:
        ro.close()
        store.close()


def test_a_read_only_sqlite_connection_cannot_be_made_to_write(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kozel.db'}"
    store = Store(url)
    store.migrate()
    ro = ReadOnlyStore(url)
    try:
        with ro.engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA query_only=OFF")  # what a compromised page could do
            with pytest.raises(DBAPIError, match="readonly"):
                conn.exec_driver_sql("DELETE FROM bots")
    finally:
        ro.close()
        store.close()
