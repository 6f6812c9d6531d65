"""Nothing lost: referees that share a store, store outages, clean stops (issue 11).

Real referee processes, real bot processes, real PostgreSQL (the shared one from .ci/run, or a
private one the test stops and starts) and SQLite. Each test ends with the store's consistency
check in one snapshot (rating chains included), every finished replay committed exactly once,
and ``verify_replay`` on every replay it counted. What each saw is printed as JSON (pytest -s)
and written to the test's folder as report.json.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from kozel.ladder.store import Store
from tests.ladder import fleet
from tests.ladder.conftest import PrivatePostgres
from tests.server.conftest import stop_referee_process

pytestmark = pytest.mark.timeout(600)


def _tokens(store: Store, prefix: str, n: int = 2) -> dict[str, str]:
    names = [f"greedy-{prefix}{i}" for i in range(n)] + [f"random-{prefix}{i}" for i in range(n)]
    return {name: store.register_bot(name) for name in names}


def _finished(store: Store, ladder: str) -> int:
    return store.match_counts(ladder).get("finished", 0)


def test_a_restarting_referee_leaves_the_other_referees_matches_alone(
    pg_url: str, tmp_path: Path
) -> None:
    """Two referees, different ladders, one database: B drains and restarts three times while A
    plays; every match A finished is committed and rated, none of A's is aborted."""
    store = Store(pg_url)
    store.migrate()
    a_tokens, b_tokens = _tokens(store, "a"), _tokens(store, "b")
    ladders_a = fleet.ladder_file(tmp_path / "a.yaml", "alpha-2p")
    ladders_b = fleet.ladder_file(tmp_path / "b.yaml", "beta-2p")
    ref_a = fleet.referee(tmp_path, "ref-a", ladders_a, pg_url)
    a_bots = fleet.bots(ref_a.address, "alpha-2p", a_tokens)
    restarts = 0
    try:
        for _ in range(3):
            ref_b = fleet.referee(tmp_path, "ref-b", ladders_b, pg_url)
            b_bots = fleet.bots(ref_b.address, "beta-2p", b_tokens)
            target = _finished(store, "beta-2p") + 3
            fleet.wait(lambda: _finished(store, "beta-2p") >= target, "B plays")  # noqa: B023
            # A has matches running right now, while B drains and starts again.
            fleet.wait(lambda: store.match_counts("alpha-2p").get("running", 0) > 0, "A plays")
            fleet.stop(b_bots)
            assert fleet.drain(ref_b) == 0
            restarts += 1
        target = _finished(store, "alpha-2p") + 5
        fleet.wait(lambda: _finished(store, "alpha-2p") >= target, "A goes on playing")
        aborted_a = [
            m.id for m in store.matches(ladder="alpha-2p", limit=100_000) if m.status == "aborted"
        ]
        assert aborted_a == [], "B aborted matches of A"
    finally:
        fleet.stop(a_bots)
        stop_referee_process(ref_a)
    on_disk = fleet.finished_on_disk(tmp_path / "ref-a" / "replays", tmp_path / "ref-b" / "replays")
    a_done = [m for m, p in on_disk.items() if "ref-a" in str(p)]
    assert len(a_done) >= 5
    fleet.check_end(
        store,
        on_disk,
        {"test": "restarts", "restarts_of_b": restarts, "finished_by_a": len(a_done)},
        tmp_path / "report.json",
    )
    store.close()


