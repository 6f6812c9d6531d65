"""``kozel bench engine``: random legal play on one core, in deals and decisions per second."""

from __future__ import annotations

import argparse
import json
import random
import time

from kozel.engine.players import play_random_deal
from kozel.engine.rules import Ruleset

CONFIGS = (("classic-2p", "classic", 2), ("classic-3p", "classic", 3), ("classic-4p", "classic", 4))


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="measure speed")
    bsub = p.add_subparsers(dest="bench_cmd", required=True)
    e = bsub.add_parser("engine", help="random legal play on one core")
    e.add_argument("--json", action="store_true", help="print JSON only")
    e.add_argument("--seconds", type=float, default=3.0, help="time per configuration")
    e.add_argument("--seed", type=int, default=1)
    e.set_defaults(func=cmd_engine)


def bench_engine(seconds: float, seed: int) -> dict[str, dict[str, float]]:
    """Deals and decisions per second for each configuration in :data:`CONFIGS`."""
    results: dict[str, dict[str, float]] = {}
    for key, preset, players in CONFIGS:
        rules = Ruleset.preset(preset)
        rng = random.Random(seed)
        for _ in range(200):  # warm the shared move tables
            play_random_deal(rules, players, rng)
        deals = decisions = 0
        start = time.perf_counter()
        cpu = time.process_time()
        while time.perf_counter() - start < seconds:
            for _ in range(50):
                decisions += play_random_deal(rules, players, rng)[1]
            deals += 50
        wall = time.perf_counter() - start
        results[key] = {
            "deals_per_s": round(deals / wall, 1),
            "decisions_per_s": round(decisions / wall, 1),
            "decisions_per_deal": round(decisions / deals, 2),
            "cpu_s": round(time.process_time() - cpu, 3),
            "deals": deals,
        }
    return results


def cmd_engine(args: argparse.Namespace) -> int:
    results = bench_engine(args.seconds, args.seed)
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title="kozel bench engine (random legal play, one core)")
    for col in ("configuration", "deals/s", "decisions/s", "decisions/deal"):
        table.add_column(col, justify="right")
    for key, r in results.items():
        table.add_row(key, f"{r['deals_per_s']:,.0f}", f"{r['decisions_per_s']:,.0f}",
                      f"{r['decisions_per_deal']:.1f}")
    Console().print(table)
    return 0
