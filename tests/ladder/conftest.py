"""Store fixtures: every store test runs on SQLite and on a real PostgreSQL.

PostgreSQL comes from ``KOZEL_TEST_DATABASE_URL`` (``.ci/run`` starts one and sets it). Each
test gets a database of its own, created and dropped around it. Without the variable the
PostgreSQL runs are skipped, except in CI, where they fail.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg.errors import InsufficientPrivilege
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DBAPIError

from kozel.ladder.store import Store

PG_URL = os.environ.get("KOZEL_TEST_DATABASE_URL", "")


def _pg_database() -> Iterator[str]:
    """A fresh database on the shared PostgreSQL, dropped afterwards."""
    if not PG_URL:
        if os.environ.get("CI"):
            pytest.fail("CI must provide PostgreSQL: KOZEL_TEST_DATABASE_URL is not set")
        pytest.skip("no PostgreSQL: set KOZEL_TEST_DATABASE_URL (.ci/run does) to run these")
    name = f"kozel_t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        _drop(admin, name)
        admin.dispose()


def _drop(admin: Engine, name: str, timeout: float = 60.0) -> None:
    """DROP DATABASE ... WITH (FORCE), again while it is refused: an autovacuum worker on the
    database is a process a role without pg_signal_backend may not end (it ends on its own)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            return
        except DBAPIError as exc:
            if not isinstance(exc.orig, InsufficientPrivilege) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'kozel.db'}"
        return
    yield from _pg_database()


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store(store_url)
    s.migrate()
    yield s
    s.close()


class PrivatePostgres:
    """A PostgreSQL server of the test's own, on a free port, that the test may stop and start
    (the shared one from .ci/run must never go down under other tests)."""

    def __init__(self, bin_dir: Path, port: int) -> None:
        import tempfile

        self.bin_dir, self.port = bin_dir, port
        self.dir = Path(tempfile.mkdtemp(prefix="kozel-pg-", dir="/tmp"))
        self.data = self.dir / "data"
        self._as = []
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            import shutil

            shutil.chown(self.dir, "postgres")
            self._as = ["runuser", "-u", "postgres", "--"]
        self._run("initdb", "-D", str(self.data), "-U", "kozel", "--auth=trust", "-E", "UTF8")
        self.url = f"postgresql+psycopg://kozel@127.0.0.1:{port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        import subprocess

        subprocess.run(
            [*self._as, str(self.bin_dir / tool), *args],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=120,
        )

    def start(self) -> None:
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-w",
            "-t",
            "60",
            "-l",
            str(self.dir / "log"),
            "-o",
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off",
            "start",
        )

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-w", "-t", "60", "-m", "fast", "stop")

    def remove(self) -> None:
        import shutil

        with contextlib.suppress(Exception):  # already stopped
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def private_postgres() -> Iterator[PrivatePostgres]:
    from tests.ladder.fleet import free_port, pg_binaries

    bin_dir = pg_binaries()
    if bin_dir is None:
        if os.environ.get("CI"):
            pytest.fail("CI must provide PostgreSQL's server programs (.ci/run installs them)")
        pytest.skip("no PostgreSQL server programs (apt-get install postgresql)")
    pg = PrivatePostgres(bin_dir, free_port())
    pg.start()
    try:
        yield pg
    finally:
        pg.remove()


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh database on the shared PostgreSQL (skipped without one, outside CI)."""
    yield from _pg_database()