def test_a_killed_referees_orphans_go_to_its_standby_and_never_while_it_lives(
    pg_url: str, tmp_path: Path
) -> None:
    """A hosts a ladder, B waits as its standby. While A lives nothing of A's moves to B (and B
    refuses the ladder's bots); SIGKILL A mid-match: B takes the ladder and A's orphans within
    the lease time plus a few seconds, commits those whose replay A finished, and plays on."""
    lease = 3.0
    store = Store(pg_url)
    store.migrate()
    tokens = _tokens(store, "k")
    ladders = fleet.ladder_file(tmp_path / "l.yaml", "ha-2p")
    ref_a = fleet.referee(tmp_path, "ref-a", ladders, pg_url, "--lease", str(lease))
    ref_b = fleet.referee(tmp_path, "ref-b", ladders, pg_url, "--lease", str(lease), "--standby")
    procs = fleet.bots(ref_a.address, "ha-2p", tokens)
    try:
        assert fleet.health(ref_b.address, "kozel.ladder.ha-2p") == "NOT_SERVING"
        assert fleet.health(ref_a.address, "kozel.ladder.ha-2p") == "SERVING"
        start = time.monotonic()
        fleet.wait(lambda: _finished(store, "ha-2p") >= 6, "A plays")
        # Several leases long, every match is A's: the standby took nothing from a live host.
        while time.monotonic() - start < 3 * lease:
            assert {m.referee_id for m in store.matches(ladder="ha-2p", limit=10_000)} == {"ref-a"}
            time.sleep(0.5)
        fleet.wait(lambda: store.match_counts("ha-2p").get("running", 0) > 0, "a match runs")
        ref_a.proc.send_signal(signal.SIGKILL)
        ref_a.proc.wait(timeout=30)
        killed = time.monotonic()
        orphans = set(store.running_matches())
        assert orphans
        fleet.stop(procs)
        fleet.wait(
            lambda: fleet.health(ref_b.address, "kozel.ladder.ha-2p") == "SERVING",
            "B takes the ladder over",
            timeout=lease + 15,
        )
        served = time.monotonic() - killed
        fleet.wait(
            lambda: not set(store.running_matches()) & orphans,
            "B settles A's orphans",
            timeout=lease + 15,
        )
        settled = time.monotonic() - killed
        assert {m.referee_id for m in store.matches(limit=10_000) if m.id in orphans} == {"ref-b"}
        procs = fleet.bots(ref_b.address, "ha-2p", tokens)
        target = _finished(store, "ha-2p") + 4
        fleet.wait(lambda: _finished(store, "ha-2p") >= target, "B plays the ladder")
    finally:
        fleet.stop(procs)
        stop_referee_process(ref_b)
        if ref_a.proc.poll() is None:
            ref_a.proc.kill()
    on_disk = fleet.finished_on_disk(tmp_path / "ref-a" / "replays", tmp_path / "ref-b" / "replays")
    orphan_rows = [m for m in store.matches(limit=10_000) if m.id in orphans]
    fleet.check_end(
        store,
        on_disk,
        {
            "test": "sigkill",
            "orphans": len(orphans),
            "orphans_committed": sum(m.status == "finished" for m in orphan_rows),
            "orphans_aborted": sum(m.status == "aborted" for m in orphan_rows),
            "ladder_taken_over_after_s": round(served, 1),
            "orphans_settled_after_s": round(settled, 1),
            "lease_s": lease,
        },
        tmp_path / "report.json",
    )
    store.close()


def test_a_store_outage_loses_no_finished_match(
    private_postgres: PrivatePostgres, tmp_path: Path
) -> None:
    """PostgreSQL stops for 10 s mid-ladder: the matches that finish meanwhile are committed
    when it returns, the ladder health goes NOT_SERVING and back, and rated play resumes."""
    pg = private_postgres
    store = Store(pg.url)
    store.migrate()
    tokens = _tokens(store, "o", n=3)
    ladders = fleet.ladder_file(tmp_path / "l.yaml", "out-2p")
    ref = fleet.referee(tmp_path, "ref-o", ladders, pg.url, "--lease", "3")
    procs = fleet.bots(ref.address, "out-2p", tokens)
    replays = tmp_path / "ref-o" / "replays"
    try:
        fleet.wait(lambda: _finished(store, "out-2p") >= 6, "the ladder plays")
        fleet.wait(lambda: store.match_counts("out-2p").get("running", 0) > 0, "a match runs")
        before = set(fleet.finished_on_disk(replays))
        store.close()
        pg.stop()
        down = time.monotonic()
        fleet.wait(
            lambda: fleet.health(ref.address, "kozel.ladders") == "NOT_SERVING",
            "ladder health goes NOT_SERVING",
            timeout=30,
        )
        fleet.wait(lambda: time.monotonic() - down >= 10, "the outage's 10 s", timeout=30)
        during = set(fleet.finished_on_disk(replays))
        finished_during = during - before
        assert fleet.health(ref.address, "") == "SERVING"  # tables and queues keep working
        pg.start()
        fleet.wait(
            lambda: fleet.health(ref.address, "kozel.ladders") == "SERVING",
            "ladder health comes back",
            timeout=60,
        )
        store = Store(pg.url)
        fleet.wait(
            lambda: finished_during <= fleet.finished_in_store(store),
            "the backlog drains",
            timeout=60,
        )
        target = _finished(store, "out-2p") + 4
        fleet.wait(lambda: _finished(store, "out-2p") >= target, "rated play resumes")
    finally:
        fleet.stop(procs)
        stop_referee_process(ref)
    assert finished_during, "no match finished during the outage: the test proved nothing"
    fleet.check_end(
        store,
        fleet.finished_on_disk(replays),
        {"test": "outage", "outage_s": 10, "finished_during_outage": len(finished_during)},
        tmp_path / "report.json",
    )
    store.close()


