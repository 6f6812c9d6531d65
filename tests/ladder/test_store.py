"""The ladder store on SQLite and PostgreSQL: schema, accounts, atomic results, aborts."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from kozel.engine.match import MatchOutcome, standing_ranks
from kozel.ladder.ratings import Rating
from kozel.ladder.store import SeatResult, Store, StoreError, hash_token
from kozel.server.replay.archive import FolderArchive


def test_migrations_bring_the_schema_to_the_newest_version(store_url: str) -> None:
    store = Store(store_url)
    assert store.schema_version() == ""
    assert store.migrate() == "0008"
    assert store.migrate() == "0008"  # idempotent
    with store.engine.connect() as conn:
        tables = {"bots", "ratings", "matches", "match_seats", "referees", "ladder_hosts"}
        for t in tables:
            conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one()
    store.close()


def test_tokens_are_stored_only_as_hashes(store: Store) -> None:
    token = store.register_bot("greedy-v1")
    assert token.startswith("kzb_")  # never "-", which a command line would take for an option
    with store.engine.connect() as conn:
        stored = conn.execute(text("SELECT token_hash FROM bots")).scalar_one()
    assert stored == hash_token(token) and token not in stored
    bot = store.authenticate(token)
    assert bot is not None and bot.name == "greedy-v1"
    assert store.authenticate(token + "x") is None
    with pytest.raises(StoreError, match="exists"):
        store.register_bot("greedy-v1")
    store.set_status("greedy-v1", "paused")
    assert store.authenticate(token) is None
    store.set_status("greedy-v1", "active")
    assert store.authenticate(token) is not None
    with pytest.raises(StoreError, match="status"):
        store.set_status("greedy-v1", "sleeping")


def _two_bot_match(store: Store, match_id: str) -> tuple[int, int]:
    a = store.authenticate(store.register_bot(f"a-{match_id}"))
    b = store.authenticate(store.register_bot(f"b-{match_id}"))
    assert a and b
    store.start_match(match_id, "classic-2p", 2, [(0, 0, a.id), (1, 1, b.id)])
    return a.id, b.id


def test_a_finished_match_is_committed_with_its_rating_update(store: Store) -> None:
    a, b = _two_bot_match(store, "m1")
    assert store.match_counts() == {"running": 1}
    new = store.finish_match(
        "m1",
        reason="limit",
        replay_path="/r/m1.kzr",
        result={"penalty_totals": [4, 12]},
        seats=[
            SeatResult(0, 0, a, 1, 4, True, 0, False),
            SeatResult(1, 1, b, 2, 12, False, 2, False),
        ],
    )
    assert new[a].mu > Rating().mu > new[b].mu
    assert store.match_counts() == {"finished": 1}
    top, second = store.standings("classic-2p")
    assert top.name == "a-m1" and top.wins == 1 and top.avg_penalty == 4
    assert second.timeouts == 2 and top.ordinal == pytest.approx(new[a].mu - 3 * new[a].sigma)
    (row,) = store.matches(bot="b-m1")
    assert row.replay_path == "/r/m1.kzr" and row.result == {"penalty_totals": [4, 12]}


def test_a_failed_commit_changes_nothing(store: Store) -> None:
    a, b = _two_bot_match(store, "m2")
    with pytest.raises(KeyError):  # a seat the match does not have: the transaction rolls back
        store.finish_match(
            "m2",
            reason="limit",
            replay_path="x",
            result={},
            seats=[
                SeatResult(0, 0, a, 1, 0, True, 0, False),
                SeatResult(5, 1, b, 2, 12, False, 0, False),
            ],
        )
    assert store.match_counts() == {"running": 1}
    assert store.standings("classic-2p") == []
    with pytest.raises(StoreError, match="not running"):
        store.finish_match("nope", reason="limit", replay_path="x", result={}, seats=[])


def test_running_matches_are_aborted_on_restart_without_rating_changes(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    from kozel.server.recovery import recover

    a = store.authenticate(store.register_bot("a-m3"))
    b = store.authenticate(store.register_bot("b-m3"))
    assert a is not None and b is not None
    store.start_match("m3", "classic-2p", 2, [(0, 0, a.id), (1, 1, b.id)], referee_id="r1")
    store.close()
    again = Store(store_url)  # "restart"
    again.migrate()
    assert recover(again, "r1", FolderArchive(tmp_path)).aborted == ["m3"]
    assert again.match_counts() == {"aborted": 1}
    assert again.standings("classic-2p") == []
    again.close()


def test_three_player_and_team_matches_are_rated(store: Store) -> None:
    bots = [store.authenticate(store.register_bot(f"p{i}")) for i in range(4)]
    ids = [b.id for b in bots if b is not None]
    assert len(ids) == 4
    store.start_match("ffa", "classic-3p", 3, [(i, i, ids[i]) for i in range(3)])
    ranks = MatchOutcome(money=False, penalty_totals=(12, 2, 6)).ranks
    assert ranks == (3, 1, 2)
    new = store.finish_match(
        "ffa",
        reason="limit",
        replay_path="x",
        result={},
        seats=[
            SeatResult(i, i, ids[i], ranks[i], [12, 2, 6][i], ranks[i] == 1, 0, False)
            for i in range(3)
        ],
    )
    assert new[ids[1]].mu > new[ids[2]].mu > new[ids[0]].mu
    store.start_match("teams", "classic-4p", 4, [(i, i % 2, ids[i]) for i in range(4)])
    new = store.finish_match(
        "teams",
        reason="limit",
        replay_path="x",
        result={},
        seats=[
            SeatResult(i, i % 2, ids[i], 1 if i % 2 == 0 else 2, 0, i % 2 == 0, 0, False)
            for i in range(4)
        ],
    )
    assert new[ids[0]].mu > Rating().mu and new[ids[1]].mu < Rating().mu


def test_standing_ranks_put_forfeits_last_and_share_ties() -> None:
    assert standing_ranks([4, 4, 12]) == (1, 1, 3)
    assert standing_ranks([0, 12], forfeited=[0]) == (2, 1)
    assert MatchOutcome(money=True, chips=(3, -5, 2)).ranks == (1, 3, 2)
