"""Referees sharing a store (SQLite and PostgreSQL): leases, ladder hosts, orphans, idempotent
commits, the retrying write queue, the rating chain and the snapshot consistency check."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from kozel.ladder.rating_order import aware
from kozel.ladder.store import MIGRATIONS, SeatResult, Store, StoreError
from kozel.server.recovery import adopt, recover
from kozel.server.replay.archive import FolderArchive
from kozel.server.store_queue import Backoff, StoreQueue
from tests.ladder.fleet import random_match_replay


def _bots(store: Store, *names: str) -> list[int]:
    return [store.authenticate(store.register_bot(n)).id for n in names]  # type: ignore[union-attr]


def _seats(ids: list[int], ranks: tuple[int, int] = (1, 2)) -> list[SeatResult]:
    return [
        SeatResult(0, 0, ids[0], ranks[0], 4, ranks[0] == 1, 0, False),
        SeatResult(1, 1, ids[1], ranks[1], 12, ranks[1] == 1, 0, False),
    ]


def _wait(cond, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_a_commit_is_recorded_once_however_often_it_is_retried(store: Store) -> None:
    ids = _bots(store, "a", "b")
    store.start_match("m", "l", 2, [(0, 0, ids[0]), (1, 1, ids[1])], referee_id="r1")
    store.start_match("m", "l", 2, [(0, 0, ids[0]), (1, 1, ids[1])], referee_id="r1")  # retry
    first = store.finish_match(
        "m", reason="limit", replay_path="m.kzr", result={}, seats=_seats(ids)
    )
    assert (
        first
        and store.finish_match(
            "m", reason="limit", replay_path="m.kzr", result={}, seats=_seats(ids)
        )
        == {}
    )
    assert [s.matches for s in store.standings("l")] == [1, 1]
    assert store.check_consistency() == []


def test_a_second_referee_on_a_live_ladder_is_refused_or_waits(store: Store) -> None:
    assert store.register_referee("ref-a", ["alpha", "beta"], lease_s=30) == {}
    with pytest.raises(StoreError, match=r"ladder 'alpha' is served by referee 'ref-a'"):
        store.register_referee("ref-b", ["alpha"], lease_s=30)
    assert store.register_referee("ref-c", ["gamma"], lease_s=30) == {}  # other ladders: fine
    assert store.register_referee("ref-b", ["beta"], lease_s=30, standby=True) == {"beta": "ref-a"}
    assert store.claim_ladders("ref-b", ["beta"]) == {"beta": "ref-a"}  # ref-a still lives
    store.release_referee("ref-a")  # a clean stop hands its ladders over at once
    assert store.claim_ladders("ref-b", ["beta"]) == {}
    assert store.claim_ladders("ref-a", ["beta"]) == {"beta": "ref-b"}


def test_a_ladder_is_taken_over_once_its_hosts_lease_expires(store: Store) -> None:
    store.register_referee("ref-a", ["alpha"], lease_s=60)
    store.register_referee("ref-b", [], lease_s=60)
    assert store.claim_ladders("ref-b", ["alpha"]) == {"alpha": "ref-a"}
    assert store.renew_lease("ref-a", 0.5)[0] == {"alpha"}  # ref-a stops renewing: it lapses
    _wait(lambda: store.claim_ladders("ref-b", ["alpha"]) == {}, "the lease to expire", 20)
    # ref-a comes back: its renewal tells it that alpha is no longer its to schedule.
    assert store.renew_lease("ref-a", 30)[0] == set()
    assert store.renew_lease("ref-b", 30)[0] == {"alpha"}


def test_orphans_are_claimed_by_exactly_one_referee_and_never_while_the_host_lives(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    ids = _bots(store, "a", "b")
    store.register_referee("host", ["l"], lease_s=60)
    for i in range(20):
        store.start_match(
            f"m{i}",
            "l",
            2,
            [(0, 0, ids[0]), (1, 1, ids[1])],
            referee_id="host",
            replay_path=str(tmp_path / f"m{i}.kzr"),
        )
    assert store.claim_orphans("other", ["l"]) == {}  # the host's lease is live
    store.register_referee("probe", [], lease_s=60)
    store.renew_lease("host", 0.5)  # the host stops renewing: its lease runs out
    _wait(lambda: store.claim_ladders("probe", ["l"]) == {}, "the host's lease to expire")
    for k in range(3):
        store.register_referee(f"r{k}", [], lease_s=60)
    claims: dict[str, list[str]] = {}
    stores = [Store(store_url) for _ in range(3)]

    def claim(k: int) -> None:
        claims[f"r{k}"] = list(stores[k].claim_orphans(f"r{k}", ["l"]))

    threads = [threading.Thread(target=claim, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in stores:
        s.close()
    got = [m for ms in claims.values() for m in ms]
    assert sorted(got) == sorted(f"m{i}" for i in range(20))  # each orphan exactly once
    assert store.claim_orphans("late", ["l"]) == {}  # their claimers live: not orphans
    hosts = {m.referee_id for m in store.matches(ladder="l", limit=100)}
    assert hosts <= {"r0", "r1", "r2"}


def test_adopted_orphans_are_committed_from_the_replay_or_aborted(
    store: Store, tmp_path: Path
) -> None:
    ids = _bots(store, "a", "b")
    seats = [(0, 0, ids[0]), (1, 1, ids[1])]
    random_match_replay(tmp_path / "done.kzr", "done", ["a", "b"], "l", 3)
    for m in ("done", "cut"):
        store.start_match(
            m, "l", 2, seats, referee_id="dead", replay_path=str(tmp_path / f"{m}.kzr")
        )
    out = adopt(store, "me", store.claim_orphans("me", ["l"]), FolderArchive(tmp_path))
    assert (out.committed, out.aborted) == (["done"], ["cut"])
    # The host was not dead after all and finishes "cut" later: its result is not lost.
    random_match_replay(tmp_path / "cut.kzr", "cut", ["a", "b"], "l", 4)
    assert recover(store, "dead", FolderArchive(tmp_path)).committed == ["cut"]
    assert store.match_counts("l") == {"finished": 2}
    assert store.check_consistency() == []


def test_a_lost_hosts_match_ends_when_the_host_was_last_seen(store: Store) -> None:
    """Its bots, free once the host died, may play again at once: the aborted match must end
    before that, not when a survivor noticed."""
    ids = _bots(store, "a", "b")
    seats = [(0, 0, ids[0]), (1, 1, ids[1])]
    store.register_referee("dead", [], lease_s=60)
    store.start_match("cut", "l", 2, seats, referee_id="dead")
    store.renew_lease("dead", 0.0, status={"running": 1})  # its last sign of life
    seen = datetime.now(UTC)
    time.sleep(0.3)
    store.start_match("next", "l", 2, seats, referee_id="me")  # the bots play on elsewhere
    store.register_referee("me", [], lease_s=60)
    out = adopt(store, "me", store.claim_orphans("me", ["l"]), FolderArchive(Path("/nonexistent")))
    assert out.aborted == ["cut"]
    ended = {m.id: m for m in store.matches(ladder="l", limit=10)}
    cut, later = ended["cut"], ended["next"]
    assert cut.status == "aborted" and cut.ended_at is not None and later.started_at is not None
    assert aware(cut.ended_at) <= seen + timedelta(seconds=0.1)
    assert aware(cut.ended_at) <= aware(later.started_at)


def test_recovery_commits_replays_the_store_lacks_in_the_order_they_ended(
    store: Store, tmp_path: Path
) -> None:
    _bots(store, "a", "b")
    for i in range(4):  # e.g. finished during an outage, or after the backup being restored
        random_match_replay(tmp_path / f"r{i}.kzr", f"r{i}", ["a", "b"], "l", 10 + i)
    random_match_replay(tmp_path / "table.kzr", "table", ["a", "b"], "", 20)  # not a ladder match
    rec = recover(store, "me", FolderArchive(tmp_path))
    assert rec.committed == [f"r{i}" for i in range(4)] and rec.aborted == []
    assert store.match_counts() == {"finished": 4}
    assert store.check_consistency() == []
    assert recover(store, "me", FolderArchive(tmp_path)).committed == []


def test_the_rating_chain_check_finds_a_broken_link(store: Store) -> None:
    ids = _bots(store, "a", "b")
    for i in range(3):
        store.start_match(f"m{i}", "l", 2, [(0, 0, ids[0]), (1, 1, ids[1])])
        store.finish_match(f"m{i}", reason="limit", replay_path="x", result={}, seats=_seats(ids))
    assert store.check_consistency() == []
    with store.engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE match_seats SET mu_before = mu_before + 1 "
                "WHERE match_id = 'm2' AND seat = 0"
            )
        )
    (problem,) = store.check_consistency()
    assert "match m2 starts from mu" in problem


def test_migration_numbers_the_rated_matches_already_stored(store_url: str) -> None:
    store = Store(store_url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with store.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0001")
    with store.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO bots (id, name, token_hash, status, created_at) VALUES "
                "(1, 'a', 'h1', 'active', '2026-01-01'), "
                "(2, 'b', 'h2', 'active', '2026-01-01')"
            )
        )
        for i in range(3):
            conn.execute(
                text(
                    "INSERT INTO matches (id, ladder, status, players, started_at, ended_at) "
                    f"VALUES ('m{i}', 'l', 'finished', 2, '2026-01-0{i + 1}', '2026-01-0{i + 1}')"
                )
            )
            for seat in (0, 1):
                conn.execute(
                    text(
                        "INSERT INTO match_seats (match_id, seat, side, bot_id, mu_before, "
                        f"mu_after) VALUES ('m{i}', {seat}, {seat}, {seat + 1}, {25 + i}, "
                        f"{26 + i})"
                    )
                )
    assert store.migrate() == "0008"
    with store.engine.connect() as conn:
        seqs = conn.execute(
            text("SELECT match_id, rating_seq FROM match_seats WHERE seat = 0 ORDER BY match_id")
        ).all()
    assert [tuple(r) for r in seqs] == [("m0", 1), ("m1", 2), ("m2", 3)]
    store.close()


def test_the_consistency_check_reads_one_snapshot_while_matches_finish(store: Store) -> None:
    ids = _bots(store, "a", "b")
    done = threading.Event()

    def commits() -> None:
        for i in range(60):
            store.start_match(f"m{i}", "l", 2, [(0, 0, ids[0]), (1, 1, ids[1])])
            store.finish_match(
                f"m{i}",
                reason="limit",
                replay_path="x",
                result={},
                seats=_seats(ids, (1, 2) if i % 2 else (2, 1)),
            )
        done.set()

    t = threading.Thread(target=commits)
    t.start()
    checks = 0
    while not done.is_set():
        assert store.check_consistency() == []
        checks += 1
    t.join()
    assert checks > 0 and store.check_consistency() == []


def test_closing_a_sqlite_store_leaves_no_wal_file(tmp_path: Path) -> None:
    db = tmp_path / "kozel.db"
    store = Store(f"sqlite:///{db}")
    store.migrate()
    _bots(store, "a", "b")
    assert (tmp_path / "kozel.db-wal").exists()
    store.close()
    assert not (tmp_path / "kozel.db-wal").exists()
    assert not (tmp_path / "kozel.db-shm").exists()
    assert Store(f"sqlite:///{db}").bot("a") is not None  # kozel.db alone holds everything


def test_the_write_queue_retries_transient_failures_in_order_and_drops_refusals() -> None:
    done: list[str] = []
    health: list[bool] = []
    outage = {"left": 3}

    def call(name: str) -> None:
        if name == "first" and outage["left"]:
            outage["left"] -= 1
            raise OperationalError("SELECT 1", {}, ConnectionRefusedError("refused"))
        if name == "refused":
            raise StoreError("no such bot")
        done.append(name)

    async def scenario() -> int:
        queue = StoreQueue(Backoff(first_s=0.01, most_s=0.05), on_health=health.append)
        for name in ("first", "refused", "second", "third"):
            queue.submit(call, name)
        left = await queue.flush(30)
        await queue.close()
        return left

    assert asyncio.run(scenario()) == 0
    assert done == ["first", "second", "third"]  # in order, the refused call dropped
    assert health == [False, True]  # unhealthy during the outage, healthy after


def test_a_stop_drains_a_slow_store_and_gives_up_only_on_a_silent_one() -> None:
    """flush(timeout) waits while writes go through, however slowly (each here takes longer
    than the whole timeout would allow them together), and stops once none has gone through
    for the timeout (a store that does not answer)."""
    slow_done: list[int] = []

    def slow(n: int) -> None:
        time.sleep(0.05)
        slow_done.append(n)

    def silent() -> None:
        raise OperationalError("SELECT 1", {}, ConnectionRefusedError("refused"))

    async def scenario() -> tuple[int, int]:
        queue = StoreQueue(Backoff(first_s=0.01, most_s=0.05))
        for n in range(8):  # 0.4 s of writes against a 0.15 s timeout
            queue.submit(slow, n)
        drained = await queue.flush(0.15)
        queue.submit(silent)
        stuck = await queue.flush(0.15)
        await queue.close()
        return drained, stuck

    assert asyncio.run(scenario()) == (0, 1)
    assert slow_done == list(range(8))
