"""Operating a cluster without unfair results, over real referee processes on one PostgreSQL:
a drain hands its work over and forfeits no one, a stop through one referee stops the ladder on
all, a returned referee gets work again, a killed scheduler is replaced within two seconds,
and a restore with three referees brings the standings back to the last digit."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import grpc
import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import make_url

from kozel.ladder.models import AssignmentRow, MatchRow, MatchSeatRow
from kozel.ladder.rating_order import aware
from kozel.ladder.ratings import RatedMatch, replay
from kozel.ladder.store import Store
from kozel.v1 import admin_pb2 as apb
from kozel.v1 import admin_pb2_grpc
from tests.cluster.cluster import LADDER, Cluster, ladder_file, running
from tests.cluster.proxy import Proxy
from tests.ladder.fleet import finished_in_store, stop, wait

REFEREES = ("ref-a", "ref-b", "ref-c")
TOKEN = "operator-token-" + "x" * 32

pytestmark = pytest.mark.timeout(900)


@pytest.fixture
def cluster(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Cluster, Store, Proxy]]:
    """Three referees sharing one ladder of short matches, a proxy as the bots' address."""
    monkeypatch.setenv("KOZEL_LIMITS__ADMISSION_LAG_MS", "0")
    monkeypatch.setenv("KOZEL_OPERATOR__ADMIN_TOKEN", TOKEN)
    ladders = ladder_file(
        tmp_path / "ladders.yaml", ruleset={"preset": "classic", "options": {"fixed_deals": 1}}
    )
    with running(tmp_path, pg_url, ladders, REFEREES) as started:
        yield started


