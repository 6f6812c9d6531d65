"""``kozel bench referee``: the referee's throughput against a bare gRPC echo.

A referee process and a bots process (:mod:`kozel.tools.bench_bots`) whose streams answer at
once play two-player classic matches back to back from the queue; after a warm-up, decisions
are counted for a fixed window while the referee's CPU is read from ``/proc``. Then the echo
baseline (:mod:`kozel.tools.bench_echo`) runs with the same connections, in-flight exchanges
and message sizes, and the ratio of the two rates is reported. A second echo answers each
request with as many messages as the referee sent per decision (the request and its events):
the ratio to it separates the referee's own cost from the cost of the protocol's messages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kozel import engine
from kozel.core import native as core_native
from kozel.tools.bench_common import (
    BENCH_LIMITS,
    OVERHEAD_METRIC,
    Child,
    EchoServer,
    MetricsProbe,
    Usage,
    percentile,
    sample_messages,
    start_server,
)


@dataclass
class RefereeBench:
    """Sizes of one run (the defaults are the issue's: 100 matches, 20 s windows)."""

    matches: int = 100  # concurrent two-player matches (2 * matches streams)
    warmup_s: float = 5.0
    duration_s: float = 20.0
    echo_duration_s: float = 10.0
    profile: Path | None = None  # run the referee under cProfile, writing its profile here
    events: bool = False  # bots also take Event messages (about five messages per decision)
    baseline: Path | None = None  # another checkout whose referee is measured back to back


def source_env(src: Path) -> dict[str, str]:
    """The environment that runs the referee from checkout ``src`` instead of this one."""
    roots = [src / "engine", src / "server", src / "clients" / "python"]
    missing = [str(r) for r in roots if not r.is_dir()]
    if missing:
        raise ValueError(f"{src} is not a checkout of this repository (no {', '.join(missing)})")
    return {"PYTHONPATH": os.pathsep.join(str(r.resolve()) for r in roots)}


def known_limits(src: Path) -> dict[str, str]:
    """The benchmark's raised limits that the referee of checkout ``src`` has settings for (an
    older referee refuses a key it does not know, and has no such limit to raise)."""
    probe = "from kozel.server.settings import LimitsSettings as L; print(*L.model_fields)"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, **source_env(src)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    prefix = "KOZEL_LIMITS__"
    return {k: v for k, v in BENCH_LIMITS.items() if k.removeprefix(prefix).lower() in out}


def measure_referee(bench: RefereeBench, src: Path | None = None) -> dict[str, Any]:
    """Decisions per second, server CPU and overhead with ``2 * matches`` streams (the
    referee of checkout ``src`` when given)."""
    # Admission control off: the run is 100 matches at once, whatever the lag.
    env = {"KOZEL_LIMITS__ADMISSION_LAG_MS": "0", **(source_env(src) if src else {})}
    limits = known_limits(src) if src else BENCH_LIMITS
    server = start_server(profile=None if src else bench.profile, env=env, limits=limits)
    bots: Child | None = None
    try:
        config = {
            "address": server.address,
            "seed": 1,
            "skip_events": not bench.events,
            "groups": [{"streams": 2 * bench.matches, "players": 2}],
        }
        bots = Child("kozel.tools.bench_bots", json.dumps(config))
        bots.expect("ready")
        time.sleep(bench.warmup_s)
        probe = MetricsProbe(server)
        probe.begin()
        bots.send("start")
        bots.expect("started")
        s0, b0 = server.usage(), Usage.of(bots.pid)
        time.sleep(bench.duration_s)
        bots.send("stop")
        window = bots.expect("stopped")
        s1, b1 = server.usage(), Usage.of(bots.pid)
        probe.finish()
    finally:
        totals = (bots.close() if bots is not None else None) or {}
        server.stop()
    result = _window_figures(window, (s0, s1), (b0, b1))
    result.update(_overhead_figures(probe, result))
    result["error_details"] = window["error_details"] or totals.get("error_details", [])
    return result


def _window_figures(
    window: dict[str, Any], server: tuple[Usage, Usage], bots: tuple[Usage, Usage]
) -> dict[str, Any]:
    """Rates, CPU per decision and the bots' answer-to-request gaps of one window, given the
    bots' report and the referee's and the bots' usage at its start and end."""
    (s0, s1), (b0, b1) = server, bots
    decisions = max(window["decisions"], 1)
    gaps = window["gaps"]
    return {
        "decisions_per_s": window["decisions"] / window["seconds"],
        "matches_per_s": window["matches"] / window["seconds"],
        "cpu_us_per_decision": (s1.cpu_s - s0.cpu_s) / decisions * 1e6,
        "bots_cpu_us_per_decision": (b1.cpu_s - b0.cpu_s) / decisions * 1e6,
        "server_cpu_share": (s1.cpu_s - s0.cpu_s) / (s1.at - s0.at),
        "messages_per_decision": window["messages"] / decisions,
        "client_gap_p50_us": percentile(gaps, 0.5) * 1e6,
        "client_gap_p99_us": percentile(gaps, 0.99) * 1e6,
        "decisions": window["decisions"],
        "errors": window["errors"] + window["rejections"] + window["timeouts"],
        "server_rss_kb": s1.rss_kb,
    }


def _overhead_figures(probe: MetricsProbe, result: dict[str, Any]) -> dict[str, Any]:
    """The referee's overhead per decision from its histogram; without one, the bots' gaps
    in ``result`` stand in (an upper bound)."""
    overhead = probe.quantiles_us(OVERHEAD_METRIC)
    if overhead:
        return {
            "overhead_p50_us": overhead["p50_us"],
            "overhead_p99_us": overhead["p99_us"],
            "overhead_source": "server: kozel_decision_overhead_seconds, p50/p99 "
            "interpolated linearly inside histogram buckets",
        }
    return {
        "overhead_p50_us": result["client_gap_p50_us"],
        "overhead_p99_us": result["client_gap_p99_us"],
        "overhead_source": "client-gap: time from a bot's answer to the next "
        "request of its match as the bots see it (an upper "
        "bound: includes both network hops and queueing); the "
        "referee serves no kozel_decision_overhead_seconds",
    }


def measure_echo(bench: RefereeBench, replies: int = 1) -> dict[str, Any]:
    """Round trips per second of the echo baseline with ``matches`` pairs of streams, each
    request answered with ``replies`` messages."""
    server = EchoServer(replies)
    client: Child | None = None
    try:
        client = Child(
            "kozel.tools.bench_echo", "client", server.address, str(bench.matches), str(replies)
        )
        client.expect("ready")
        time.sleep(min(bench.warmup_s, 3.0))
        client.send("start")
        client.expect("started")
        s0, c0 = Usage.of(server.pid), Usage.of(client.pid)
        time.sleep(bench.echo_duration_s)
        client.send("stop")
        window = client.expect("stopped")
        s1, c1 = Usage.of(server.pid), Usage.of(client.pid)
    finally:
        if client is not None:
            client.close()
        server.stop()
    trips = max(window["round_trips"], 1)
    return {
        "echo_round_trips_per_s": window["round_trips"] / window["seconds"],
        "echo_server_cpu_us_per_round_trip": (s1.cpu_s - s0.cpu_s) / trips * 1e6,
        "echo_client_cpu_us_per_round_trip": (c1.cpu_s - c0.cpu_s) / trips * 1e6,
        "echo_rtt_p50_us": window["rtt_p50_us"],
        "echo_rtt_p99_us": window["rtt_p99_us"],
    }


def run(bench: RefereeBench) -> dict[str, Any]:
    """The whole benchmark: the referee (and the baseline's, before and after it) between
    two runs of the echo on the same machine, whose mean it is compared with (this machine's
    speed drifts within a minute; the mean of the two sides cancels a steady drift)."""
    started = time.perf_counter()
    echo_before = measure_echo(bench)
    before = measure_referee(bench, bench.baseline) if bench.baseline else None
    referee = measure_referee(bench)
    after = measure_referee(bench, bench.baseline) if bench.baseline else None
    echo = _mean(echo_before, measure_echo(bench))
    replies = max(1, round(referee["messages_per_decision"]))
    pattern = measure_echo(bench, replies) if replies > 1 else echo
    sample = sample_messages()
    return {
        **referee,
        **echo,
        "ratio": referee["decisions_per_s"] / echo["echo_round_trips_per_s"],
        "echo_same_pattern_round_trips_per_s": pattern["echo_round_trips_per_s"],
        "echo_same_pattern_replies": replies,
        "echo_same_pattern_server_cpu_us_per_round_trip": pattern[
            "echo_server_cpu_us_per_round_trip"
        ],
        "ratio_same_pattern": referee["decisions_per_s"] / pattern["echo_round_trips_per_s"],
        "concurrent_matches": bench.matches,
        "streams": 2 * bench.matches,
        "bot_events": bench.events,
        "native": engine.NATIVE,  # this checkout's referee: the compiled engine, and core
        "core_native": core_native.loaded(),
        "duration_s": bench.duration_s,
        "request_bytes": len(sample.request),
        "answer_bytes": len(sample.answer),
        "event_bytes": len(sample.event),
        **(_baseline(referee, before, after, echo) if before and after else {}),
        "wall_s": time.perf_counter() - started,
    }


def _mean(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Two echo runs' figures: the mean of each (of the latency percentiles too, which is
    not itself a percentile), and both round-trip rates."""
    mean = {key: (first[key] + second[key]) / 2 for key in first}
    rates = [first["echo_round_trips_per_s"], second["echo_round_trips_per_s"]]
    return {**mean, "echo_runs_round_trips_per_s": rates}


def _baseline(
    referee: dict[str, Any], before: dict[str, Any], after: dict[str, Any], echo: dict[str, Any]
) -> dict[str, Any]:
    """The baseline referee's figures (the mean of its runs before and after this one's) and
    how this referee compares: decisions per second and CPU per decision, as ratios."""
    rate = (before["decisions_per_s"] + after["decisions_per_s"]) / 2
    cpu = (before["cpu_us_per_decision"] + after["cpu_us_per_decision"]) / 2
    return {
        "baseline_decisions_per_s": [before["decisions_per_s"], after["decisions_per_s"]],
        "baseline_cpu_us_per_decision": [
            before["cpu_us_per_decision"],
            after["cpu_us_per_decision"],
        ],
        "baseline_ratio": rate / echo["echo_round_trips_per_s"],
        "speedup_vs_baseline": referee["decisions_per_s"] / rate,
        "cpu_per_decision_vs_baseline": referee["cpu_us_per_decision"] / cpu,
    }
