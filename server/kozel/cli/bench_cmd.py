"""``kozel bench engine``: random legal play on one core, in deals and decisions per second, clones
of deals stopped mid-play per second, and the ``ismcts`` bot's playouts from them (a clone
played to the end by its playout policies, as it plays them) per second, on the engine this
process runs (compiled or pure Python: ``native`` and ``playouts_native`` in each entry;
``KOZEL_ENGINE_PURE=1`` forces pure Python)."""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kozel import engine
from kozel.cli import bench_service_cmd
from kozel.engine.deal import Deal
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
    c = bsub.add_parser("core", help="the referee's seat protocol alone, without gRPC")
    c.add_argument("--json", action="store_true", help="print JSON only")
    c.add_argument("--matches", type=int, default=10, help="matches per round (five rounds)")
    c.add_argument("--seed", type=int, default=1)
    c.set_defaults(func=cmd_core)
    h = bsub.add_parser("harness", help="bots in-process on the referee's protocol vs the engine")
    h.add_argument("--json", action="store_true", help="print JSON only")
    h.add_argument("--matches", type=int, default=10, help="matches per round (five rounds)")
    h.add_argument("--seed", type=int, default=1)
    h.set_defaults(func=cmd_harness)
    v = bsub.add_parser("env", help="PettingZoo steps per second and the encoding's cost")
    v.add_argument("--json", action="store_true", help="print JSON only")
    v.add_argument("--steps", type=int, default=2000, help="steps per round (five rounds)")
    v.add_argument("--seed", type=int, default=1)
    v.set_defaults(func=cmd_env)
    o = bsub.add_parser(
        "ismcts-openspiel", help="OpenSpiel's ISMCTS against the arena's ismcts, same budget"
    )
    o.add_argument("--json", action="store_true", help="print JSON only")
    o.add_argument("--pairs", type=int, default=10, help="pairs of matches (seats swapped)")
    o.add_argument("--budget", type=float, default=0.1, help="CPU seconds per decision")
    o.add_argument("--max-deals", type=int, default=4, help="cut each match after this many")
    o.add_argument("--reward", choices=["points", "penalties"], default="points")
    o.add_argument("--seed", type=int, default=1)
    o.set_defaults(func=cmd_ismcts_openspiel)
    a = bsub.add_parser(
        "analysis",
        help="the open-hand solver: every decision of random deals, from the first lead",
    )
    a.add_argument("--json", action="store_true", help="print JSON only")
    a.add_argument("--deals", type=int, default=20, help="deals per table size")
    a.add_argument("--players", default="2,3,4", help="table sizes, e.g. 2 or 2,3,4")
    a.add_argument(
        "--max-nodes",
        type=int,
        default=2_000_000,
        help="node budget per decision (0: none, every value exact; default %(default)s)",
    )
    a.add_argument(
        "--eval-deals",
        type=int,
        default=3,
        help="deals per table size on which the information-set evaluator is timed too, at "
        "its default budget (0: not timed; default %(default)s)",
    )
    a.add_argument("--seed", type=int, default=1)
    a.set_defaults(func=cmd_analysis)
    _add_luck(bsub)
    bench_service_cmd.add_parsers(bsub)


def _add_luck(bsub: argparse._SubParsersAction) -> None:
    from kozel.tools.bench_luck import DEFAULT_PAIRS

    u = bsub.add_parser(
        "luck",
        help="the luck correction: bias check and effective-games multipliers (docs/luck.md)",
    )
    u.add_argument("--json", action="store_true", help="print JSON only")
    u.add_argument(
        "--pairs",
        default=DEFAULT_PAIRS,
        help="BOT:VS[:MATCHES] by comma, house bots (default %(default)s)",
    )
    u.add_argument("--players", default="2", help="table sizes, e.g. 2 or 2,3,4")
    u.add_argument("--matches", type=int, default=400, help="matches per pair and table size")
    u.add_argument("--jobs", type=int, default=1, help="matches played at once (processes)")
    u.add_argument("--boot", type=int, default=1000, help="bootstrap resamples")
    u.add_argument(
        "--sprt",
        nargs=2,
        type=float,
        default=(0.0, 50.0),
        metavar=("ELO0", "ELO1"),
        help="the SPRT whose length is estimated, plain and corrected (default 0 50)",
    )
    u.add_argument(
        "--sprt-runs",
        type=int,
        default=0,
        help="also run that many real SPRTs per two-player pair on fresh seeds, both tests on "
        "the same matches (default %(default)s: only the estimate from the played pairs)",
    )
    u.add_argument("--seed", type=int, default=1)
    u.set_defaults(func=cmd_luck)


