"""``kozel bench soak``: many matches back to back, watching the referee's memory.

A bots process (:mod:`kozel.tools.bench_bots`) plays short two-player matches (classic, one
deal each, so that many matches go through the referee quickly) from the queue, ``tables`` at
a time, answering at once. The referee's resident memory is sampled every ``sample_every``
finished matches; the growth from the first sample (after the warm-up) to the last is the
figure to watch. Garbage collection makes single samples noisy, so both are reported with
every sample in between.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from kozel.tools.bench_common import Child, start_server

RULES = {"preset": "classic", "options": {"fixed_deals": 1}}


@dataclass
class SoakBench:
    """Sizes of one run (the defaults are the issue's)."""

    matches: int = 10_000
    first_sample: int = 1000  # the baseline sample, after this many matches
    sample_every: int = 1000
    tables: int = 20  # matches at once


def run(bench: SoakBench) -> dict[str, Any]:
    started = time.perf_counter()
    server = start_server()
    bots: Child | None = None
    samples: list[dict[str, float]] = []
    every = max(1, min(bench.sample_every, bench.first_sample))
    try:
        config = {
            "address": server.address,
            "seed": 7,
            "progress_every": every,
            "groups": [{"streams": 2 * bench.tables, "players": 2, **RULES}],
        }
        bots = Child("kozel.tools.bench_bots", json.dumps(config))
        bots.expect("ready")
        t0 = time.perf_counter()
        while True:
            done = bots.expect("progress")["matches"]
            since = done - bench.first_sample
            if (since >= 0 and since % bench.sample_every == 0) or done >= bench.matches:
                usage = server.usage()
                samples.append(
                    {
                        "matches": done,
                        "rss_kb": usage.rss_kb,
                        "cpu_s": usage.cpu_s,
                        "s": usage.at - t0,
                    }
                )
            if done >= bench.matches:
                break
    finally:
        totals = (bots.close() if bots is not None else None) or {}
        server.stop()
    first, last = samples[0], samples[-1]
    steady_s = last["s"] - first["s"]
    return {
        "memory_growth_pct": (last["rss_kb"] / first["rss_kb"] - 1) * 100,
        "matches_per_s": (last["matches"] - first["matches"]) / steady_s if steady_s > 0 else 0.0,
        f"rss_kb_at_{first['matches']}": first["rss_kb"],
        f"rss_kb_at_{last['matches']}": last["rss_kb"],
        "rss_kb_samples": [(s["matches"], s["rss_kb"]) for s in samples],
        "server_cpu_ms_per_match": (last["cpu_s"] - first["cpu_s"])
        * 1000
        / max(last["matches"] - first["matches"], 1),
        "matches": last["matches"],
        "concurrent_matches": bench.tables,
        "ruleset": RULES,
        "errors": totals.get("errors", 0) + totals.get("rejections", 0),
        "timeouts": totals.get("timeouts", 0),
        "error_details": totals.get("error_details", []),
        "wall_s": time.perf_counter() - started,
    }
