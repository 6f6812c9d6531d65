"""``kozel analyze REPLAY...``: every decision of replays scored (see docs/analysis.md).

A replay is a ``.kzr`` file, or a replay id with ``--server`` (a referee's gRPC address or a
web server's URL, as ``kozel replay fetch`` takes). Results are cached on disk, keyed by the
replay, the settings and the analysis version (``--cache-dir``, ``--no-cache``); ``--jobs N``
analyses N deals at once in worker processes.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kozel.analysis.review import Settings
from kozel.cli.replay_fetch import DEFAULT_LIMIT, REPLAY_ID, fetch_for
from kozel.server.text import escape, rich_text

MAX_JOBS = 64
MAX_BUDGET_MS = 60_000


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "analyze",
        help="score every decision of replays: values, losses, labels, luck (docs/analysis.md)",
    )
    p.add_argument("replay", nargs="+", help="a .kzr file, or a replay id with --server")
    p.add_argument("--seat", type=int, action="append", help="only this seat's decisions")
    p.add_argument(
        "--budget",
        type=int,
        default=200,
        metavar="MS",
        help="the information-set evaluator's budget per decision, in milliseconds of one "
        "core (a node budget: the same result on any machine; default 200)",
    )
    p.add_argument(
        "--open-nodes",
        type=int,
        default=Settings().open_nodes,
        help="the open-hand solver's node budget per decision (default %(default)s)",
    )
    p.add_argument("--seed", type=int, default=0, help="the evaluator's dice (default 0)")
    p.add_argument("--jobs", type=int, default=1, help="deals analysed at once (processes)")
    p.add_argument("--json", action="store_true", help="print the analysis as JSON")
    p.add_argument("--server", help="fetch replay ids from this referee (host:port) or web URL")
    p.add_argument("--cache-dir", type=Path, help="where results are cached")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.add_argument("--top", type=int, default=5, help="mistakes listed per replay (default 5)")
    p.set_defaults(func=cmd_analyze)


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kozel" / "analysis"


def _settings(args: argparse.Namespace) -> Settings | str:
    if not 1 <= args.budget <= MAX_BUDGET_MS:
        return f"--budget must be 1 to {MAX_BUDGET_MS} milliseconds, not {args.budget}"
    if not 1 <= args.open_nodes <= 10**9:
        return f"--open-nodes must be 1 to 10**9, not {args.open_nodes}"
    if not 1 <= args.jobs <= MAX_JOBS:
        return f"--jobs must be 1 to {MAX_JOBS}, not {args.jobs}"
    if args.seat is not None and any(not 0 <= s <= 4 for s in args.seat):
        return f"--seat must be a seat number 0 to 4, not {args.seat}"
    seats = None if args.seat is None else tuple(sorted(set(args.seat)))
    return Settings(args.budget, args.open_nodes, args.seed, seats)


def _read(name: str, server: str | None) -> bytes | str:
    """The replay's bytes, or why it cannot be had."""
    from kozel.server.replay.file import ReplayError, decode_replay

    path = Path(name)
    try:
        if path.exists() or server is None:
            data = path.read_bytes()
        elif re.fullmatch(REPLAY_ID, name):
            fetch = fetch_for(server)
            data = fetch(server, name, DEFAULT_LIMIT)
        else:
            return "not a file, nor a replay id (8 to 64 lowercase hex digits)"
        decode_replay(data)
    except (OSError, LookupError, ReplayError) as exc:
        return str(exc)
    return data


def cmd_analyze(args: argparse.Namespace) -> int:
    from kozel.web.analysis import AnalysisError, FileCache, cache_key, check, steps_of

    settings = _settings(args)
    if isinstance(settings, str):
        print(f"error: {settings}", file=sys.stderr)
        return 2
    cache = None if args.no_cache else FileCache(args.cache_dir or default_cache())
    console = Console(stderr=True)
    inputs: list[tuple[str, bytes]] = []
    worst = 0
    for name in args.replay:
        data = _read(name, args.server)
        if isinstance(data, str):
            print(f"{escape(name)}: cannot read the replay: {escape(data)}", file=sys.stderr)
            worst = 2
            continue
        inputs.append((name, data))
    results: list[tuple[str, dict[str, Any] | str]] = []
    total = sum(steps_of(data) for _, data in inputs)
    with _progress(console, total) as advance:
        for name, data in inputs:
            key = cache_key(data, settings)
            found = cache.get(key) if cache is not None else None
            if found is None:
                try:
                    from kozel.server.replay.file import decode_replay

                    check(decode_replay(data))
                    found = _run(data, settings, args.jobs, advance)
                except AnalysisError as exc:
                    results.append((name, str(exc)))
                    worst = max(worst, 1)
                    continue
                if cache is not None:
                    cache.put(key, found)
            else:
                advance(steps_of(data))
            results.append((name, found))
    _report(results, args, console)
    return worst