def _mid_deal_states(rules: Ruleset, players: int, rng: random.Random, n: int) -> list[Deal]:
    """``n`` deals stopped at a random decision of random play: what search clones."""
    states = []
    for _ in range(n):
        deal, decisions = play_random_deal(rules, players, rng)
        stop = rng.randrange(decisions)
        replay = Deal.start(rules, players, deal.deck, deal.dealer, trump_index=deal.trump_index)
        for seat, action in deal.history[:stop]:
            replay.apply(seat, action)
        states.append(replay)
    return states


@dataclass
class _EngineRuns:
    """One configuration's measurements over the rounds of :func:`bench_engine`."""

    rates: list[tuple[float, float]] = field(default_factory=list)  # (deals/s, decisions/s)
    clones: list[float] = field(default_factory=list)
    playouts: list[float] = field(default_factory=list)
    deals: int = 0
    decisions: int = 0
    cpu_s: float = 0.0


def _per_second(slot: float, step: Callable[[], int]) -> tuple[int, float]:
    """Run ``step`` (which returns the items it did) for ``slot`` seconds: (items, wall s)."""
    done = 0
    start = time.perf_counter()
    while time.perf_counter() - start < slot:
        done += step()
    return done, time.perf_counter() - start


def _engine_round(runs: _EngineRuns, setup: tuple[Any, ...], slot: float, bot: Any) -> None:
    """One round of one configuration: random deals, then clones, then playouts."""
    from kozel.sdk.playout import playout

    _, rules, players, rng, states = setup
    counts = [0, 0]

    def deals() -> int:
        for _ in range(20):
            counts[1] += play_random_deal(rules, players, rng)[1]
        counts[0] += 20
        return 20

    cpu = time.process_time()
    _, wall = _per_second(slot, deals)
    runs.rates.append((counts[0] / wall, counts[1] / wall))
    runs.deals, runs.decisions = runs.deals + counts[0], runs.decisions + counts[1]
    runs.cpu_s += time.process_time() - cpu

    def clones() -> int:
        for deal in states:
            deal.clone()
        return len(states)

    done, wall = _per_second(slot / 4, clones)
    runs.clones.append(done / wall)
    policy = bot.playout_policy_for(0)  # seat 0's side, once, as a search builds it

    def playouts() -> int:
        for deal in states:
            playout(deal.clone(), 0, rng, bot.points_weight, bot.seen, None, policy)
        return len(states)

    done, wall = _per_second(slot / 4, playouts)
    runs.playouts.append(done / wall)


def bench_engine(seconds: float, seed: int, rounds: int = 5) -> dict[str, dict[str, float]]:
    """Deals, decisions, clones and playouts per second for each configuration in
    :data:`CONFIGS`.

    The configurations take turns for ``rounds`` rounds of ``seconds / rounds`` of random
    play each, then a quarter of that cloning deals stopped mid-play, then a quarter playing
    such clones out as ``ismcts`` does (:func:`kozel.sdk.playout.playout`); the best round is
    reported (as timeit does), since on a shared machine noise only ever slows a round.
    """
    # Imported here: a failure of the SDK's compiled search must not take the whole CLI down.
    from kozel.sdk import native as sdk_native
    from kozel.sdk.ismcts import IsmctsBot

    bot = IsmctsBot()
    setups = []
    for key, preset, players in CONFIGS:
        rules = Ruleset.preset(preset)
        rng = random.Random(seed)
        for _ in range(200):  # warm the shared move tables
            play_random_deal(rules, players, rng)
        setups.append((key, rules, players, rng, _mid_deal_states(rules, players, rng, 100)))
    runs = {setup[0]: _EngineRuns() for setup in setups}
    for _ in range(rounds):
        for setup in setups:
            _engine_round(runs[setup[0]], setup, seconds / rounds, bot)
    results: dict[str, dict[str, float]] = {}
    for key, r in runs.items():
        best = max(r.rates)
        results[key] = {
            "deals_per_s": round(best[0], 1),
            "decisions_per_s": round(best[1], 1),
            "median_deals_per_s": round(statistics.median(x[0] for x in r.rates), 1),
            "decisions_per_deal": round(r.decisions / r.deals, 2),
            "cpu_us_per_decision": round(r.cpu_s / r.decisions * 1e6, 2),
            "clones_per_s": round(max(r.clones), 1),
            "playouts_per_s": round(max(r.playouts), 1),
            "deals": r.deals,
            "native": engine.NATIVE,
            "playouts_native": sdk_native.loaded(),
        }
    return results


