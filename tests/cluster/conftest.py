"""Several referee processes sharing one ladder through one PostgreSQL."""

from __future__ import annotations

from tests.ladder.conftest import pg_url  # noqa: F401 (the fixture)
