"""``kozel bench analysis``: the open-hand solver on one core, as ``kozel analyze`` runs it.

Random classic deals are played by random legal actions; then every decision of each, from
the first lead to the last, is solved (every legal action's exact value) by one
:class:`~kozel.analysis.solver.OpenHand` per deal, its tables carried over from decision to
decision. Reported per table size: CPU milliseconds per decision (median, 90th and 99th
percentiles, the slowest), the first lead's alone, the share of decisions solved exactly
within the node budget, nodes a second, and the memory of a deal's tables (the solver's
transposition tables as Python objects, after the deal: what one solve holds). The
information-set evaluator is timed too, on the first ``eval_deals`` deals, at every decision
from each seat's observation with its default budget (:data:`~kozel.analysis.infoset.DEFAULT_MS`'
worth of nodes): CPU milliseconds per decision, deals averaged over, the share of them solved
to the end.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from typing import Any

from kozel.analysis import native
from kozel.analysis.infoset import DEFAULT_MS, evaluate, nodes_for_ms
from kozel.analysis.solver import OpenHand
from kozel.engine import NATIVE, Deal, Ruleset, observe
from kozel.engine.actions import Decision
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


def _ms_figures(prefix: str, values: list[float]) -> dict[str, float | None]:
    if not values:
        return {f"{prefix}_median": None, f"{prefix}_p99": None, f"{prefix}_max": None}
    return {
        f"{prefix}_median": round(statistics.median(values), 2),
        f"{prefix}_p99": round(_percentile(values, 0.99), 2),
        f"{prefix}_max": round(max(values), 2),
    }


def bench_evaluator(players: int, deals: int, seed: int) -> dict[str, Any]:
    """The information-set evaluator at every decision of ``deals`` random deals (its default
    budget, each seat's own observation)."""
    rules = Ruleset.preset("classic")
    rng = random.Random(seed * 1000 + players + 500)
    per_decision: list[float] = []
    averaged = exact = 0
    for _ in range(deals):
        deal, steps = _deal(rules, players, rng)
        start = list(deal.hands)
        for seat, action in steps:
            if len(deal.legal_actions(seat)) > 1 and deal.decision is not Decision.DECLARE:
                t = time.process_time()
                info = evaluate(
                    rules, observe(deal, seat), start[seat], seed=len(per_decision),
                    nodes=nodes_for_ms(DEFAULT_MS),
                )  # fmt: skip
                per_decision.append((time.process_time() - t) * 1000)
                averaged += info.deals
                exact += info.exact_deals
            deal.apply(seat, action)
    n = max(1, len(per_decision))
    return {
        "evaluator_deals": deals,
        "evaluator_budget_ms": DEFAULT_MS,
        "evaluator_decisions": len(per_decision),
        **_ms_figures("evaluator_ms", per_decision),
        "evaluator_deals_averaged_mean": round(averaged / n, 1),
        "evaluator_exact_deal_share": round(exact / max(1, averaged), 4),
    }


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
    players: list[int], deals: int, max_nodes: int | None, seed: int, eval_deals: int = 0
) -> dict[str, dict[str, Any]]:
    """The figures by table size (see the module docstring)."""
    return {
        f"classic-{p}p": bench_players(p, deals, max_nodes, seed)
        | (bench_evaluator(p, eval_deals, seed) if eval_deals else {})
        for p in players
    }
