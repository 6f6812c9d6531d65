"""``kozel bench analysis``: the open-hand solver on one core, as ``kozel analyze`` runs it.

Random classic deals are played by random legal actions; then every decision of each, from
the first lead to the last, is solved (every legal action's exact value) by one
:class:`~kozel.analysis.solver.OpenHand` per deal, its tables carried over from decision to
decision. Reported per table size: CPU milliseconds per decision (median, 90th and 99th
percentiles, the slowest), the first lead's alone, the share of decisions solved exactly
within the node budget, nodes a second, and the memory of a deal's tables (the solver's
transposition tables as Python objects, after the deal: what one solve holds).
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from typing import Any

from kozel.analysis import native
from kozel.analysis.solver import OpenHand
from kozel.engine import NATIVE, Deal, Ruleset
from kozel.engine.players import play_random_deal


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _table_bytes(oh: OpenHand) -> int:
    """The bytes of the solver's tables (dicts, keys and entries) for one deal."""
    total = 0
    for search in oh._searches.values():  # noqa: SLF001 - the bench measures the solver's own
        tt = search.tt
        total += sys.getsizeof(tt)
        total += sum(sys.getsizeof(k) + sys.getsizeof(v) for k, v in tt.items())
    return total


def _deal(rules: Ruleset, players: int, rng: random.Random) -> tuple[Deal, list[Any]]:
    played, _ = play_random_deal(rules, players, rng)
    start = Deal.start(rules, players, played.deck, played.dealer, trump_index=played.trump_index)
    return start, list(played.history)


def bench_players(players: int, deals: int, max_nodes: int | None, seed: int) -> dict[str, Any]:
    rules = Ruleset.preset("classic")
    rng = random.Random(seed * 1000 + players)
    per_decision: list[float] = []
    first: list[float] = []
    memory: list[int] = []
    nodes = exact = decisions = 0
    cpu_total = 0.0
    for _ in range(deals):
        deal, steps = _deal(rules, players, rng)
        oh = OpenHand(deal, max_nodes)
        for i, (seat, action) in enumerate(steps):
            if len(deal.legal_actions(seat)) > 1:
                t = time.process_time()
                solution = oh.solve(deal, seat)
                ms = (time.process_time() - t) * 1000
                per_decision.append(ms)
                cpu_total += ms / 1000
                nodes += solution.nodes
                exact += solution.exact
                decisions += 1
                if i == 0:
                    first.append(ms)
            deal.apply(seat, action)
        memory.append(_table_bytes(oh))
    return {
        "players": players,
        "deals": deals,
        "decisions": decisions,
        "max_nodes": max_nodes,
        "ms_per_decision_median": round(statistics.median(per_decision), 2),
        "ms_per_decision_p90": round(_percentile(per_decision, 0.90), 2),
        "ms_per_decision_p99": round(_percentile(per_decision, 0.99), 2),
        "ms_per_decision_max": round(max(per_decision), 2),
        "first_lead_ms_median": round(statistics.median(first), 2) if first else None,
        "first_lead_ms_max": round(max(first), 2) if first else None,
        "exact_share": round(exact / decisions, 4),
        "nodes_per_s": round(nodes / cpu_total) if cpu_total else None,
        "memory_mb_per_deal_median": round(statistics.median(memory) / 2**20, 2),
        "memory_mb_per_deal_max": round(max(memory) / 2**20, 2),
        "native": NATIVE,
        "analysis_native": native.loaded(),
    }


def bench_analysis(
    players: list[int], deals: int, max_nodes: int | None, seed: int
) -> dict[str, dict[str, Any]]:
    """The figures by table size (see the module docstring)."""
    return {f"classic-{p}p": bench_players(p, deals, max_nodes, seed) for p in players}
