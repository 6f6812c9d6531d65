"""The web's CPU cap (kozel.web.cpu): the bucket's arithmetic on fake clocks, and a real
``kozel web --cpu-share`` process that stays under its share while it is hammered."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from kozel.web.cpu import CpuBudget
from tests.web.conftest import Arena, get, start, stop


class Clocks:
    def __init__(self) -> None:
        self.cpu = 0.0
        self.wall = 0.0


def budget(share: float, burst: float = 0.1) -> tuple[CpuBudget, Clocks]:
    c = Clocks()
    return CpuBudget(share, burst, cpu=lambda: c.cpu, now=lambda: c.wall), c


def test_within_the_burst_requests_start_at_once() -> None:
    b, c = budget(0.25)
    c.cpu += 0.1
    assert b.delay() == 0.0


def test_spending_beyond_the_burst_waits_until_the_share_has_paid_for_it() -> None:
    b, c = budget(0.25, burst=0.1)
    c.cpu += 0.3  # 0.2 s beyond the burst, at a quarter of a core: 0.8 s
    assert b.delay() == pytest.approx(0.8)
    c.wall += 0.4
    assert b.delay() == pytest.approx(0.4)
    c.wall += 0.4
    assert b.delay() == 0.0


def test_idle_time_refills_no_more_than_the_burst() -> None:
    b, c = budget(0.5, burst=0.1)
    c.wall += 3600  # an idle hour buys 0.1 s, not 1800 s
    assert b.delay() == 0.0
    c.cpu += 0.15
    assert b.delay() == pytest.approx(0.1)  # 0.05 s owed at half a core


def test_a_reserved_share_slows_the_refill() -> None:
    """While the analysis worker runs, its share is set aside: requests refill at the rest."""
    b, c = budget(0.25, burst=0.1)
    b.reserved = 0.125
    c.cpu += 0.3  # 0.2 s beyond the burst, at an eighth of a core: 1.6 s
    assert b.delay() == pytest.approx(1.6)
    b.reserved = 0.0
    c.wall += 0.4
    assert b.delay() == pytest.approx(0.4)  # the rest at the whole share again


def test_a_share_must_be_positive() -> None:
    with pytest.raises(ValueError, match="above 0"):
        CpuBudget(0)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_capped_web_process_stays_under_its_share(arena: Arena) -> None:
    share = 0.1
    proc, found, _ = start(
        [
            sys.executable,
            "-m",
            "kozel.cli.main",
            "web",
            "--listen",
            "127.0.0.1:0",
            "--replays",
            str(arena.replay_dir),
            "--cpu-share",
            str(share),
            "--limit",
            "replay_cache=0",  # every replay.json is converted again: CPU-heavy
        ],
        {"web": r"web pages on (http://\S+)"},
    )
    try:
        base = found["web"].rstrip("/")
        ids = sorted(p.stem for p in arena.replay_dir.glob("*.kzr"))[:8]
        assert ids, "the arena has replays"
        assert get(base + "/healthz")[0] == 200
        statuses: list[int] = []
        stop_at = time.monotonic() + 8

        def hammer(k: int) -> None:
            i = k
            while time.monotonic() < stop_at:
                i += 1
                status, _, _ = get(f"{base}/api/matches/{ids[i % len(ids)]}/replay.json")
                statuses.append(status)

        cpu0, wall0 = _cpu_seconds(proc.pid), time.monotonic()
        threads = [threading.Thread(target=hammer, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        cpu, wall = _cpu_seconds(proc.pid) - cpu0, time.monotonic() - wall0
        assert statuses and set(statuses) == {200}
        # The share of the wall time, plus the burst, plus the requests started within the
        # budget that have not yet been paid for (one per connection at most, each counted at
        # twice the average), plus clock-tick rounding. Uncapped, four connections keep this
        # process busy: about 8 s of CPU.
        one = 2 * cpu / len(statuses)
        assert cpu <= share * wall + 0.1 + 4 * one + 0.05, (cpu, wall, len(statuses))
        # ... and it did serve while capped, health checks at once.
        assert get(base + "/healthz")[0] == 200
    finally:
        stop(proc)
