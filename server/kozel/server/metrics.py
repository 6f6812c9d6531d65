"""Prometheus metrics of the referee (prometheus-client, default registry). Label values are
bounded: ``ladder`` is a configured ladder name ("" for ad-hoc tables), ``reason`` a
MatchEndReason name, ``code`` an ErrorCode name. Never a match id or a bot name."""

from __future__ import annotations

import asyncio
import gc
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import structlog
from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics

from kozel.server.loop_metrics import LoopCounter, LoopCounters, LoopHistogram, LoopHistograms

disable_created_metrics()  # the *_created series only add noise to every scrape
log = structlog.get_logger("kozel.metrics")

_FAST = (
    25e-6,
    50e-6,
    100e-6,
    200e-6,
    300e-6,
    500e-6,
    750e-6,
    1e-3,
    1.5e-3,
    2e-3,
    3e-3,
    5e-3,
    7.5e-3,
    10e-3,
    20e-3,
    50e-3,
    100e-3,
    250e-3,
    1.0,
)
_THINK = (1e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 200e-3, 500e-3, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)

MATCHES_STARTED = Counter("kozel_matches_started", "Matches started", ["ladder"])
MATCHES_FINISHED = Counter(
    "kozel_matches_finished", "Matches ended, by end reason", ["ladder", "reason"]
)
# Updated at every decision, from the event loop only: kept without a lock (loop_metrics).
DECISIONS = LoopCounters(
    "kozel_decisions", "Decisions answered by bots (or by the clock)", ["ladder"]
)
THINK = LoopHistograms(
    "kozel_decision_think_seconds",
    "Bot think time: from sending a request to receiving its answer",
    ["ladder"],
    buckets=_THINK,
)
OVERHEAD = LoopHistograms(
    "kozel_decision_overhead_seconds",
    "Server time per decision: from receiving an answer (or starting a deal) "
    "to queuing the next request of that match",
    ["ladder"],
    buckets=_FAST,
)
TIMEOUTS = Counter("kozel_timeouts", "Requests not answered within the clock", ["ladder"])
STRIKES = Counter("kozel_strikes", "Strikes counted against seats (timeouts)", ["ladder"])
FORFEITS = Counter("kozel_forfeits", "Seats that forfeited", ["ladder"])
REJECTED = Counter("kozel_rejected_actions", "Answers refused, by error code", ["code"])
DISCONNECTS = Counter("kozel_disconnects", "Bot streams lost with matches still running")
RESUMES = Counter("kozel_resumes", "Sessions resumed on a new stream")
REDIRECTS = Counter(
    "kozel_redirects",
    "Shared ladders: bots sent to the referee hosting their match (sent), redirected bots "
    "seated here (arrived), and seats that forfeited because their bot never came (missed)",
    ["outcome"],
)
REDIRECT_SECONDS = Histogram(
    "kozel_redirect_seconds",
    "Shared ladders: from the host receiving an assignment to a redirected bot's arrival",
    buckets=(0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 30),
)
AUTH_FAILURES = Counter(
    "kozel_auth_failures", "Logins refused: bad ladder tokens (Hello) and bad admin tokens"
)
ACTIVE_STREAMS = Gauge("kozel_active_streams", "Open Play streams")
ACTIVE_MATCHES = Gauge("kozel_active_matches", "Matches being played", ["ladder"])
LOOP_LAG = Histogram(
    "kozel_event_loop_lag_seconds",
    "How late the event loop runs a timer (sampled every 0.25 s)",
    buckets=(1e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1.0, 5.0),
)
LOOP_BUSY = Gauge(
    "kozel_event_loop_busy_ratio",
    "Share of the last 0.25 s the event loop's thread spent on the CPU",
)
GC_PAUSE = Histogram(
    "kozel_gc_pause_seconds",
    "Cyclic garbage collections (they stop the event loop), by generation",
    ["generation"],
    buckets=(1e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1.0),
)
REPLAY_BYTES = Counter("kozel_replay_bytes_written", "Bytes of replay files written")
RATING_UPDATES = Counter("kozel_rating_updates", "Rating updates committed", ["ladder"])
DRAINING = Gauge("kozel_draining", "1 while the referee drains before stopping")
ADMISSION_CAP = Gauge(
    "kozel_admission_match_cap", "How many queue and ladder matches may run now (adaptive)"
)
ADMISSION_PAUSED = Gauge(
    "kozel_admission_paused", "1 while queue and ladder matches wait because the event loop lags"
)
STORE_BACKLOG = Gauge(
    "kozel_store_backlog", "Store writes (results, match starts, ratings) waiting to be committed"
)
STORE_ERRORS = Counter(
    "kozel_store_errors",
    "Failed store calls: transient ones are retried, refused ones dropped",
    ["kind"],
)  # transient | refused
STORE_AVAILABLE = Gauge(
    "kozel_store_available",
    "1 while the ladder store answers (rated play runs), 0 during an outage",
)
ORPHANS = Counter(
    "kozel_orphans_settled",
    "Matches of lost referees this referee took over, by outcome",
    ["outcome"],
)  # committed | aborted
LEASE_OK = Gauge(
    "kozel_lease_ok",
    "1 while this referee renews its lease in the ladder store, 0 while renewals fail",
)
LADDER_STALLED = Gauge(
    "kozel_ladder_stalled",
    "1 while bots wait on a ladder and no match can start until someone acts (every group "
    "at its meeting cap, or no referee can host); set by the referee that schedules it",
    ["ladder"],
)
ASSIGNMENTS_HANDED_BACK = Counter(
    "kozel_assignments_handed_back",
    "Shared-ladder matches given back unstarted (the host drains, or a redirected bot never "
    "arrived): their bots wait again, nothing is rated",
)
LUCK_CORRECTED = Counter(
    "kozel_luck_corrected",
    "Finished ladder matches and tournament games whose luck this referee computed from the "
    "replay and stored (docs/luck.md)",
)
LUCK_MISSING = Counter(
    "kozel_luck_missing",
    "Finished matches stored without luck, by reason (money_game, no_replay, unreadable, "
    "not_replayable, failed)",
    ["reason"],
)  # kozel.ladder.luck_store.NO_LUCK; its series start at zero with the luck worker
LUCK_PENDING = Gauge(
    "kozel_luck_pending",
    "Finished matches this referee's luck worker has still to do, at its last pass (duplicate "
    "matches and tournament games waiting for their group included)",
)
LUCK_CPU = Counter(
    "kozel_luck_cpu_seconds",
    "CPU time the luck worker spent reading replays and computing their luck",
)
LUCK_LAST_PASS = Gauge(
    "kozel_luck_last_pass_timestamp_seconds",
    "When the luck worker last finished a pass (Unix time; 0 before the first)",
)
for _kind in ("transient", "refused"):  # every series exists from the start, at zero
    STORE_ERRORS.labels(_kind)