def test_sqlite_clean_stop_and_the_documented_backup_and_restore(tmp_path: Path) -> None:
    """docs/operations.md, as written: an online backup while bots play, more matches, a clean
    stop (no -wal file left), restore, start: the store is back at the backup, and the newer
    replays are committed again from the replay folder."""
    if shutil.which("sqlite3") is None:
        pytest.skip("the sqlite3 command is not installed (.ci/run installs it)")
    data = tmp_path / "ref-s" / "data"
    replays = tmp_path / "ref-s" / "replays"
    db = data / "kozel.db"
    store = Store(f"sqlite:///{db}")
    store.migrate()
    tokens = _tokens(store, "s")
    store.close()

    def counts() -> int:
        s = Store(f"sqlite:///{db}")
        try:
            return _finished(s, "s-2p")
        finally:
            s.close()

    ladders = fleet.ladder_file(tmp_path / "l.yaml", "s-2p")
    # With the web pages on, as `kozel serve` runs by default: their reader process is gone
    # before the store closes, so the WAL still goes.
    ref = fleet.referee(
        tmp_path, "ref-s", ladders, f"sqlite:///{db}", "--web-listen", "127.0.0.1:0"
    )
    procs = fleet.bots(ref.address, "s-2p", tokens)
    backup = tmp_path / "backup" / "kozel.db"
    backup.parent.mkdir()
    try:
        fleet.wait(lambda: counts() >= 5, "the ladder plays")
        subprocess.run(["sqlite3", str(db), f".backup '{backup}'"], check=True)  # as documented
        at_backup = counts()
        fleet.wait(lambda: counts() >= at_backup + 5, "more matches after the backup")
    finally:
        fleet.stop(procs)
    assert fleet.drain(ref) == 0
    assert not (data / "kozel.db-wal").exists() and not (data / "kozel.db-shm").exists()
    final = Store(f"sqlite:///{db}")
    standings_at_stop = final.standings("s-2p")
    played = _finished(final, "s-2p")
    final.close()
    backup_store = Store(f"sqlite:///{backup}")
    standings_at_backup = backup_store.standings("s-2p")
    backup_store.close()

    shutil.copy(backup, db)  # restore step 2 (no stale -wal or -shm to delete: clean stop)
    restored = Store(f"sqlite:///{db}")
    assert restored.standings("s-2p") == standings_at_backup
    assert _finished(restored, "s-2p") < played
    restored.close()
    ref = fleet.referee(tmp_path, "ref-s", ladders, f"sqlite:///{db}")  # step 4: start
    assert fleet.drain(ref) == 0
    store = Store(f"sqlite:///{db}")
    assert _finished(store, "s-2p") == played  # the newer replays were committed again
    again = {s.name: s for s in store.standings("s-2p")}
    for s in standings_at_stop:  # the same standings, to the last digit (ratings in end order)
        assert again[s.name] == s
    fleet.check_end(
        store,
        fleet.finished_on_disk(replays),
        {"test": "backup-restore", "at_backup": at_backup, "at_stop": played},
        tmp_path / "report.json",
    )
    store.close()
    assert not (data / "kozel.db-wal").exists()


def test_a_second_referee_on_a_live_ladder_is_refused_and_aborted_matches_keep_their_replay(
    tmp_path: Path,
) -> None:
    """One store, one ladder: a second referee without --standby is refused at start with one
    line naming the ladder and its referee. A match aborted at a stop keeps its replay:
    ``kozel ladder match`` and GetMatch show it."""
    import sys

    import grpc

    from kozel.v1 import match_pb2 as mpb
    from kozel.v1 import match_pb2_grpc

    data = tmp_path / "ref-x" / "data"
    db = f"sqlite:///{data / 'kozel.db'}"
    store = Store(db)
    store.migrate()
    # ismcts thinks for real: a match lasts long enough to be running when the drain comes
    # (greedy against random could end between the check and the signal on a busy machine).
    tokens = {name: store.register_bot(name) for name in ("ismcts-x0", "random-x0")}
    store.close()
    ladders = fleet.ladder_file(tmp_path / "l.yaml", "x-2p")
    ref = fleet.referee(tmp_path, "ref-x", ladders, db, "--drain-timeout", "0")
    procs = fleet.bots(ref.address, "x-2p", tokens)
    try:
        second = subprocess.run(
            [
                sys.executable,
                "-m",
                "kozel.cli.main",
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--ladders",
                str(ladders),
                "--db",
                db,
                "--data-dir",
                str(tmp_path / "other"),
                "--referee-id",
                "ref-y",
                "--log-level",
                "ERROR",
                "--web-listen",
                "",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 1
        (line,) = second.stderr.strip().splitlines()  # one line, no traceback
        assert line.startswith("error: ladder 'x-2p' is served by referee 'ref-x'"), line

        def running() -> list[str]:
            s = Store(db)
            try:
                return list(s.running_matches())
            finally:
                s.close()

        fleet.wait(running, "a match runs")
        assert fleet.drain(ref) == 0  # drain timeout 0: the running match is aborted
    finally:
        fleet.stop(procs)
    store = Store(db)
    (aborted,) = [m for m in store.matches(limit=1000) if m.status == "aborted"]
    assert aborted.replay_path and Path(aborted.replay_path).exists()
    store.close()
    shown = subprocess.run(
        [
            sys.executable,
            "-m",
            "kozel.cli.main",
            "ladder",
            "--data-dir",
            str(data),
            "match",
            aborted.id,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0 and f"replay {aborted.id}" in shown.stdout, shown.stdout
    ref = fleet.referee(tmp_path, "ref-x", ladders, db)
    try:
        with grpc.insecure_channel(ref.address) as channel:
            got = match_pb2_grpc.MatchServiceStub(channel).GetMatch(
                mpb.GetMatchRequest(match_id=aborted.id), timeout=30
            )
        assert got.status == "aborted" and got.replay_id == aborted.id
    finally:
        stop_referee_process(ref)
