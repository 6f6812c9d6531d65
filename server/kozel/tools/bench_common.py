"""Shared pieces of the referee benchmarks: child processes (a referee, bot and echo processes)
driven over their stdin/stdout, process CPU and memory from ``/proc``, percentiles, the
referee's Prometheus histograms, and real message samples.

A child process of a benchmark speaks JSON lines: it prints ``{"event": ...}`` objects on
stdout and obeys ``start``/``stop``/``quit`` lines on stdin (see :func:`command_loop`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from bisect import bisect_left
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CLK_TCK = os.sysconf("SC_CLK_TCK")
# Every benchmark bot connects from one address: the per-address share of queue matches
# (meant for a crowd of one client among many) would measure that share, not the referee.
BENCH_LIMITS = {"KOZEL_LIMITS__MAX_QUEUE_MATCHES_PER_PEER": "1000000"}
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
# Channel options of benchmark clients: one TCP connection per stream, like separate bots
# (channels to one address would otherwise share a connection).
CHANNEL_OPTIONS = [("grpc.use_local_subchannel_pool", 1)]
OVERHEAD_METRIC = "kozel_decision_overhead_seconds"
REPLIES = {"start": "started", "stop": "stopped", "quit": "bye"}  # command -> reply event

# -- processes and /proc --------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def rss_kb(pid: int) -> int:
    """Resident memory of a process in KiB."""
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_KB


@dataclass
class Usage:
    """CPU and memory of one process at one moment."""

    cpu_s: float
    rss_kb: int
    at: float

    @classmethod
    def of(cls, pid: int) -> Usage:
        return cls(cpu_seconds(pid), rss_kb(pid), time.perf_counter())


def _python() -> list[str]:
    return [sys.executable, "-X", "faulthandler"]


@dataclass
class ServerProcess:
    """A ``kozel serve`` process on a free loopback port, its output going to a log file."""

    proc: subprocess.Popen[bytes]
    address: str
    metrics_address: str
    workdir: Path
    log_path: Path
    profiled: bool = False
    web: str = ""  # the web pages' base URL, when served

    @property
    def pid(self) -> int:
        return self.proc.pid

    def usage(self) -> Usage:
        return Usage.of(self.pid)

    def metrics(self) -> str:
        """The text of the referee's ``/metrics``."""
        with urllib.request.urlopen(f"http://{self.metrics_address}/metrics", timeout=10) as r:
            return r.read().decode()

    def stop(self, timeout: float = 30.0) -> None:
        """Kill the referee and remove its work folder. A profiled referee is stopped with
        SIGTERM (twice if need be: a second one ends a drain at once) so that it writes its
        profile, and killed only after ``timeout``."""
        if not self.profiled:  # nothing of it is needed any more, and a drain takes time
            self.proc.kill()
        for _ in range(2):
            if self.proc.poll() is None:
                self.proc.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=timeout / 2)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_server(
    *,
    move_ms: int | None = None,
    bank_ms: int | None = None,
    profile: Path | None = None,
    timeout: float = 60.0,
    env: dict[str, str] | None = None,
    web: bool = False,
    extra: Sequence[str] = (),
    limits: Mapping[str, str] = BENCH_LIMITS,
) -> ServerProcess:
    """Start a referee on a free loopback port, with ``/metrics`` on another, replays in a
    temporary folder and no drain on stop. With ``profile`` the referee runs under cProfile and
    writes its profile there when stopped. ``env`` adds environment variables (e.g.
    ``KOZEL_LIMITS__...`` settings), ``extra`` more ``kozel serve`` flags, ``limits`` the
    benchmark's raised limits (:data:`BENCH_LIMITS`, or those an older referee knows)."""
    workdir = Path(tempfile.mkdtemp(prefix="kozel-bench-"))
    args = _serve_args(workdir, web, extra, move_ms, bank_ms)
    log_path = workdir / "referee.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            _serve_command(args, profile),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **limits, **(env or {})},
        )
    found = _wait_listening(proc, log_path, web, timeout)
    if found is None:
        proc.kill()
        text = log_path.read_text(errors="replace")
        shutil.rmtree(workdir, ignore_errors=True)
        raise RuntimeError(f"the referee did not start:\n{text[-2000:]}")
    return ServerProcess(
        proc,
        found.address,
        found.metrics_address,
        workdir,
        log_path,
        profiled=profile is not None,
        web=found.web,
    )


