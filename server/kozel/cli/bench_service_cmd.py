"""``kozel bench referee|load|soak``: the referee as a process, measured from outside.

The sizes are the issue's; the hidden flags shrink a run for tests. See BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from kozel.tools.bench_common import rounded

HIDDEN = argparse.SUPPRESS


def add_parsers(bsub: argparse._SubParsersAction) -> None:
    """Add the referee, load, soak and cluster benchmarks to ``kozel bench``."""
    _add_referee(bsub)
    _add_load(bsub)
    _add_soak(bsub)
    _add_cluster(bsub)


def _add_referee(bsub: argparse._SubParsersAction) -> None:
    """``kozel bench referee``: the referee against a bare gRPC echo."""
    r = bsub.add_parser("referee", help="decisions per second against a bare gRPC echo")
    r.add_argument("--json", action="store_true", help="print JSON only")
    r.add_argument("--profile", type=Path, help="run the referee under cProfile, write here")
    r.add_argument("--matches", type=int, default=100, help=HIDDEN)
    r.add_argument("--duration", type=float, default=20.0, help=HIDDEN)
    r.add_argument("--warmup", type=float, default=5.0, help=HIDDEN)
    r.add_argument("--echo-duration", type=float, default=10.0, help=HIDDEN)
    r.add_argument(
        "--baseline",
        type=Path,
        metavar="SRC",
        help="also measure the referee of another checkout of this repository "
        "(e.g. a git worktree of an older commit), back to back with the same "
        "bots and echo, and report both",
    )
    r.add_argument(
        "--events",
        action="store_true",
        help="bots take Event messages too (default: Hello.skip_events)",
    )
    r.set_defaults(func=cmd_referee)


def _add_load(bsub: argparse._SubParsersAction) -> None:
    """``kozel bench load``: many bot streams against a short clock."""
    ld = bsub.add_parser("load", help="1,000 bot streams against a 200 ms clock")
    ld.add_argument("--json", action="store_true", help="print JSON only")
    ld.add_argument("--profile", type=Path, help="run the referee under cProfile, write here")
    ld.add_argument("--streams", type=int, default=1000, help=HIDDEN)
    ld.add_argument("--duration", type=float, default=60.0, help=HIDDEN)
    ld.add_argument("--warmup", type=float, default=10.0, help=HIDDEN)
    ld.add_argument("--bot-processes", type=int, default=2, help=HIDDEN)
    ld.add_argument(
        "--skip-events",
        dest="events",
        action="store_false",
        help="bots set Hello.skip_events (timeouts are then counted by the referee only)",
    )
    ld.add_argument(
        "--web-load",
        type=int,
        default=0,
        metavar="N",
        help="meanwhile N connections fetch the referee's web pages, API and "
        "replays as fast as it answers (loopback)",
    )
    ld.set_defaults(func=cmd_load)


def _add_soak(bsub: argparse._SubParsersAction) -> None:
    """``kozel bench soak``: matches back to back, watching memory."""
    s = bsub.add_parser("soak", help="10,000 matches back to back, watching memory")
    s.add_argument("--json", action="store_true", help="print JSON only")
    s.add_argument("--matches", type=int, default=10_000, help=HIDDEN)
    s.add_argument("--first-sample", type=int, default=1000, help=HIDDEN)
    s.add_argument("--tables", type=int, default=20, help=HIDDEN)
    s.set_defaults(func=cmd_soak)


def _add_cluster(bsub: argparse._SubParsersAction) -> None:
    """``kozel bench cluster``: one ladder on several referees sharing PostgreSQL."""
    c = bsub.add_parser("cluster", help="one ladder on 1, 2 and 3 referees sharing one PostgreSQL")
    c.add_argument("--json", action="store_true", help="print JSON only")
    c.add_argument(
        "--db",
        default=os.environ.get("KOZEL_BENCH_DATABASE_URL", ""),
        help="PostgreSQL URL whose user may create databases (default: "
        "$KOZEL_BENCH_DATABASE_URL); a database is made and dropped per size",
    )
    c.add_argument("--sizes", default="1,2,3", help="referee counts to measure (1,2,3)")
    c.add_argument("--bots", type=int, default=24, help="random house bots (24)")
    c.add_argument("--duration", type=float, default=30.0, help="seconds measured per size")
    c.add_argument("--warmup", type=float, default=8.0, help=HIDDEN)
    c.set_defaults(func=cmd_cluster)


def _print(title: str, result: dict[str, Any], as_json: bool) -> None:
    result = rounded(result)
    if as_json:
        print(json.dumps(result, indent=1))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in result.items():
        table.add_row(key, f"{value:,}" if isinstance(value, int | float) else str(value))
    Console().print(table)


def cmd_referee(args: argparse.Namespace) -> int:
    from kozel.tools.bench_referee import RefereeBench, run, source_env

    if args.baseline is not None:
        try:
            source_env(args.baseline)
        except ValueError as exc:
            print(f"kozel bench referee: --baseline: {exc}", file=sys.stderr)
            return 2

    result = run(
        RefereeBench(
            matches=args.matches,
            warmup_s=args.warmup,
            duration_s=args.duration,
            echo_duration_s=args.echo_duration,
            profile=args.profile,
            events=args.events,
            baseline=args.baseline,
        )
    )
    _print("kozel bench referee", result, args.json)
    return 0


def cmd_load(args: argparse.Namespace) -> int:
    from kozel.tools.bench_load import LoadBench, run

    result = run(
        LoadBench(
            streams=args.streams,
            duration_s=args.duration,
            warmup_s=args.warmup,
            bot_processes=args.bot_processes,
            profile=args.profile,
            events=args.events,
            web_load=args.web_load,
        )
    )
    _print("kozel bench load", result, args.json)
    return 0


def cmd_cluster(args: argparse.Namespace) -> int:
    from kozel.tools.bench_cluster import ClusterBench, run

    if not args.db.startswith("postgresql"):
        print(
            "kozel bench cluster: needs PostgreSQL: give --db "
            "postgresql+psycopg://USER:PASS@HOST/DB or set KOZEL_BENCH_DATABASE_URL",
            file=sys.stderr,
        )
        return 2
    sizes = tuple(int(x) for x in args.sizes.split(",") if x.strip())
    result = run(
        ClusterBench(
            db=args.db,
            sizes=sizes,
            bots=args.bots,
            duration_s=args.duration,
            warmup_s=args.warmup,
        )
    )
    if args.json:
        _print("kozel bench cluster", result, True)
        return 0
    for size in result.pop("sizes"):
        _print(f"kozel bench cluster: {size['referees']} referee(s)", size, False)
    _print("kozel bench cluster", result, False)
    return 0


def cmd_soak(args: argparse.Namespace) -> int:
    from kozel.tools.bench_soak import SoakBench, run

    first = min(args.first_sample, args.matches)
    result = run(
        SoakBench(
            matches=args.matches, first_sample=first, sample_every=max(first, 1), tables=args.tables
        )
    )
    _print("kozel bench soak", result, args.json)
    return 0
