"""The information-set evaluator: the value of each legal action given only what the acting
seat knew.

The seat's view comes from the engine's observer (:func:`kozel.engine.observe`, the one
filter of hidden information); :class:`~kozel.analysis.worlds.Worlds` turns it into deals of
the hidden cards consistent with everything the seat saw, as the ``ismcts`` house bot draws
them. When the unseen cards are few, every consistent deal is taken, weighted by how many
orders of the unseen cards give it (no sampling error); else deals are drawn at random. Each
deal is solved with the cards open (:mod:`kozel.analysis.solver`), so an action's value is
the card points the seat's side takes from the decision to the end of the deal, averaged over
the deals, with its standard error (and the standard error of its gap to the best action,
measured on the same deals). Where every deal was solved to its end and there are two sides,
the expected penalty of the seat's side for the deal comes too (each deal's card points
scored by the ruleset's entry).

Solving a deal to its end is dear while the talon is long (seconds at the first lead of a
two-player deal), so a deal the solver cannot finish within its share of the budget is solved
to a horizon (``horizon_cards`` more talon cards drawn) and the positions there are guessed at
by the strength of the hands (:meth:`kozel.analysis.solver.Search.estimate`):
:attr:`InfoSet.exact_deals` says how many deals were solved to the end.

The budget is in search nodes, not in time, so the result is the same on every machine for
a given seed and budget (:func:`nodes_for_ms` sizes it from milliseconds).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from kozel.analysis.solver import OpenHand, Solution
from kozel.analysis.worlds import Inconsistent, Worlds
from kozel.engine.actions import Action
from kozel.engine.cards import points
from kozel.engine.deal import Deal
from kozel.engine.errors import IllegalAction
from kozel.engine.observation import Observation
from kozel.engine.rules import Ruleset
from kozel.engine.scoring import deal_penalties

NODES_PER_MS: Final = 400
"""Search nodes per millisecond the budget assumes (the compiled solver does about 400 to 900
a millisecond on one core of a 2020s machine, depending on the position)."""
DEFAULT_MS: Final = 200
MIN_DEALS: Final = 8  # deals taken before the budget may stop the evaluation
MAX_DEALS: Final = 64
ENUMERATE: Final = 720  # at most this many orders of the unseen cards: every deal
HORIZON_CARDS: Final = 4


def nodes_for_ms(ms: int) -> int:
    """The node budget that takes about ``ms`` milliseconds (:data:`NODES_PER_MS`)."""
    return max(1, ms) * NODES_PER_MS


@dataclass(frozen=True, slots=True)
class InfoValue:
    """One action's value for the seat's side: the mean over the deals, its standard error,
    and the standard error of its gap to the best action (paired, on the same deals)."""

    action: Action
    mean: float
    se: float
    gap_se: float
    penalty: float | None = None  # the seat's side's expected penalty for the deal, where cheap


@dataclass(frozen=True, slots=True)
class InfoSet:
    """The information-set values of ``seat``'s legal actions (in the engine's order)."""

    seat: int
    values: tuple[InfoValue, ...]
    deals: int  # deals averaged over
    exact_deals: int  # of them solved to the end (the others to a horizon, then guessed)
    enumerated: bool  # every consistent deal, weighted: no sampling error
    nodes: int

    @property
    def best(self) -> int:
        """The index of the best action (the first of equals)."""
        top = max(v.mean for v in self.values)
        return next(i for i, v in enumerate(self.values) if v.mean == top)


class _Tally:
    """Weighted sums of each action's values and of their gaps to one another."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.weight = 0.0
        self.sums = [0.0] * n
        self.squares = [0.0] * n
        self.rows: list[tuple[float, list[float]]] = []
        self.penalties: list[float] | None = [0.0] * n  # None once a deal has none

    def add(self, weight: float, values: list[float], penalties: list[int] | None) -> None:
        self.weight += weight
        self.rows.append((weight, values))
        if penalties is None:
            self.penalties = None
        elif self.penalties is not None:
            for i, p in enumerate(penalties):
                self.penalties[i] += weight * p
        for i, v in enumerate(values):
            self.sums[i] += weight * v
            self.squares[i] += weight * v * v

    def means(self) -> list[float]:
        return [s / self.weight for s in self.sums]

    def se(self, values: list[float], exact: bool) -> float:
        """The standard error of a weighted mean of per-deal ``values`` (0 when every deal
        was taken)."""
        k = len(self.rows)
        if exact or k < 2:
            return 0.0
        mean = sum(w * v for (w, _), v in zip(self.rows, values)) / self.weight
        var = sum(w * (v - mean) ** 2 for (w, _), v in zip(self.rows, values)) / self.weight
        return math.sqrt(var * k / (k - 1) / k)


