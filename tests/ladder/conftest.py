"""Store fixtures: every store test runs on SQLite and on a real PostgreSQL.

PostgreSQL comes from ``KOZEL_TEST_DATABASE_URL`` (``.ci/run`` starts one and sets it). Each
test gets a database of its own, created and dropped around it. Without the variable the
PostgreSQL runs are skipped, except in CI, where they fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from kozel.ladder.store import Store

PG_URL = os.environ.get("KOZEL_TEST_DATABASE_URL", "")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'kozel.db'}"
        return
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
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store(store_url)
    s.migrate()
    yield s
    s.close()
