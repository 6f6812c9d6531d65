"""``kozel match``: open a table, run house bots against it as separate processes, print the
result and the replay path."""

from __future__ import annotations

import argparse
import json
from contextlib import nullcontext
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kozel.engine.shuffle import seed_from
from kozel.tools.local import create_table, describe_result, referee_process, spawn_bot, wait_table
from kozel.v1 import game_pb2 as pb


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("match", help="play one match between house bots over gRPC")
    p.add_argument("--bots", default="greedy,random", help="comma-separated house bots, by seat")
    p.add_argument("--ruleset", default="classic", help="preset name")
    p.add_argument("--options", default="{}", help="knob overrides as JSON")
    p.add_argument("--server", help="use this referee instead of starting one")
    p.add_argument(
        "--replay-dir",
        type=Path,
        default=Path("data/replays"),
        help="where a referee started here writes replays",
    )
    p.add_argument("--seed", help="match seed, 64 hex digits")
    p.set_defaults(func=cmd_match)


def cmd_match(args: argparse.Namespace) -> int:
    bots = [b.strip() for b in args.bots.split(",") if b.strip()]
    seed = seed_from(args.seed) if args.seed else b""
    console = Console()
    ctx = nullcontext(args.server) if args.server else referee_process(args.replay_dir)
    with ctx as address:
        table_id = create_table(address, args.ruleset, len(bots), json.loads(args.options), seed)
        procs = [
            spawn_bot(kind, address, table_id, f"{kind}-{seat}") for seat, kind in enumerate(bots)
        ]
        with console.status(f"playing {args.ruleset} at table {table_id} ..."):
            done = wait_table(address, table_id)
        for proc in procs:
            proc.wait(timeout=30)
    result = done.result
    table = Table(title=f"{args.ruleset}: {describe_result(result, list(done.seating))}")
    for col in ("seat", "bot", "side", "penalties" if result.penalty_totals else "chips"):
        table.add_column(col)
    for p in done.seating:
        score = result.penalty_totals[p.side] if result.penalty_totals else result.chips[p.seat]
        table.add_row(str(p.seat), p.name, str(p.side), str(score))
    console.print(table)
    console.print(f"replay: {done.replay_path}")
    return 0 if result.reason != pb.MATCH_END_REASON_ABORTED else 1
