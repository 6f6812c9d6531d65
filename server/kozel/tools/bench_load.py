"""``kozel bench load``: many bot streams at a realistic pace against a short clock.

A referee with a 200 ms move clock and no time bank serves a mix of two-, three- and
four-player queues; bot processes (:mod:`kozel.tools.bench_bots`) answer each request after a
random 0-50 ms. Over a fixed window it reports decisions per second, timeouts (every one is
spurious: no bot meant to take more than 50 ms), errors, the referee's memory per connected bot
and its p99 overhead per decision.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from math import nan
from pathlib import Path
from typing import Any

from kozel.tools.bench_bots import COUNTERS
from kozel.tools.bench_common import (
    OVERHEAD_METRIC,
    Child,
    MetricsProbe,
    ServerProcess,
    Usage,
    note,
    percentile,
    start_server,
    sum_reports,
)


@dataclass
class LoadBench:
    """Sizes of one run (the defaults are the issue's)."""

    streams: int = 1000
    duration_s: float = 60.0
    warmup_s: float = 10.0
    move_ms: int = 200
    think_ms: float = 50.0
    bot_processes: int = 2
    profile: Path | None = None  # run the referee under cProfile, writing its profile here
    # Bots take Event messages: they learn of their own timeouts from the notices, which is
    # how spurious timeouts are told apart from a late bot.
    events: bool = True
    # Connections of a web load generator (kozel.tools.bench_web) fetching the referee's
    # pages, API and replays as fast as it answers; 0: no web pages served.
    web_load: int = 0


def mix(streams: int) -> dict[int, int]:
    """Streams per player count: about 40% two-player, 30% three, 30% four, each a multiple
    of its player count, ``streams`` in all when possible."""
    four = streams * 3 // 10 // 4 * 4
    three = streams * 3 // 10 // 3 * 3
    two = streams - three - four
    if two % 2:
        if three >= 3:
            three, two = three - 3, two + 3
        else:
            two -= 1
    return {2: two, 3: three, 4: four}


def web_children(pid: int) -> list[int]:
    """The web child processes of referee ``pid`` (``kozel web --listen-fd``; Linux)."""
    try:  # every thread's children: a restarted child is its supervising thread's
        kids = [
            k
            for t in Path(f"/proc/{pid}/task").iterdir()
            for k in (t / "children").read_text().split()
        ]
    except OSError:
        return []
    found = []
    for kid in kids:
        try:
            if b"--listen-fd" in Path(f"/proc/{kid}/cmdline").read_bytes():
                found.append(int(kid))
        except OSError:
            continue
    return found


def split(n: int, parts: int) -> list[int]:
    """``n`` split into ``parts`` near-equal whole numbers."""
    return [n // parts + (i < n % parts) for i in range(parts)]


@dataclass
class _Window:
    """What the measured window saw: the bots' reports, the web generator's, and the CPU and
    memory of the referee, the bots and the web side at its start and end."""

    bots: list[dict[str, Any]]
    web: dict[str, Any] | None
    server: tuple[Usage, Usage]
    bot_usage: tuple[list[Usage], list[Usage]]
    web_usage: tuple[list[Usage], list[Usage]]  # the load generator first, then web children

    @property
    def seconds(self) -> float:
        """The window's length by the referee's usage clock."""
        return self.server[1].at - self.server[0].at


def run(bench: LoadBench) -> dict[str, Any]:
    """Start a referee and the bot (and web load) processes, warm up, measure one window and
    return its figures."""
    started = time.perf_counter()
    server = start_server(
        move_ms=bench.move_ms, bank_ms=0, profile=bench.profile, web=bench.web_load > 0
    )
    children: list[Child] = []
    try:
        idle = server.usage()
        bots, readies = _start_bots(bench, server, children)
        web = _start_web(bench, server, children)
        welcomed = sum(r["welcomed"] for r in readies)
        note(f"load: {welcomed} streams welcomed; warming up {bench.warmup_s:g} s")
        time.sleep(bench.warmup_s)
        probe = MetricsProbe(server)
        probe.begin()
        window = _measure(bench, server, bots, web)
        probe.finish()
    finally:
        for child in children:
            child.close()
        server.stop()
    result = _figures(bench, idle, readies, window, probe)
    result.update(_server_figures(probe, result["client_gap_p99_us"]))
    if window.web is not None:
        result.update(_web_figures(bench, window))
    result["error_details"] = [d for x in window.bots for d in x["error_details"]][:5]
    result["wall_s"] = time.perf_counter() - started
    return result


def _bot_configs(bench: LoadBench, address: str) -> list[dict[str, Any]]:
    """The configuration of each bot process: its share of each player count's streams."""
    per_process: list[list[dict[str, int]]] = [[] for _ in range(bench.bot_processes)]
    for players, streams in mix(bench.streams).items():
        for i, part in enumerate(split(streams, bench.bot_processes)):
            if part:
                per_process[i].append({"streams": part, "players": players})
    configs = []
    first = 0
    for i, groups in enumerate(per_process):
        configs.append(
            {
                "address": address,
                "groups": groups,
                "think_ms": bench.think_ms,
                "skip_events": not bench.events,
                "seed": 100 + i,
                "first": first,
            }
        )
        first += sum(g["streams"] for g in groups)
    return configs


def _start_bots(
    bench: LoadBench, server: ServerProcess, children: list[Child]
) -> tuple[list[Child], list[dict[str, Any]]]:
    """The bot processes (added to ``children`` as they start) and their ``ready`` reports,
    once every stream is welcomed or refused."""
    bots = []
    for config in _bot_configs(bench, server.address):
        bots.append(Child("kozel.tools.bench_bots", json.dumps(config)))
        children.append(bots[-1])
    note(f"load: {bench.streams} streams connecting to the referee at {server.address}")
    return bots, [child.expect("ready", timeout=90) for child in bots]


def _start_web(bench: LoadBench, server: ServerProcess, children: list[Child]) -> Child | None:
    """The web load generator (added to ``children``) once the web pages answer, if asked."""
    if not bench.web_load:
        return None
    web = Child(
        "kozel.tools.bench_web",
        json.dumps({"base": server.web, "connections": bench.web_load}),
    )
    children.append(web)  # closed with the bots
    web.expect("ready", timeout=60)
    _wait_for(server.web + "healthz", 90)  # the web child is up before the warm-up
    note(f"load: {bench.web_load} web connections fetching {server.web}")
    return web


def _measure(
    bench: LoadBench, server: ServerProcess, bots: list[Child], web: Child | None
) -> _Window:
    """Start every load child, let them run for the bench's duration, stop them, and return
    their reports and everyone's usage at both ends."""
    children = bots + ([web] if web is not None else [])
    for child in children:
        child.send("start")
    for child in children:
        child.expect("started")
    s0 = server.usage()
    b0 = [Usage.of(child.pid) for child in bots]
    # The web side's own CPU: the referee's web child and the load generator.
    web_pids = ([web.pid] if web is not None else []) + web_children(server.proc.pid)
    w0 = [Usage.of(pid) for pid in web_pids]
    note(f"load: measuring for {bench.duration_s:g} s")
    time.sleep(bench.duration_s)
    for child in children:
        child.send("stop")
    reports = [child.expect("stopped") for child in bots]
    web_report = web.expect("stopped") if web is not None else None
    s1 = server.usage()
    b1 = [Usage.of(child.pid) for child in bots]
    w1 = [Usage.of(pid) for pid in web_pids]
    return _Window(reports, web_report, (s0, s1), (b0, b1), (w0, w1))


def _figures(
    bench: LoadBench,
    idle: Usage,
    readies: list[dict[str, Any]],
    window: _Window,
    probe: MetricsProbe,
) -> dict[str, Any]:
    """The run's figures from the bots' reports, the processes' usage and its sizes."""
    windows = window.bots
    w = sum_reports(windows, COUNTERS)
    seconds = max(x["seconds"] for x in windows)
    gaps = [g for x in windows for g in x["gaps"]]
    refused = sum(r["refused"] for r in readies)
    welcomed = sum(r["welcomed"] for r in readies)
    s0, s1 = window.server
    b0, b1 = window.bot_usage
    # Decisions are the answers the referee took in time (an answer after the deadline is
    # refused as stale); the bots' own count stands in when the referee has no metrics.
    in_time = probe.observations("kozel_decision_think_seconds")
    decisions = w["decisions"] if in_time is None else in_time
    return {
        "decisions_per_s": decisions / seconds,
        "spurious_timeouts": w["timeouts"],
        "errors": w["errors"] + w["rejections"] + refused,
        "memory_per_bot_kb": (s1.rss_kb - idle.rss_kb) / max(welcomed, 1),
        "timeouts_answered_on_time": w["timeouts_on_time"],
        "timeouts_bot_late": w["timeouts_bot_late"],
        "late_answers": w["late_answers"],
        "stale_answers": w["stale_answers"],
        "forfeits": w["forfeits"],
        "max_answer_delay_ms": max(x["max_answer_delay"] for x in windows) * 1000,
        "matches_finished": w["matches"],
        "server_cpu_share": (s1.cpu_s - s0.cpu_s) / window.seconds,
        "server_cpu_us_per_decision": (s1.cpu_s - s0.cpu_s) / decisions * 1e6 if decisions else nan,
        "answers_sent_per_s": w["decisions"] / seconds,
        "bots_cpu_share": sum(b.cpu_s - a.cpu_s for a, b in zip(b0, b1)) / window.seconds,
        "server_rss_kb_idle": idle.rss_kb,
        "server_rss_kb_loaded": s1.rss_kb,
        "streams": welcomed + refused,
        "streams_refused_at_hello": refused,
        "mix": mix(bench.streams),
        "move_ms": bench.move_ms,
        "bank_ms": 0,
        "think_ms_max": bench.think_ms,
        "bot_processes": bench.bot_processes,
        "duration_s": bench.duration_s,
        "bot_events": bench.events,
        "client_gap_p99_us": percentile(gaps, 0.99) * 1e6,
    }


def _server_figures(probe: MetricsProbe, client_gap_p99_us: float) -> dict[str, Any]:
    """The referee's own figures over the window from its metrics; without them, the bots'
    answer-to-request gap stands in for the overhead (an upper bound)."""
    overhead = probe.quantiles_us(OVERHEAD_METRIC)
    if not overhead:
        return {
            "overhead_p99_us": client_gap_p99_us,
            "overhead_source": "client-gap (upper bound; no server histogram)",
        }
    lag = probe.quantiles_us("kozel_event_loop_lag_seconds", (0.5, 0.99, 1.0))
    think = probe.quantiles_us("kozel_decision_think_seconds", (0.5, 0.99))
    gc_max = probe.quantiles_us("kozel_gc_pause_seconds", (1.0,)).get("p100_us", nan)
    return {
        "overhead_p99_us": overhead["p99_us"],
        "overhead_p50_us": overhead["p50_us"],
        "overhead_source": "server: kozel_decision_overhead_seconds, p50/p99 "
        "interpolated linearly inside histogram buckets",
        "server_timeouts": probe.increase("kozel_timeouts"),
        "server_think_p99_ms": think.get("p99_us", nan) / 1000,
        "event_loop_lag_p99_ms": lag.get("p99_us", nan) / 1000,
        "event_loop_lag_max_bucket_ms": lag.get("p100_us", nan) / 1000,
        "gc_collections": probe.observations("kozel_gc_pause_seconds"),
        "gc_pause_max_bucket_ms": gc_max / 1000,
    }


def _web_figures(bench: LoadBench, window: _Window) -> dict[str, Any]:
    """The web side's figures: its requests, bytes, errors, latency and CPU shares."""
    web = window.web
    assert web is not None
    secs = web["seconds"] or 1.0
    w0, w1 = window.web_usage
    return {
        "web_connections": bench.web_load,
        # CPU shares (of one core) of the load generator and of the referee's web child
        "web_generator_cpu_share": (w1[0].cpu_s - w0[0].cpu_s) / window.seconds,
        "web_child_cpu_share": sum(b.cpu_s - a.cpu_s for a, b in zip(w0[1:], w1[1:]))
        / window.seconds,
        "web_requests_per_s": web["requests"] / secs,
        "web_requests_total": web["total_requests"],
        "web_replay_json_per_s": web["replay_json"] / secs,
        "web_mb_per_s": web["bytes"] / secs / 1e6,
        "web_errors": web["errors"],
        "web_latency_p50_ms": web["latency_p50_ms"],
        "web_latency_p99_ms": web["latency_p99_ms"],
    }


def _wait_for(url: str, timeout: float) -> None:
    """Until ``url`` answers 200 (the web child imports and starts after the referee)."""
    import urllib.request

    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                if r.status == 200:
                    return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the web pages did not answer at {url}") from None
        time.sleep(0.2)