def kozel(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def status(db: str) -> dict:
    res = kozel("cluster", "status", "--db", db, "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    return json.loads(res.stdout)


def _ladder(db: str) -> dict:
    return next(x for x in status(db)["ladders"] if x["name"] == LADDER)


def _started_after(store: Store, at: datetime, host: str | None = None) -> int:
    with store.transaction() as s:
        q = select(func.count()).select_from(MatchRow).where(MatchRow.started_at > at)
        if host is not None:
            q = q.where(MatchRow.referee_id == host)
        return int(s.scalar(q) or 0)


def _forfeited_seats(store: Store) -> int:
    with store.transaction() as s:
        return int(
            s.scalar(
                select(func.count())
                .select_from(MatchSeatRow)
                .where(MatchSeatRow.forfeited.is_(True))
            )
            or 0
        )


def test_a_ladder_stopped_through_one_referee_stops_on_every_referee(
    cluster: tuple[Cluster, Store, Proxy],
) -> None:
    c, store, proxy = cluster
    c.add_bots(store, 6, random.Random(1), address=proxy.address)
    wait(lambda: len(finished_in_store(store)) >= 10, "10 rated matches", timeout=300)
    stopped = kozel(
        "ladder", "--server", c.referees["ref-a"].address, "--admin-token", TOKEN,
        "stop", LADDER, "--reason", "maintenance", "--operator", "ops",
    )  # fmt: skip
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert "is stopped on every referee" in stopped.stdout
    # Every referee obeys within one poll, and says so through its own admin port.
    for ref in c.referees.values():
        wait(partial(_stopped_on, ref.address), "every referee reports it stopped", timeout=30)
    acked = datetime.now(UTC)
    # Once the running matches end, all six bots wait and nothing pairs them.
    wait(lambda: _ladder(c.db)["waiting_bots"] == 6, "every bot waits", timeout=120)
    info = _ladder(c.db)
    assert info["state"] == "stopped" and info["stalled"] == "stopped by ops: maintenance"
    assert _started_after(store, acked) == 0
    started = kozel("ladder", "--db", c.db, "start", LADDER, "--operator", "ops")
    assert started.returncode == 0, started.stdout
    more = len(finished_in_store(store)) + 5
    wait(lambda: len(finished_in_store(store)) >= more, "5 more matches", timeout=300)
    assert store.ladder_states()[LADDER].changed_by == "ops"


def _stopped_on(address: str) -> bool:
    return not _scheduling(address)


def _scheduling(address: str) -> bool:
    with grpc.insecure_channel(address) as channel:
        got = admin_pb2_grpc.AdminServiceStub(channel).ListLadders(
            apb.ListLaddersRequest(),
            timeout=30,
            metadata=[("authorization", f"Bearer {TOKEN}")],
        )
    (ladder,) = got.ladders
    return ladder.running


def test_a_draining_referee_hands_its_work_over_and_a_returned_one_gets_work(
    cluster: tuple[Cluster, Store, Proxy],
) -> None:
    c, store, proxy = cluster
    c.add_bots(store, 6, random.Random(2), address=proxy.address)
    wait(lambda: len(finished_in_store(store)) >= 10, "10 rated matches", timeout=300)
    victim = c.referees["ref-a"]
    port = int(victim.address.rsplit(":", 1)[1])
    proxy.backends.remove(victim.address)  # the Service takes a draining pod out at once
    drain_at = datetime.now(UTC)
    victim.proc.send_signal(signal.SIGTERM)
    assert victim.proc.wait(120) == 0
    # Nothing started on it once it drained, and no seat anywhere was forfeited for it.
    assert _started_after(store, drain_at, host="ref-a") == 0
    assert _forfeited_seats(store) == 0
    more = len(finished_in_store(store)) + 10
    wait(lambda: len(finished_in_store(store)) >= more, "10 more matches", timeout=300)
    # Back on the same port, with no bot connected to it: the scheduler moves groups there.
    back_at = datetime.now(UTC)
    c.start("ref-a", port=port)
    proxy.backends.append(c.referees["ref-a"].address)
    took = wait(
        lambda: _started_after(store, back_at, host="ref-a") >= 2,
        "the returned referee hosts matches",
        timeout=120,
    )
    print(f"the returned referee hosted matches {took:.1f} s after its start")
    assert _forfeited_seats(store) == 0
    assert store.check_consistency() == []


def test_a_killed_scheduler_is_replaced_within_two_seconds(
    cluster: tuple[Cluster, Store, Proxy],
) -> None:
    c, store, proxy = cluster
    c.add_bots(store, 8, random.Random(3), address=proxy.address)
    wait(lambda: len(finished_in_store(store)) >= 10, "10 rated matches", timeout=300)
    wait(lambda: _ladder(c.db)["scheduler"] in REFEREES, "a scheduler", timeout=30)
    victim = _ladder(c.db)["scheduler"]
    killed_epoch = time.time()
    killed_at = datetime.fromtimestamp(killed_epoch, UTC)
    c.referees[victim].proc.send_signal(signal.SIGKILL)
    c.referees[victim].proc.wait(30)
    proxy.backends.remove(c.referees[victim].address)
    # Another referee takes the scheduler's lock and pairs the bots that wait on the others.
    took = wait(lambda: _paired_since(store, killed_epoch), "a pairing after the kill", every=0.02)
    # The new scheduler says so in its next published status (a poll after it paired).
    wait(lambda: _ladder(c.db)["scheduler"] not in ("", victim), "the new scheduler", timeout=30)
    new = _ladder(c.db)["scheduler"]
    print(f"pairing resumed {took:.2f} s after the kill; scheduler now {new}")
    assert new != victim and new in REFEREES
    assert took < 2.0, f"pairing resumed only {took:.2f} s after the kill"
    wait(lambda: _started_after(store, killed_at) > 0, "a match after the kill", timeout=60)


def _paired_since(store: Store, epoch: float) -> bool:
    """An assignment formed (database clock) or a match started since ``epoch``."""
    with store.transaction() as s:
        formed = s.scalar(
            select(func.count()).select_from(AssignmentRow).where(AssignmentRow.created > epoch)
        )
    at = datetime.fromtimestamp(epoch, UTC)
    return bool(formed) or _started_after(store, at) > 0


def test_a_restore_with_three_referees_gives_back_the_standings_to_the_last_digit(
    cluster: tuple[Cluster, Store, Proxy], tmp_path: Path
) -> None:
    c, store, proxy = cluster
    c.add_bots(store, 6, random.Random(4), address=proxy.address)
    wait(lambda: len(finished_in_store(store)) >= 25, "25 rated matches", timeout=400)
    dump = tmp_path / "kozel.dump"
    libpq = make_url(c.db).set(drivername="postgresql").render_as_string(hide_password=False)
    subprocess.run(["pg_dump", "--format=custom", f"--file={dump}", libpq], check=True)
    backups = {n: tmp_path / "backup" / n for n in REFEREES}  # the store first, replays second
    for name, ref in c.referees.items():
        backups[name].mkdir(parents=True)
        _rsync(f"{ref.replay_dir}/", f"{backups[name]}/", "--exclude", ".*.tmp")
    wait(lambda: len(finished_in_store(store)) >= 60, "60 rated matches", timeout=600)
    stop(c.bots.values())
    for ref in c.referees.values():
        ref.proc.send_signal(signal.SIGTERM)
    for ref in c.referees.values():
        assert ref.proc.wait(120) == 0
    before = _table(store)
    finished = finished_in_store(store)
    # The documented restore: pg_restore the dump, restart every referee (its replay folder
    # is the journal of what the dump lacks).
    store.engine.dispose()
    subprocess.run(
        ["pg_restore", "--clean", "--if-exists", f"--dbname={libpq}", str(dump)], check=True
    )
    assert len(finished_in_store(store)) < len(finished)
    for name, ref in c.referees.items():  # each referee's replays into its own folder
        _rsync(f"{backups[name]}/", f"{ref.replay_dir}/")
    ports = {n: int(r.address.rsplit(":", 1)[1]) for n, r in c.referees.items()}
    for name in REFEREES:
        c.start(name, port=ports[name])
    wait(lambda: finished_in_store(store) >= finished, "every result back", timeout=120)
    assert _table(store) == before  # to the last digit
    assert _table(store) == _recomputed(store)
    assert store.check_consistency() == []


def _rsync(*args: str) -> None:
    if shutil.which("rsync") is None:
        if os.environ.get("CI"):
            pytest.fail("CI must provide rsync (.ci/run installs it)")
        pytest.skip("the rsync command is not installed (apt-get install rsync)")
    subprocess.run(["rsync", "-a", *args], check=True)


def _table(store: Store) -> list[tuple]:
    return sorted(
        (s.name, s.mu, s.sigma, s.matches, s.wins, s.timeouts, s.forfeits)
        for s in store.standings(LADDER)
    )


def _recomputed(store: Store) -> list[tuple]:
    """The standings of an uninterrupted run with the same results: every finished match
    rated from scratch in the order the matches ended."""
    with store.transaction() as s:
        rows = s.execute(
            select(
                MatchRow.id,
                MatchRow.ended_at,
                MatchSeatRow.side,
                MatchSeatRow.bot_id,
                MatchSeatRow.rank,
            )
            .join(MatchSeatRow, MatchSeatRow.match_id == MatchRow.id)
            .where(MatchRow.status == "finished")
        ).all()
    matches: dict[str, tuple[datetime, list[tuple[int, int, int]]]] = {}
    for match_id, ended, side, bot, rank in rows:
        matches.setdefault(match_id, (aware(ended), []))[1].append((side, bot, rank))
    events = []
    for match_id, (_, seats) in sorted(matches.items(), key=lambda m: (m[1][0], m[0])):
        seats.sort()
        events.append(
            RatedMatch(
                match_id,
                tuple((bot,) for _, bot, _ in seats),
                tuple(rank for _, _, rank in seats),
            )
        )
    _, final = replay({}, events)
    by_name = {x.name: x for x in store.standings(LADDER)}
    ids = store.bot_ids(list(by_name))
    return sorted(
        (
            name,
            final[ids[name]].rating.mu,
            final[ids[name]].rating.sigma,
            x.matches,
            x.wins,
            x.timeouts,
            x.forfeits,
        )
        for name, x in by_name.items()
    )