for _outcome in ("committed", "aborted"):
    ORPHANS.labels(_outcome)
STORE_AVAILABLE.set(1)  # a referee without a store has no outage
LEASE_OK.set(1)


@dataclass(frozen=True, slots=True)
class MatchMetrics:
    """The children of one ladder's labelled metrics, looked up once per match."""

    decisions: LoopCounter
    think: LoopHistogram
    overhead: LoopHistogram
    timeouts: Counter
    strikes: Counter
    forfeits: Counter
    active: Gauge
    started: Counter


def for_ladder(ladder: str) -> MatchMetrics:
    """Labelled children for matches of ``ladder`` ("" for ad-hoc tables)."""
    return MatchMetrics(
        DECISIONS.labels(ladder),
        THINK.labels(ladder),
        OVERHEAD.labels(ladder),
        TIMEOUTS.labels(ladder),
        STRIKES.labels(ladder),
        FORFEITS.labels(ladder),
        ACTIVE_MATCHES.labels(ladder),
        MATCHES_STARTED.labels(ladder),
    )


def init_ladder(ladder: str) -> None:
    """Create a ladder's series at zero so dashboards see them before the first match."""
    for_ladder(ladder)
    RATING_UPDATES.labels(ladder)
    LADDER_STALLED.labels(ladder)


async def watch_loop_lag(
    interval: float = 0.25, on_lag: Callable[[float, float], None] | None = None
) -> None:
    """Sample the event loop forever, handing each sample's lag (seconds late) and busy share
    (the loop thread's CPU time over the wall time) to ``on_lag``; run as a task, cancel to
    stop. Must run on the loop's own thread."""
    loop = asyncio.get_running_loop()
    while True:
        start, cpu = loop.time(), time.thread_time()
        await asyncio.sleep(interval)
        wall = loop.time() - start
        lag = max(wall - interval, 0.0)
        busy = min((time.thread_time() - cpu) / wall, 1.0) if wall > 0 else 0.0
        LOOP_LAG.observe(lag)
        LOOP_BUSY.set(busy)
        flush_gc_pauses()
        if on_lag is not None:
            try:
                on_lag(lag, busy)
            except Exception:  # admission must outlive one failed start
                log.exception("lag_callback_failed")


def watch_gc() -> None:
    """Time every cyclic garbage collection (idempotent); the pauses reach
    ``kozel_gc_pause_seconds`` at the next loop sample (see :func:`watch_loop_lag`)."""
    if _gc_callback in gc.callbacks:
        return
    for generation in range(3):
        GC_PAUSE.labels(str(generation))
    gc.callbacks.append(_gc_callback)


_gc_started = 0.0
# (generation, seconds) of collections not yet in the histogram. The callback runs inside the
# collector, on whatever thread allocated: it must take no lock (a metric's lock might be held
# by that very thread), so it only appends here, and the loop moves them into the histogram.
_gc_pauses: deque[tuple[int, float]] = deque(maxlen=10_000)


def _gc_callback(phase: str, info: dict) -> None:
    global _gc_started  # noqa: PLW0603 (the collector callback may take no lock)
    if phase == "start":
        _gc_started = time.perf_counter()
    elif _gc_started:
        _gc_pauses.append((info["generation"], time.perf_counter() - _gc_started))


def flush_gc_pauses() -> None:
    """Move the collections timed since the last call into ``kozel_gc_pause_seconds``."""
    while _gc_pauses:
        generation, seconds = _gc_pauses.popleft()
        GC_PAUSE.labels(str(generation)).observe(seconds)