def analysis_of(
    data: bytes, budget_ms: int, open_nodes: int, jobs: int = 1
) -> dict[str, Any] | str:
    """A replay's analysis with these budgets, through the cache and with a progress bar
    (for ``kozel replay html --analysis``), or why there is none."""
    from kozel.server.replay.file import decode_replay
    from kozel.web.analysis import AnalysisError, FileCache, cache_key, check, steps_of

    if not 1 <= budget_ms <= MAX_BUDGET_MS or not 1 <= jobs <= MAX_JOBS or open_nodes < 1:
        return f"--budget must be 1 to {MAX_BUDGET_MS}, --jobs 1 to {MAX_JOBS}, --open-nodes 1+"
    settings = Settings(budget_ms=budget_ms, open_nodes=open_nodes)
    cache = FileCache(default_cache())
    key = cache_key(data, settings)
    found = cache.get(key)
    if found is not None:
        return found
    try:
        check(decode_replay(data))
    except AnalysisError as exc:
        return str(exc)
    with _progress(Console(stderr=True), steps_of(data)) as advance:
        found = _run(data, settings, jobs, advance)
    cache.put(key, found)
    return found


def _run(
    data: bytes, settings: Settings, jobs: int, advance: Callable[[int], None]
) -> dict[str, Any]:
    from kozel.web.analysis import analyze_replay

    if jobs <= 1:
        return analyze_replay(data, settings, done=advance)
    spawn = multiprocessing.get_context("spawn")  # no fork of a process that may hold threads
    with ProcessPoolExecutor(jobs, mp_context=spawn) as pool:
        return analyze_replay(data, settings, executor=pool, done=advance)


class _progress:
    """A progress bar over the replays' steps on stderr (a callable advancing it)."""

    def __init__(self, console: Console, total: int) -> None:
        columns = (TextColumn("analysing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        self.progress = Progress(*columns, console=console, transient=True)
        self.task = self.progress.add_task("analysing", total=total)

    def __enter__(self) -> Callable[[int], None]:
        self.progress.__enter__()
        return lambda n: self.progress.advance(self.task, n)

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)


def _report(
    results: list[tuple[str, dict[str, Any] | str]], args: argparse.Namespace, console: Console
) -> None:
    if args.json:
        docs = [r if isinstance(r, dict) else {"replay": n, "error": r} for n, r in results]
        print(json.dumps(docs[0] if len(docs) == 1 else docs, indent=1))
        return
    out = Console()
    for name, result in results:
        if isinstance(result, str):
            print(f"{escape(name)}: not analysed: {escape(result)}")
            continue
        out.print(render(name, result, args.top))


def render(name: str, a: dict[str, Any], top: int = 5) -> Table:
    """A replay's analysis for people: per seat, then the biggest mistakes."""
    names = {str(s["seat"]): s["name"] for s in a["seats"]}
    sides = {str(s["seat"]): s["side"] for s in a["seats"]}
    table = Table(title=rich_text(f"{name}: match {a['match_id']} ({a['preset']})"))
    for col in ("seat", "bot", "choices", "lost", "/choice", "acc %", "inacc.", "mist.",
                "blund.", "luck"):  # fmt: skip
        table.add_column(col, justify="left" if col == "bot" else "right")
    for seat, s in a["summary"].items():
        labels = s["labels"]
        luck = a["luck"].get(str(sides.get(seat, "")))
        table.add_row(
            seat,
            rich_text(names.get(seat, "")),
            str(s["decisions"]),
            f"{s['loss']:.1f}",
            "n/a" if s["loss_per_decision"] is None else f"{s['loss_per_decision']:.2f}",
            "n/a" if s["accuracy"] is None else f"{s['accuracy']:.1f}",
            str(labels.get("inaccuracy", 0)),
            str(labels.get("mistake", 0)),
            str(labels.get("blunder", 0)),
            "n/a" if luck is None else f"{luck:+.1f}",
        )
    worst = sorted(
        ((d["loss"], deal["index"], d) for deal in a["deals"] for d in deal["decisions"]),
        key=lambda x: -x[0],
    )[:top]
    rows = [
        f"  deal {i} step {d['step']}: seat {d['seat']} played {_act(d, d['played'])}, "
        f"best {_act(d, d['best'])}: {loss:.1f} points ({d['label']})"
        for loss, i, d in worst
        if d["label"] != "good"
    ]
    if rows:
        table.caption = "biggest mistakes:\n" + "\n".join(rows)
        table.caption_justify = "left"
    return table


def _act(d: dict[str, Any], i: int) -> str:
    action = d["actions"][i]["action"]
    ((kind, value),) = action.items()
    return (
        kind if value is True else f"{kind} {' '.join(value) if isinstance(value, list) else value}"
    )
