"""``kozel bench engine``: random legal play on one core, in deals and decisions per second."""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

from kozel.cli import bench_service_cmd
from kozel.engine.players import play_random_deal
from kozel.engine.rules import Ruleset

CONFIGS = (("classic-2p", "classic", 2), ("classic-3p", "classic", 3), ("classic-4p", "classic", 4))


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="measure speed")
    bsub = p.add_subparsers(dest="bench_cmd", required=True)
    e = bsub.add_parser("engine", help="random legal play on one core")
    e.add_argument("--json", action="store_true", help="print JSON only")
    e.add_argument("--seconds", type=float, default=5.0, help="time per configuration")
    e.add_argument("--seed", type=int, default=1)
    e.set_defaults(func=cmd_engine)
    bench_service_cmd.add_parsers(bsub)


def bench_engine(seconds: float, seed: int, rounds: int = 5) -> dict[str, dict[str, float]]:
    """Deals and decisions per second for each configuration in :data:`CONFIGS`.

    The configurations take turns for ``rounds`` rounds of ``seconds / rounds`` each; the best
    round is reported (as timeit does), since on a shared machine noise only ever slows a round.
    """
    setups = []
    for key, preset, players in CONFIGS:
        rules = Ruleset.preset(preset)
        rng = random.Random(seed)
        for _ in range(200):  # warm the shared move tables
            play_random_deal(rules, players, rng)
        setups.append((key, rules, players, rng))
    rates: dict[str, list[tuple[float, float]]] = {key: [] for key, *_ in setups}
    totals = {key: [0, 0, 0.0] for key, *_ in setups}
    for _ in range(rounds):
        for key, rules, players, rng in setups:
            deals = decisions = 0
            cpu = time.process_time()
            start = time.perf_counter()
            while time.perf_counter() - start < seconds / rounds:
                for _ in range(20):
                    decisions += play_random_deal(rules, players, rng)[1]
                deals += 20
            wall = time.perf_counter() - start
            rates[key].append((deals / wall, decisions / wall))
            t = totals[key]
            t[0] += deals
            t[1] += decisions
            t[2] += time.process_time() - cpu
    results: dict[str, dict[str, float]] = {}
    for key, runs in rates.items():
        best = max(runs)
        deals, decisions, cpu_s = totals[key]
        results[key] = {
            "deals_per_s": round(best[0], 1),
            "decisions_per_s": round(best[1], 1),
            "median_deals_per_s": round(statistics.median(r[0] for r in runs), 1),
            "decisions_per_deal": round(decisions / deals, 2),
            "cpu_us_per_decision": round(cpu_s / decisions * 1e6, 2),
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
    for col in ("configuration", "deals/s (best)", "deals/s (median)", "decisions/s",
                "decisions/deal"):
        table.add_column(col, justify="right")
    for key, r in results.items():
        table.add_row(key, f"{r['deals_per_s']:,.0f}", f"{r['median_deals_per_s']:,.0f}",
                      f"{r['decisions_per_s']:,.0f}", f"{r['decisions_per_deal']:.1f}")
    Console().print(table)
    return 0
