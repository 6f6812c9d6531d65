"""``kozel bench cluster``: one ladder served by one, two and three referee processes that
share one PostgreSQL (``--cluster``), with random house bots each connected to a referee
picked at random. For each size: rated matches per second, the share of matches whose bots
were redirected, the redirect latency (the host receiving an assignment to the bot's arrival)
and the CPU of the referees; then the scaling ratio of the largest size against one."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kozel.tools.bench_common import (
    ServerProcess,
    bucket_delta,
    histogram_buckets,
    histogram_quantile,
    note,
    start_server,
)

LADDER = "bench"
REDIRECT_METRIC = "kozel_redirect_seconds"


@dataclass(frozen=True)
class ClusterBench:
    """What to run: ``db`` is a PostgreSQL URL whose user may create databases."""

    db: str
    sizes: tuple[int, ...] = (1, 2, 3)
    bots: int = 24
    duration_s: float = 30.0
    warmup_s: float = 8.0
    seed: int = 1


def run(bench: ClusterBench) -> dict[str, Any]:
    results = [_one(bench, n) for n in bench.sizes]
    out: dict[str, Any] = {
        "bots": bench.bots,
        "duration_s": bench.duration_s,
        "ladder": "2-player classic, random house bots, one match at a time per bot",
        "sizes": results,
    }
    first, last = results[0], results[-1]
    if first["rated_matches_per_s"] > 0:
        out["scaling_ratio"] = round(last["rated_matches_per_s"] / first["rated_matches_per_s"], 3)
        out["scaling_of"] = f"{last['referees']} referees against {first['referees']}"
    out["cpus"] = os.cpu_count()
    return out


def _one(bench: ClusterBench, n: int) -> dict[str, Any]:
    """One size: ``n`` referees sharing a new database, the bench's bots connected to them at
    random, a warm-up, then one measured window."""
    from kozel.ladder.store import Store

    with (
        _scratch_database(bench.db) as (name, url),
        tempfile.TemporaryDirectory(prefix="kozel-bench-cluster-") as work,
    ):
        referees: list[ServerProcess] = []
        bots: list[subprocess.Popen[bytes]] = []
        store = Store(url)
        try:
            store.migrate()
            note(f"cluster: {n} referee(s) sharing {name}")
            ladders = _ladders_file(Path(work))
            flags = ["--db", url, "--ladders", str(ladders), "--cluster", "--lease", "5"]
            referees.extend(
                start_server(extra=[*flags, "--referee-id", f"bench-{i}"]) for i in range(n)
            )
            rng = random.Random(bench.seed)
            for b in range(bench.bots):
                token = store.register_bot(f"random-{b}")
                bots.append(_bot(rng.choice(referees).address, f"random-{b}", token))
            note(f"cluster: {bench.bots} bots connected at random; warming up {bench.warmup_s:g} s")
            time.sleep(bench.warmup_s)
            return _measure(bench, store, referees)
        finally:
            for p in bots:
                p.kill()
            for p in bots:
                p.wait()
            for r in referees:
                r.stop()
            store.close()


@contextmanager
def _scratch_database(db: str) -> Iterator[tuple[str, str]]:
    """A new database on the server of URL ``db``: its name and URL; dropped afterwards."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"kozel_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(db, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield name, make_url(db).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _ladders_file(folder: Path) -> Path:
    """A ladders file in ``folder`` declaring the bench's one ladder."""
    ladders = folder / "ladders.yaml"
    ladder = {
        "name": LADDER,
        "players": 2,
        "ruleset": {"preset": "classic"},
        "max_concurrent_matches": 1000,
    }
    ladders.write_text(yaml.safe_dump({"ladders": [ladder]}))
    return ladders


def _measure(bench: ClusterBench, store: Any, referees: list[ServerProcess]) -> dict[str, Any]:
    """The rated matches finished, the redirects and the referees' CPU over one window."""
    m0, r0 = _finished(store), [_redirects(r) for r in referees]
    c0 = [r.usage() for r in referees]
    t0 = time.monotonic()
    note(f"cluster: measuring for {bench.duration_s:g} s")
    time.sleep(bench.duration_s)
    m1, r1 = _finished(store), [_redirects(r) for r in referees]
    c1 = [r.usage() for r in referees]
    elapsed = time.monotonic() - t0
    window = [r for r in m1 if r not in m0]
    redirected = sum(1 for r in window if m1[r])
    buckets = _sum([bucket_delta(a, b) for a, b in zip(r1, r0)])
    cpu = sum(b.cpu_s - a.cpu_s for a, b in zip(c0, c1))
    return {
        "referees": len(referees),
        "rated_matches": len(window),
        "rated_matches_per_s": round(len(window) / elapsed, 2),
        "redirected_share": round(redirected / len(window), 3) if window else 0.0,
        "redirects": int(buckets[-1][1]) if buckets else 0,
        "redirect_latency_ms_p50": _ms(histogram_quantile(buckets, 0.5)),
        "redirect_latency_ms_p99": _ms(histogram_quantile(buckets, 0.99)),
        "referee_cpu_share": round(cpu / elapsed, 2),
        "hosts": sorted(_hosts(store, window)),
        "consistency_problems": len(store.check_consistency()),
    }


def _bot(address: str, name: str, token: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kozel.cli.main",
            "bot",
            "random",
            "--server",
            address,
            "--ladder",
            LADDER,
            "--name",
            name,
            "--quiet",
        ],
        env={**os.environ, "KOZEL_BOT_TOKEN": token},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )


def _finished(store: Any) -> dict[str, int]:
    """Finished matches by id, with their redirected seats."""
    return {
        r.id: r.redirected or 0 for r in store.matches(limit=1_000_000) if r.status == "finished"
    }


def _hosts(store: Any, ids: list[str]) -> set[str]:
    wanted = set(ids)
    return {r.referee_id for r in store.matches(limit=1_000_000) if r.id in wanted}


def _redirects(ref: ServerProcess) -> list[tuple[float, float]]:
    return histogram_buckets(ref.metrics(), REDIRECT_METRIC)


def _sum(parts: list[list[tuple[float, float]]]) -> list[tuple[float, float]]:
    total: dict[float, float] = {}
    for part in parts:
        for le, count in part:
            total[le] = total.get(le, 0.0) + count
    return sorted(total.items())


def _ms(seconds: float) -> float | None:
    return None if seconds != seconds else round(seconds * 1000, 1)