def evaluate(
    rules: Ruleset,
    obs: Observation,
    start_hand: int,
    *,
    seed: int = 0,
    nodes: int | None = None,
    prev_last_winner: int | None = None,
    horizon_cards: int = HORIZON_CARDS,
) -> InfoSet:
    """The values of the legal actions of the seat ``obs`` is the view of (see the module
    docstring); ``start_hand`` is the hand it was dealt, ``nodes`` the budget (default
    :data:`DEFAULT_MS`' worth). Raises :class:`~kozel.analysis.worlds.Unmodelled` for a
    ruleset the model of the hidden cards does not cover, and
    :class:`~kozel.analysis.solver.Unsupported` for the money game."""
    budget = nodes_for_ms(DEFAULT_MS) if nodes is None else nodes
    worlds = Worlds(rules, obs, start_hand, prev_last_winner)
    rng = random.Random(seed)
    deals: list[tuple[Deal, int]] | None = None
    if worlds.count() <= ENUMERATE:
        deals = worlds.every(rng)
    return _Evaluation(obs.seat, budget, horizon_cards).run(worlds, deals, rng)


class _Evaluation:
    def __init__(self, seat: int, budget: int, horizon_cards: int) -> None:
        self.seat = seat
        self.budget = budget
        self.horizon_cards = horizon_cards
        self.spent = 0
        self.exact = 0
        self.solve_to_end = True  # until a deal needs more than its share

    def run(
        self, worlds: Worlds, deals: list[tuple[Deal, int]] | None, rng: random.Random
    ) -> InfoSet:
        enumerated = deals is not None
        actions: tuple[Action, ...] | None = None
        tally: _Tally | None = None
        source = deals if deals is not None else self._drawn(worlds, rng)
        for count, (deal, weight) in enumerate(source, 1):
            legal = deal.legal_actions(self.seat)
            if actions is None:
                actions, tally = legal, _Tally(len(legal))
            if legal != actions:
                raise Inconsistent  # the model gave a deal the seat could tell apart
            assert tally is not None
            values, exact = self._values(deal)
            tally.add(weight, values, _penalties(deal, self.seat, values) if exact else None)
            if not enumerated and count >= MIN_DEALS and self.spent >= self.budget:
                break
        if actions is None or tally is None:
            raise Inconsistent
        return self._result(actions, tally, enumerated)

    def _drawn(self, worlds: Worlds, rng: random.Random) -> Iterator[tuple[Deal, int]]:
        """Up to :data:`MAX_DEALS` drawn deals, as the caller asks for them; a draw the
        observation rules out is drawn again, a few times."""
        drawn = fails = 0
        while drawn < MAX_DEALS and fails < 8 * MAX_DEALS:
            try:
                deal = worlds.sample(rng)
            except (Inconsistent, IllegalAction):
                fails += 1
                continue
            drawn += 1
            yield deal, 1

    def _values(self, deal: Deal) -> tuple[list[float], bool]:
        """The seat's actions' values in one deal, and whether they are exact: solved to the
        end while that fits in a share of the budget, else to the horizon."""
        share = max(1, self.budget // MIN_DEALS)
        if self.solve_to_end:
            solution = OpenHand(deal, max_nodes=share).solve(deal, self.seat)
            self.spent += solution.nodes
            if solution.exact:
                self.exact += 1
                return [float(v.low) for v in solution.values], True
            self.solve_to_end = False  # the next deals of this decision are as large
        horizon = deal.talon_pos + self.horizon_cards
        solution = OpenHand(deal, max_nodes=share, horizon=horizon).solve(deal, self.seat)
        self.spent += solution.nodes
        return _middles(solution), False

    def _result(self, actions: tuple[Action, ...], tally: _Tally, enumerated: bool) -> InfoSet:
        means = tally.means()
        best = max(range(len(means)), key=lambda i: means[i])
        exact = enumerated
        values = []
        for i, a in enumerate(actions):
            own = [row[i] for _, row in tally.rows]
            gaps = [row[best] - row[i] for _, row in tally.rows]
            pen = None if tally.penalties is None else tally.penalties[i] / tally.weight
            values.append(InfoValue(a, means[i], tally.se(own, exact), tally.se(gaps, exact), pen))
        return InfoSet(
            self.seat, tuple(values), len(tally.rows), self.exact, enumerated, self.spent
        )


def _penalties(deal: Deal, seat: int, values: list[float]) -> list[int] | None:
    """The penalty of ``seat``'s side for the deal after each action of exact ``values``
    (card points it takes from now; two sides: the other takes the rest), by the ruleset's
    scoring entry; a side with no trick yet that takes points is counted as taking one. None
    with three sides (their points are not apart) or in the money game."""
    sides = deal.active_sides()
    if len(sides) != 2 or deal.rules.is_money:
        return None
    side = deal.side_of[seat]
    other = sides[1 - sides.index(side)]
    entry = deal.rules.scoring_for(len(deal.active))
    pts, trk = deal.card_points(), deal.side_tricks()
    left = points(deal.rules.deck) - sum(pts)
    out = []
    for v in values:
        mine, theirs = pts[side] + int(v), pts[other] + left - int(v)
        tricks = [trk[side] or int(v > 0), trk[other] or int(left - v > 0)]
        out.append(deal_penalties(entry, [mine, theirs], tricks)[0])
    return out


def _middles(solution: Solution) -> list[float]:
    """Each value, or the middle of its interval when the budget cut it short."""
    return [(v.low + v.high) / 2 for v in solution.values]
