"""``kozel bench ismcts-openspiel``: OpenSpiel's ISMCTS against the arena's ``ismcts`` at the same
think time, through the in-process harness: an outside reference for the house bot's strength.

Both search for ``budget_s`` seconds of CPU time of the thinking thread per decision.
OpenSpiel's bot (``open_spiel.python.algorithms.ismcts.ISMCTSBot``, random-rollout evaluator,
UCT) searches the deal in play of the ``kozel`` OpenSpiel game (:mod:`kozel.env.openspiel`),
rewarded as the game's ``reward`` says. It is handed the true state of the deal (from the
harness's table), which ISMCTS reads only through ``resample_from_infostate``: every simulation
starts from a state drawn from the seat's information set. The arena's bot gets only its
seat's messages. Matches come in pairs on one seed with the seats swapped.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyspiel
from open_spiel.python.algorithms import ismcts, mcts

from kozel.engine.match import Match
from kozel.env import openspiel
from kozel.env.harness import deliver
from kozel.env.table import Table
from kozel.sdk.bot import Bot
from kozel.sdk.ismcts import IsmctsBot
from kozel.v1 import referee_pb2 as rpb


class TimedIsmcts(ismcts.ISMCTSBot):
    """OpenSpiel's ISMCTSBot, searching for ``budget_s`` CPU seconds of this thread instead
    of a number of simulations (its own ``run_search`` otherwise)."""

    def __init__(self, game: Any, budget_s: float, seed: int) -> None:
        rng = np.random.RandomState(seed % 2**32)
        super().__init__(game, mcts.RandomRolloutEvaluator(1, rng), 2.0, 1, random_state=rng)
        self.budget_s = budget_s
        self.done = 0  # simulations of the last search

    def run_search(self, state: Any) -> Any:
        self.reset()
        self.done = 0
        legal = state.legal_actions()
        if len(legal) == 1:
            return [(legal[0], 1.0)]
        self._root_node = self.create_new_node(state)
        until = time.thread_time() + self.budget_s
        while not self.done or time.thread_time() < until:  # one at least: a policy needs it
            self.run_simulation(self.sample_root_state(state))
            self.done += 1
        return self.get_final_policy(state, self._root_node)


class OpenSpielBot(Bot):
    """OpenSpiel's ISMCTS playing the seats it is asked for (see the module docstring)."""

    def __init__(self, table: Table, budget_s: float, reward: str, seed: int) -> None:
        self.table = table
        match = table.match
        self.game = pyspiel.load_game(
            f"kozel(preset={match.rules.name},players={match.players},reward={reward})"
        )
        self.bot = TimedIsmcts(self.game, budget_s, seed)
        self.simulations: list[int] = []

    def choose(self, request: rpb.DecisionRequest) -> int:
        seat = request.observation.seat
        deal = self.table.match.deal
        state = openspiel.from_deal(self.game, deal, until=seat)
        if state.current_player() != seat:
            raise RuntimeError(f"the OpenSpiel state awaits {state.current_player()}, not {seat}")
        action = int(self.bot.step(state))
        if self.bot.done:
            self.simulations.append(self.bot.done)
        chosen = state.indexed(seat)[action]
        return deal.legal_actions(seat).index(chosen)


@dataclass
class DuelResult:
    """Per pair of matches (the same seed, seats swapped): the arena bot's score."""

    scores: list[float]
    penalty_diffs: list[float]  # per match: OpenSpiel's penalty total minus the arena bot's
    deals: int
    openspiel_simulations: list[int]
    arena_stats: dict[str, int]


def duel(pairs: int, budget_s: float, seed: int, reward: str, max_deals: int) -> DuelResult:
    """Play ``pairs`` pairs of classic two-player matches."""
    scores: list[float] = []
    diffs: list[float] = []
    sims: list[int] = []
    stats: dict[str, int] = {}
    deals = 0
    for i in range(pairs):
        for arena_seat in (0, 1):
            table = Table("classic", 2, seed + i, max_deals=max_deals)
            arena = IsmctsBot(budget_s=budget_s, seed=seed + i)
            outside = OpenSpielBot(table, budget_s, reward, seed + i)
            bots: list[Bot] = [outside, outside]
            bots[arena_seat] = arena
            deliver(table, bots, table.start())
            match = table.match
            deals += len(match.records)
            scores.append(_score(match, arena_seat))
            totals = match.outcome().penalty_totals
            diffs.append(float(totals[1 - arena_seat] - totals[arena_seat]))
            sims += outside.simulations
            for key, value in arena.stats.items():
                stats[key] = stats.get(key, 0) + value
    return DuelResult(scores, diffs, deals, sims, stats)


def _pair_means(values: list[float]) -> list[float]:
    """The mean of each pair of matches (the same seed, the seats swapped)."""
    return [(values[i] + values[i + 1]) / 2 for i in range(0, len(values) - 1, 2)]


def _score(match: Match, seat: int) -> float:
    ranks = match.outcome().ranks
    mine, theirs = ranks[seat], ranks[1 - seat]
    return 1.0 if mine < theirs else 0.0 if mine > theirs else 0.5


def interval(values: list[float]) -> tuple[float, float, float]:
    """The mean and its 95 % normal interval."""
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / max(n - 1, 1))
    half = 1.96 * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def report(result: DuelResult, budget_s: float) -> dict[str, Any]:
    """The figures of a duel as JSON-ready numbers: means with 95 % intervals over the pairs
    (a pair's two matches share their deals, so they are one sample)."""
    score = interval(_pair_means(result.scores))
    diff = interval(_pair_means(result.penalty_diffs))
    return {
        "pairs": len(result.scores) // 2,
        "matches": len(result.scores),
        "deals": result.deals,
        "budget_s": budget_s,
        "arena_score": [round(x, 3) for x in score],
        "penalty_margin_per_match": [round(x, 2) for x in diff],
        "openspiel_simulations_per_decision": round(
            float(np.median(result.openspiel_simulations)) if result.openspiel_simulations else 0, 1
        ),
        "arena_playouts_per_search": round(
            result.arena_stats.get("playouts", 0) / max(result.arena_stats.get("searched", 1), 1), 1
        ),
    }