def _serve_args(
    workdir: Path, web: bool, extra: Sequence[str], move_ms: int | None, bank_ms: int | None
) -> list[str]:
    """The ``kozel serve`` flags of a benchmark referee working in ``workdir``."""
    args = [
        "--listen",
        "127.0.0.1:0",
        "--metrics-listen",
        "127.0.0.1:0",
        "--replay-dir",
        str(workdir / "replays"),
        "--data-dir",
        str(workdir / "data"),
        "--log-level",
        "WARNING",
        "--drain-timeout",
        "0",
        "--web-listen",
        "127.0.0.1:0" if web else "",
        *extra,
    ]  # web pages only when measured
    if move_ms is not None:
        args += ["--move-ms", str(move_ms)]
    if bank_ms is not None:
        args += ["--bank-ms", str(bank_ms)]
    return args


def _serve_command(args: list[str], profile: Path | None) -> list[str]:
    """The command running ``kozel serve args``, under cProfile writing to ``profile`` if set."""
    if profile is None:
        return [*_python(), "-m", "kozel.cli.main", "serve", *args]
    # cProfile runs the module as __main__, so kozel.cli.main's own main() is called.
    return [
        *_python(),
        "-m",
        "cProfile",
        "-o",
        str(profile),
        "-m",
        "kozel.cli.main",
        "serve",
        *args,
    ]


@dataclass(frozen=True)
class _Listening:
    """Where a started referee listens, as its log says."""

    address: str
    metrics_address: str
    web: str  # the web pages' base URL, or "" when not served


def _wait_listening(
    proc: subprocess.Popen[bytes], log_path: Path, web: bool, timeout: float
) -> _Listening | None:
    """Where the referee listens once its log names its ports (and its web pages when
    ``web``); None if it exits or ``timeout`` seconds pass first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log_path.read_text(errors="replace")
        port = re.search(r"referee listening on \S+:(\d+)", text)
        metrics = re.search(r"metrics on http://\S+:(\d+)/metrics", text)
        pages = re.search(r"web pages on (http://\S+)", text)
        if port and metrics and (pages or not web):
            return _Listening(
                f"127.0.0.1:{port.group(1)}",
                f"127.0.0.1:{metrics.group(1)}",
                pages.group(1) if pages else "",
            )
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    return None


class Child:
    """A benchmark child process (``python -m MODULE ARGS``) that speaks JSON lines."""

    def __init__(self, module: str, *args: str) -> None:
        self.module = module
        self.proc = subprocess.Popen(
            [*_python(), "-m", module, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=_die_with_parent,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")  # end of output

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def expect(self, event: str, timeout: float = 120.0) -> dict[str, Any]:
        """Read lines until the event named ``event``; fails if the child dies or stays silent
        for ``timeout`` seconds first."""
        while True:
            msg = self.next(timeout)
            if msg.get("event") == event:
                return msg

    def next(self, timeout: float = 120.0) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise RuntimeError(f"{self.module} said nothing for {timeout:g} s") from None
        if not line:
            self.lines.put("")  # stay at the end
            raise RuntimeError(f"{self.module} exited ({self.proc.wait()})")
        msg = json.loads(line)
        if msg.get("event") == "failed":
            raise RuntimeError(f"{self.module} failed: {msg.get('error')}")
        return msg

    def close(self, timeout: float = 30.0) -> dict[str, Any] | None:
        """Send ``quit``; returns the child's last report (``bye``) if it gives one."""
        last = None
        try:
            if self.proc.poll() is None:
                self.send("quit")
                last = self.expect("bye", timeout)
        except (RuntimeError, OSError, ValueError):
            pass
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return last


