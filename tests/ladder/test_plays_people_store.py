"""The "plays people" flag of a bot account (schema 7), on SQLite and PostgreSQL: off by
default, kept through the migration from schema 6, set by the author's token or the operator."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import text

from kozel.ladder.store import MIGRATIONS, Store, StoreError


def test_a_schema_6_store_migrates_and_its_bots_do_not_play_people(store_url: str) -> None:
    store = Store(store_url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with store.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0006")
    with store.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO bots (id, name, token_hash, status, created_at) VALUES "
                "(1, 'old', 'h1', 'active', '2026-01-01')"
            )
        )
        conn.execute(  # a populated store: rows refer to the bot
            text(
                "INSERT INTO ratings (ladder, bot_id, mu, sigma, matches, wins, penalty_sum, "
                "timeouts, forfeits) VALUES ('l', 1, 25, 8.3, 0, 0, 0, 0, 0)"
            )
        )
    assert store.migrate() == "0008"
    old = store.bot("old")
    assert old is not None and old.plays_people is False
    store.set_plays_people("old", True)
    assert store.playing_people(["old", "nobody"]) == {"old"}
    store.close()


def test_the_author_sets_the_flag_with_the_bots_own_token_only(store: Store) -> None:
    mine = store.register_bot("mine")
    other = store.register_bot("other")
    assert store.bot("mine").plays_people is False  # type: ignore[union-attr]
    with pytest.raises(StoreError, match="not bot 'mine'"):
        store.set_plays_people("mine", True, token=other)
    assert store.playing_people(["mine"]) == set()
    store.set_plays_people("mine", True, token=mine)
    assert store.authenticate(mine).plays_people is True  # type: ignore[union-attr]
    assert store.playing_people(["mine", "other"]) == {"mine"}
    store.set_status("mine", "paused")  # a paused bot is not offered to people
    assert store.playing_people(["mine"]) == set()
    store.set_status("mine", "active")
    store.set_plays_people("mine", False)  # the operator, without a token
    assert store.playing_people(["mine"]) == set()
    with pytest.raises(StoreError, match="no bot named"):
        store.set_plays_people("ghost", True)