def _report(results: dict[str, Any], as_json: bool, what: str, columns: dict[str, str]) -> int:
    """Print ``results`` (by configuration) as JSON, or as a table of ``columns`` (heading:
    format of ``entry`` given as a format string on ``r``)."""
    if as_json:
        print(json.dumps(results, indent=1))
        return 0
    from rich.console import Console
    from rich.table import Table

    which = "compiled" if engine.NATIVE else "pure Python"
    table = Table(title=f"kozel bench {what}, {which} engine)")
    table.add_column("configuration", justify="right")
    for heading in columns:
        table.add_column(heading, justify="right")
    for key, r in results.items():
        table.add_row(key, *(fmt.format(r=r) for fmt in columns.values()))
    Console().print(table)
    return 0


def cmd_core(args: argparse.Namespace) -> int:
    from kozel.tools.bench_core import bench_core

    if args.matches < 1:
        print("kozel bench core: --matches must be at least 1", file=sys.stderr)
        return 2
    columns = {
        "CPU µs/decision (best)": "{r[cpu_us_per_decision]:.1f}",
        "median": "{r[median_cpu_us_per_decision]:.1f}",
        "decisions": "{r[decisions]:,}",
    }
    results = bench_core(args.matches, args.seed)
    return _report(results, args.json, "core (the seat protocol alone", columns)


def _positive(args: argparse.Namespace, *names: str) -> bool:
    for name in names:
        if getattr(args, name) <= 0:
            flag = name.replace("_", "-")
            print(f"kozel bench {args.bench_cmd}: --{flag} must be positive", file=sys.stderr)
            return False
    return True


def _env_tools() -> Any:
    """The environment's benches (None after saying how to install them)."""
    try:
        from kozel.tools import bench_env
    except ImportError as exc:  # pragma: no cover - the env extra is part of make setup
        print(f"kozel bench: {exc}; pip install 'kozel-arena[env]'", file=sys.stderr)
        return None
    return bench_env


def cmd_harness(args: argparse.Namespace) -> int:
    tools = _env_tools()
    if tools is None or not _positive(args, "matches"):
        return 2
    columns = {
        "matches/s": "{r[harness_matches_per_s]:,.1f}",
        "harness µs/decision": "{r[harness_cpu_us_per_decision]:.1f}",
        "engine µs/decision": "{r[engine_cpu_us_per_decision]:.2f}",
        "overhead": "{r[overhead]:.1f}x",
    }
    results = tools.bench_harness(args.matches, args.seed)
    return _report(results, args.json, "harness (random bots, in-process", columns)


def cmd_env(args: argparse.Namespace) -> int:
    tools = _env_tools()
    if tools is None or not _positive(args, "steps"):
        return 2
    columns = {
        "AEC steps/s (best)": "{r[steps_per_s]:,.0f}",
        "median": "{r[median_steps_per_s]:,.0f}",
        "encode µs/observation": "{r[encode_us_per_observation]:.1f}",
    }
    results = tools.bench_env(args.steps, args.seed)
    return _report(results, args.json, "env (PettingZoo AEC, random masked play", columns)


def cmd_ismcts_openspiel(args: argparse.Namespace) -> int:
    if not _positive(args, "pairs", "budget", "max_deals"):
        return 2
    try:
        from kozel.tools import openspiel_duel
    except ImportError as exc:  # pragma: no cover - the env extra is part of make setup
        print(f"kozel bench: {exc}; pip install 'kozel-arena[env]'", file=sys.stderr)
        return 2
    result = openspiel_duel.duel(args.pairs, args.budget, args.seed, args.reward, args.max_deals)
    figures = openspiel_duel.report(result, args.budget)
    if args.json:
        print(json.dumps(figures, indent=1))
    else:
        for name, value in figures.items():
            print(f"{name}: {value}")
    return 0


def cmd_engine(args: argparse.Namespace) -> int:
    columns = {
        "deals/s (best)": "{r[deals_per_s]:,.0f}",
        "deals/s (median)": "{r[median_deals_per_s]:,.0f}",
        "decisions/s": "{r[decisions_per_s]:,.0f}",
        "decisions/deal": "{r[decisions_per_deal]:.1f}",
        "clones/s": "{r[clones_per_s]:,.0f}",
        "playouts/s": "{r[playouts_per_s]:,.0f}",
    }
    results = bench_engine(args.seconds, args.seed)
    return _report(results, args.json, "engine (random legal play, one core", columns)