def _die_with_parent() -> None:
    """In a child before exec: get SIGTERM when the benchmark process dies (Linux)."""
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class EchoServer:
    """The echo baseline's server process (:mod:`kozel.tools.bench_echo`)."""

    def __init__(self, replies: int = 1) -> None:
        self.proc = subprocess.Popen(
            [*_python(), "-m", "kozel.tools.bench_echo", "serve", "127.0.0.1:0", str(replies)],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            preexec_fn=_die_with_parent,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (\S+)", line)
        if m is None:
            self.stop()
            raise RuntimeError(f"the echo server did not start: {line!r}")
        self.address = m.group(1)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def note(text: str) -> None:
    """A progress line on stderr (stdout is kept for the results)."""
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def emit(event: str, **data: Any) -> None:
    """Print one JSON line for the parent benchmark."""
    print(json.dumps({"event": event, **data}), flush=True)


async def command_loop(handlers: dict[str, Callable[[], Awaitable[dict[str, Any]]]]) -> None:
    """Obey stdin lines: each names a handler whose result is printed as that event; ``quit``
    (or end of input) ends the loop after its handler ran."""
    loop = asyncio.get_running_loop()
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        command = line or "quit"
        handler = handlers.get(command)
        if handler is None:
            emit("failed", error=f"unknown command {command!r}")
            continue
        report = await handler()
        emit(REPLIES.get(command, command + "_done"), **report)
        if command == "quit":
            return


def child_main(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run a child's main coroutine; a crash is reported as a ``failed`` event."""
    try:
        asyncio.run(main())
    except Exception as exc:  # the parent must hear why, not just see EOF
        emit("failed", error=repr(exc))
        raise


# -- statistics ---------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` by linear interpolation; NaN when empty."""
    if not values:
        return float("nan")
    s = sorted(values)
    pos = (len(s) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def histogram_quantile(buckets: Sequence[tuple[float, float]], q: float) -> float:
    """The ``q`` quantile of a cumulative histogram ``[(le, count), ...]`` (ascending ``le``,
    the last one ``inf``), interpolated linearly inside the bucket as Prometheus does."""
    if not buckets or buckets[-1][1] <= 0:
        return float("nan")
    total = buckets[-1][1]
    rank = q * total
    uppers = [count for _, count in buckets]
    i = bisect_left(uppers, rank)
    i = min(i, len(buckets) - 1)
    le, count = buckets[i]
    if le == float("inf"):  # beyond the last finite bucket: its bound is all we know
        return buckets[i - 1][0] if i > 0 else float("nan")
    lower_le, lower_count = buckets[i - 1] if i > 0 else (0.0, 0.0)
    if count == lower_count:
        return le
    return lower_le + (le - lower_le) * (rank - lower_count) / (count - lower_count)


def histogram_buckets(text: str, name: str) -> list[tuple[float, float]]:
    """A histogram's cumulative buckets from Prometheus text, summed over its labels."""
    sums: dict[float, float] = {}
    for sample in _samples(text, name, name + "_bucket"):
        le = float(sample.labels["le"])
        sums[le] = sums.get(le, 0.0) + sample.value
    return sorted(sums.items())


def counter_total(text: str, name: str) -> float:
    """A counter's value from Prometheus text (``name`` without ``_total``), summed over its
    labels."""
    return sum(s.value for s in _samples(text, name, name + "_total"))


def _samples(text: str, family_name: str, sample_name: str) -> list[Any]:
    from prometheus_client.parser import text_string_to_metric_families

    return [
        sample
        for family in text_string_to_metric_families(text)
        if family.name == family_name
        for sample in family.samples
        if sample.name == sample_name
    ]


def bucket_delta(
    after: list[tuple[float, float]], before: list[tuple[float, float]]
) -> list[tuple[float, float]]:
    """The observations of a window: ``after`` minus ``before``, bucket by bucket."""
    prior = dict(before)
    return [(le, count - prior.get(le, 0.0)) for le, count in after]


@dataclass
class MetricsProbe:
    """The referee's ``/metrics`` read at the start and at the end of a window."""

    server: ServerProcess
    start: str = ""
    end: str = ""

    @property
    def available(self) -> bool:
        return OVERHEAD_METRIC in self.start

    def begin(self) -> None:
        self.start = self.server.metrics()

    def finish(self) -> None:
        if self.available:
            self.end = self.server.metrics()

    def quantiles_us(self, name: str, qs: Iterable[float] = (0.5, 0.99)) -> dict[str, float]:
        """Quantiles (microseconds) of a histogram over the window, interpolated inside its
        buckets; empty without metrics or observations."""
        window = (
            bucket_delta(histogram_buckets(self.end, name), histogram_buckets(self.start, name))
            if self.end
            else []
        )
        if not window or window[-1][1] <= 0:
            return {}
        return {f"p{round(q * 100)}_us": histogram_quantile(window, q) * 1e6 for q in qs}

    def observations(self, name: str) -> float | None:
        """How many observations a histogram got over the window (None without metrics)."""
        if not self.end:
            return None
        after, before = histogram_buckets(self.end, name), histogram_buckets(self.start, name)
        return (after[-1][1] if after else 0.0) - (before[-1][1] if before else 0.0)

    def increase(self, name: str) -> float | None:
        """How much a counter grew over the window (None without metrics)."""
        if not self.end:
            return None
        return counter_total(self.end, name) - counter_total(self.start, name)


def rounded(data: dict[str, Any]) -> dict[str, Any]:
    """Floats rounded for printing: one decimal, three below 10 (NaN becomes None, so the
    JSON stays valid)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, float):
            out[key] = None if value != value else round(value, 1 if abs(value) >= 10 else 3)
        elif isinstance(value, dict):
            out[key] = rounded(value)
        else:
            out[key] = value
    return out


def sum_reports(reports: Iterable[dict[str, Any]], keys: Iterable[str]) -> dict[str, Any]:
    """Per-key sums of the numeric fields of several children's reports."""
    reports = list(reports)
    return {k: sum(r.get(k, 0) for r in reports) for k in keys}


# -- real messages ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """Serialized real messages of a mid-deal two-player match, as the referee builds them."""

    request: bytes  # a PlayResponse carrying a DecisionRequest
    answer: bytes  # the PlayRequest answering it
    event: bytes  # a PlayResponse carrying the Event of a play


def sample_messages(seed: int = 7) -> Sample:
    """Real messages from a few tricks into a seeded classic two-player match."""
    import random

    from kozel.core import convert
    from kozel.engine.match import Match
    from kozel.engine.observation import event_views, observe
    from kozel.engine.rules import Ruleset
    from kozel.v1 import referee_pb2 as rpb

    match = Match(Ruleset.preset("classic"), 2, seed.to_bytes(32, "big"))
    rng = random.Random(seed)
    for _ in range(9):  # a few tricks in: a typical hand, some tricks and cards seen
        deal = match.deal
        seat = deal.to_act[0]
        match.apply(seat, rng.choice(deal.legal_actions(seat)))
    deal = match.deal
    seat = deal.to_act[0]
    legal = deal.legal_actions(seat)
    match_id = f"{rng.getrandbits(128):032x}"
    request = rpb.PlayResponse(
        decision=rpb.DecisionRequest(
            match_id=match_id,
            request_id=12,
            kind=convert.DECISION_TO_PB[deal.decision],
            move_ms=2000,
            time_bank_ms=10_000,
            observation=convert.observation_to_pb(observe(deal, seat)),
            legal_actions=[convert.action_to_pb(a) for a in legal],
            retries_left=2,
        )
    )
    answer = rpb.PlayRequest(
        action=rpb.ActionReply(match_id=match_id, request_id=12, legal_index=len(legal) - 1)
    )
    start = len(deal.log)
    match.apply(seat, legal[-1])
    view = event_views(deal, start, seat)[0]
    event = rpb.PlayResponse(event=convert.event_to_pb(match_id, len(match.records), view))
    return Sample(
        request.SerializeToString(), answer.SerializeToString(), event.SerializeToString()
    )
