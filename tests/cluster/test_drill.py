"""The operator's drill on a real cluster: three referees on one PostgreSQL, eight SDK bots
with no supervisor (five through a TCP proxy standing for the Service, three straight to a
referee); every referee is stopped (SIGTERM) and started again in turn while bots wait and
play, then the scheduler's referee is killed. No seat is forfeited for any of it, nothing is
lost, every bot process is still playing at the end, and pairing resumes within two seconds of
the kill. The test prints what it saw (a JSON report)."""

from __future__ import annotations

import json
import random
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from kozel.ladder.models import MatchRow, MatchSeatRow
from kozel.ladder.store import Store
from tests.cluster.cluster import Cluster, ladder_file, running
from tests.cluster.proxy import Proxy
from tests.ladder.fleet import check_end, finished_in_store, finished_on_disk, wait

REFEREES = ("ref-a", "ref-b", "ref-c")

pytestmark = pytest.mark.timeout(1500)


@pytest.fixture
def cluster(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Cluster, Store, Proxy]]:
    monkeypatch.setenv("KOZEL_LIMITS__ADMISSION_LAG_MS", "0")
    ladders = ladder_file(
        tmp_path / "ladders.yaml", ruleset={"preset": "classic", "options": {"fixed_deals": 2}}
    )
    with running(tmp_path, pg_url, ladders, REFEREES) as started:
        yield started


def _started_after(store: Store, at: datetime) -> int:
    with store.transaction() as s:
        return int(
            s.scalar(select(func.count()).select_from(MatchRow).where(MatchRow.started_at > at))
            or 0
        )


def _forfeited(store: Store) -> int:
    with store.transaction() as s:
        q = select(func.count()).select_from(MatchSeatRow).where(MatchSeatRow.forfeited.is_(True))
        return int(s.scalar(q) or 0)


def _pause(store: Store, at: datetime, what: str) -> float:
    """Seconds from ``at`` until a match starts anywhere."""
    return wait(lambda: _started_after(store, at) > 0, what, timeout=120, every=0.02)


def test_the_drill(cluster: tuple[Cluster, Store, Proxy], tmp_path: Path) -> None:
    c, store, proxy = cluster
    rng = random.Random(11)
    c.add_bots(store, 5, rng, address=proxy.address)
    for name in REFEREES:  # one straight to each referee
        c.add_bots(store, 1, rng, address=c.referees[name].address)
    wait(lambda: len(finished_in_store(store)) >= 20, "20 rated matches", timeout=300)
    report: dict = {"test": "drill", "stops": {}, "kill": {}}
    for name in REFEREES:  # a rolling restart, as an upgrade does it
        ref = c.referees[name]
        port = int(ref.address.rsplit(":", 1)[1])
        proxy.backends.remove(ref.address)
        began = time.monotonic()
        ref.proc.send_signal(signal.SIGTERM)
        assert ref.proc.wait(120) == 0
        gone = datetime.now(UTC)
        report["stops"][name] = {
            "drain_s": round(time.monotonic() - began, 2),
            "next_match_s": round(_pause(store, gone, f"play after {name}"), 2),
        }
        c.start(name, port=port)
        proxy.backends.append(c.referees[name].address)
        _more(store, 10)
    scheduler = _scheduler(c)
    killed_epoch = time.time()
    c.referees[scheduler].proc.send_signal(signal.SIGKILL)
    c.referees[scheduler].proc.wait(30)
    proxy.backends.remove(c.referees[scheduler].address)
    resumed = _pause(store, datetime.fromtimestamp(killed_epoch, UTC), "play after the kill")
    report["kill"] = {"referee": scheduler, "next_match_s": round(resumed, 2)}
    _more(store, 20)
    alive = [n for n, p in c.bots.items() if p.poll() is None]
    assert sorted(alive) == sorted(c.bots), "every bot plays on with no supervisor"
    assert _forfeited(store) == 0, "a seat was forfeited for an operator's action"
    report["forfeited_seats"] = 0
    # Let the last matches settle (the killed referee is started again, as an operator would:
    # it commits what its replay folder holds), then everything finished is in the store once.
    for p in c.bots.values():
        p.terminate()
    c.start(scheduler, port=int(c.referees[scheduler].address.rsplit(":", 1)[1]))
    wait(lambda: not store.running_matches(), "the last matches settled", timeout=180)
    check_end(
        store,
        finished_on_disk(*(tmp_path / n / "replays" for n in REFEREES)),
        report,
        tmp_path / "report.json",
    )
    assert resumed < 2.0, json.dumps(report)


def _more(store: Store, n: int) -> None:
    target = len(finished_in_store(store)) + n
    wait(lambda: len(finished_in_store(store)) >= target, f"{n} more matches", timeout=300)


def _scheduler(c: Cluster) -> str:
    from tests.cluster.test_operations import _ladder

    wait(lambda: _ladder(c.db)["scheduler"] in REFEREES, "a scheduler", timeout=30)
    return str(_ladder(c.db)["scheduler"])