def cmd_analysis(args: argparse.Namespace) -> int:
    from kozel.tools.bench_analysis import bench_analysis

    try:
        players = [int(p) for p in args.players.split(",")]
        if (
            any(p not in (2, 3, 4) for p in players)
            or args.deals < 1
            or args.max_nodes < 0
            or args.eval_deals < 0
        ):
            raise ValueError
    except ValueError:
        print(
            "kozel bench analysis: --players takes 2, 3 or 4 (comma-separated), --deals at "
            "least 1, --max-nodes and --eval-deals 0 or more",
            file=sys.stderr,
        )
        return 2
    results = bench_analysis(
        players, args.deals, args.max_nodes or None, args.seed, args.eval_deals
    )
    columns = {
        "ms/decision median": "{r[ms_per_decision_median]:.1f}",
        "p99": "{r[ms_per_decision_p99]:.0f}",
        "max": "{r[ms_per_decision_max]:.0f}",
        "first lead median": "{r[first_lead_ms_median]:.0f}",
        "exact": "{r[exact_share]:.1%}",
        "nodes/s": "{r[nodes_per_s]:,}",
        "MB/deal (max)": "{r[memory_mb_per_deal_max]:.1f}",
    }
    if args.eval_deals:
        columns["evaluator ms median"] = "{r[evaluator_ms_median]:.0f}"
        columns["evaluator p99"] = "{r[evaluator_ms_p99]:.0f}"
    return _report(results, args.json, "analysis (the open-hand solver, one core", columns)


def cmd_luck(args: argparse.Namespace) -> int:
    from kozel.sdk.house_bots import HOUSE_BOTS
    from kozel.tools.bench_luck import bench_luck, parse_pairs
    from kozel.tools.elo import Sprt

    try:
        pairs = parse_pairs(args.pairs, list(HOUSE_BOTS))
        players = [int(p) for p in args.players.split(",")]
        if any(p not in (2, 3, 4) for p in players):
            raise ValueError("--players takes 2, 3 or 4 (comma-separated)")
    except ValueError as exc:
        print(f"kozel bench luck: {exc}", file=sys.stderr)
        return 2
    if not _positive(args, "matches", "jobs", "boot"):
        return 2
    try:
        sprt = Sprt(args.sprt[0], args.sprt[1])
    except ValueError as exc:
        print(f"kozel bench luck: {exc}", file=sys.stderr)
        return 2
    if args.sprt_runs < 0:
        print("kozel bench luck: --sprt-runs must be 0 or more", file=sys.stderr)
        return 2
    results = bench_luck(
        pairs,
        players,
        args.matches,
        args.seed,
        args.jobs,
        args.boot,
        sprt=sprt,
        played_runs=args.sprt_runs,
    )
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    for key, r in results.items():
        if isinstance(r, dict):
            print(f"{key}: {r['matches']} matches in {r['seconds']} s")
            for what in ("deal_points", "deal_penalties", "match_score"):
                print(f"  {what}: " + _luck_line(r[what]))
            if "results" in r.get("sprt", {}):
                t = r["sprt"]
                print(
                    f"  SPRT [{t['elo0']:g}, {t['elo1']:g}] median matches: results "
                    f"{t['results']['median_matches']}, corrected "
                    f"{t['corrected']['median_matches']}"
                )
            if "sprt_played" in r:
                print("  " + _played_line(r["sprt_played"]))
    return 0


def _played_line(t: dict[str, Any]) -> str:
    res, cor = t["results"], t["corrected"]
    return (
        f"{t['runs']} SPRT runs played: matches on results median {res['median_matches']} "
        f"(mean {res['mean_matches']}, H1 {res['h1_share']:.0%}), corrected median "
        f"{cor['median_matches']} (mean {cor['mean_matches']}, H1 {cor['h1_share']:.0%}); "
        f"corrected shorter in {t['corrected_shorter']}, longer in {t['corrected_longer']}"
    )


def _luck_line(f: dict[str, Any]) -> str:
    def iv(e: dict[str, float | None]) -> str:
        def num(x: float | None) -> str:
            return "n/a" if x is None else f"{x:.3f}"

        return f"{num(e['value'])} [{num(e['low'])}, {num(e['high'])}]"

    line = (
        f"plain {iv(f['plain'])}, corrected {iv(f['corrected'])}, luck {iv(f['luck'])}, "
        f"multiplier {iv(f['multiplier'])}"
    )
    if "duplicate" in f:
        line += f", duplicate {iv(f['duplicate'])}, with the correction "
        line += iv(f["duplicate_corrected"])
    deals = f.get("duplicate_deals", {})
    if "duplicate" in deals:
        line += f", duplicate deals {iv(deals['duplicate'])}, with the correction "
        line += iv(deals["duplicate_corrected"])
    return line
