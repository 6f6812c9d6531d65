"""The store fixtures of the ladder tests: the tournaments' SQL runs on SQLite and PostgreSQL."""

from __future__ import annotations

from tests.ladder.conftest import store, store_url  # noqa: F401 (the fixtures)
