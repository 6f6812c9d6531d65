"""Every decision of a played deal scored: what was played, every legal action's open-hand
and information-set values, the played action's loss against the best, a label, and per-deal
and per-seat summaries.

A decision's **loss** is in expected card points: the information-set value of the best action
minus that of the played one (what the seat could have known), or, where the hidden cards are
not modelled (a ``random_middle`` trump, mid-trick interruptions, declaration windows), the
open-hand one (with the cards open, in hindsight). Its **label** comes from
:data:`THRESHOLDS`; a loss within :data:`SIGNIFICANCE` standard errors of nothing is ``good``
(the sampling cannot tell the two actions apart). **Accuracy** is the share of what the seat
could gain by choosing that it did gain: over its decisions, the sum of (played - worst)
over the sum of (best - worst), in per cent. The **luck** of a deal for a side is what the
cards alone gave it: its open-hand value at the deal's first decision (every seat playing its
best from there) minus an even share of the deal's 120 points.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kozel.analysis.infoset import InfoSet, evaluate, nodes_for_ms
from kozel.analysis.solver import OpenHand, Solution
from kozel.analysis.worlds import Inconsistent, Unmodelled
from kozel.engine.actions import Action, Decision
from kozel.engine.deal import Deal
from kozel.engine.observation import observe

ANALYSIS_VERSION: Final = 1
"""Changes whenever the same settings could give other values (a cached result's key)."""

THRESHOLDS: Final = (("blunder", 20.0), ("mistake", 10.0), ("inaccuracy", 4.0))
"""Labels by the loss in card points, worst first. 4 is a king or a queen and jack given
away, 10 a ten (or an ace's worth short of it), 20 two of the big cards: a sixth of the
deal's points, which often decides who reaches 61."""
SIGNIFICANCE: Final = 2.0
"""A loss is labelled only when it exceeds this many standard errors."""
DEFAULT_OPEN_NODES: Final = 1_000_000
"""The open-hand solver's node budget per decision (about a second); early decisions of
long deals may end as intervals."""


@dataclass(frozen=True, slots=True)
class Settings:
    """What an analysis depends on besides the replay (part of its cache key)."""

    budget_ms: int = 200  # the information-set evaluator's budget per decision
    open_nodes: int = DEFAULT_OPEN_NODES
    seed: int = 0
    seats: tuple[int, ...] | None = None  # only these seats' decisions (None: all)

    def key(self) -> str:
        seats = "all" if self.seats is None else "-".join(map(str, self.seats))
        return f"v{ANALYSIS_VERSION}-b{self.budget_ms}-o{self.open_nodes}-s{self.seed}-seats{seats}"


def label(loss: float, se: float) -> str:
    """The label of a loss (card points) measured with standard error ``se``."""
    if loss <= SIGNIFICANCE * se:
        return "good"
    for name, threshold in THRESHOLDS:
        if loss >= threshold:
            return name
    return "good"


@dataclass(frozen=True, slots=True)
class DecisionReview:
    """One decision: the legal actions (engine order) with their values, the one played."""

    step: int  # index in the deal's steps
    seat: int
    side: int
    kind: str  # lead, respond, declare
    talon: int
    actions: tuple[Action, ...]
    played: int
    taken: tuple[int, ...]  # card points each side had taken before it
    open_low: tuple[int, ...] | None  # open-hand values (intervals when the budget ran out)
    open_high: tuple[int, ...] | None
    paranoid: bool
    other: int | None  # two sides: the other one
    info: InfoSet | None
    basis: str  # "infoset" or "open": which values the loss comes from
    best: int
    loss: float
    loss_se: float
    label: str

    def values(self) -> list[float]:
        """The values the loss comes from, one per action."""
        if self.info is not None:
            return [v.mean for v in self.info.values]
        assert self.open_low is not None and self.open_high is not None
        return [(lo + hi) / 2 for lo, hi in zip(self.open_low, self.open_high)]


@dataclass(slots=True)
class SeatSummary:
    decisions: int = 0
    loss: float = 0.0
    labels: dict[str, int] = field(default_factory=dict)
    gained: float = 0.0  # sum of (played - worst)
    possible: float = 0.0  # sum of (best - worst)

    def add(self, d: DecisionReview) -> None:
        values = d.values()
        self.decisions += 1
        self.loss += d.loss
        self.labels[d.label] = self.labels.get(d.label, 0) + 1
        worst = min(values)
        self.gained += values[d.played] - worst
        self.possible += max(values) - worst

    def merge(self, other: SeatSummary) -> None:
        self.decisions += other.decisions
        self.loss += other.loss
        for k, v in other.labels.items():
            self.labels[k] = self.labels.get(k, 0) + v
        self.gained += other.gained
        self.possible += other.possible

    @property
    def accuracy(self) -> float | None:
        """Per cent of what choosing could gain that was gained (None without a choice)."""
        return 100.0 * self.gained / self.possible if self.possible > 0 else None


@dataclass(frozen=True, slots=True)
class DealReview:
    index: int
    decisions: tuple[DecisionReview, ...]
    points: tuple[int, ...]  # card points each side took
    luck: tuple[float | None, ...]  # by side: open-hand start value minus an even share
    luck_exact: bool
    seats: dict[int, SeatSummary]
    error: str | None = None


def review_deal(
    deal: Deal,
    steps: Sequence[tuple[int, Action]],
    settings: Settings,
    *,
    index: int = 0,
    prev_last_winner: int | None = None,
    progress: Callable[[], None] | None = None,
) -> DealReview:
    """Every decision of ``deal`` (at its start) as ``steps`` play it (see the module
    docstring). ``progress`` is called after each step."""
    start = list(deal.hands)
    solver = OpenHand(deal, settings.open_nodes)
    out: list[DecisionReview] = []
    seats: dict[int, SeatSummary] = {}
    luck, luck_exact = _luck(deal, solver)
    for i, (seat, action) in enumerate(steps):
        legal = deal.legal_actions(seat)
        wanted = settings.seats is None or seat in settings.seats
        if len(legal) > 1 and wanted:
            seed = settings.seed * 1_000_003 + index * 1009 + i
            d = _decision(deal, solver, i, seat, action, legal, start, settings, seed,
                          prev_last_winner)  # fmt: skip
            out.append(d)
            seats.setdefault(seat, SeatSummary()).add(d)
        deal.apply(seat, action)
        if progress is not None:
            progress()
    return DealReview(index, tuple(out), tuple(deal.card_points()), luck, luck_exact, seats)


def _luck(deal: Deal, solver: OpenHand) -> tuple[tuple[float | None, ...], bool]:
    """Each side's open-hand value at the deal's first decision minus an even share; when
    the budget cannot solve it, the value of a search to a horizon (an estimate: False)."""
    if deal.over:
        return (), True
    sides = sorted({deal.side_of[s] for s in deal.active})
    seat = deal.to_act[0]
    share = 120 / len(sides)
    out: list[float | None] = [None] * deal.n_sides
    exact = True
    for side in sides:
        value = _start_value(deal, solver, seat, side)
        if value is None:
            exact = False
            horizon = OpenHand(deal, solver.max_nodes, horizon=deal.talon_pos + LUCK_HORIZON)
            value = _start_value(deal, horizon, seat, side)
        out[side] = None if value is None else value - share
        if len(sides) == 2:  # the other side's is the rest
            other = sides[1 - sides.index(side)]
            out[other] = None if value is None else 120 - value - share
            break
    return tuple(out), exact


LUCK_HORIZON: Final = 8
"""Talon cards the start of a deal is searched through when it cannot be solved to its end."""


def _start_value(deal: Deal, solver: OpenHand, seat: int, side: int) -> float | None:
    """The value of the first decision for ``side`` (its best, or the worst the others
    leave it), or None when the budget left it an interval."""
    solution = solver.solve(deal, seat, side)
    pick = max if deal.side_of[seat] == side else min
    value = pick(solution.values, key=lambda v: v.value)
    return float(value.low) if solution.exact else None


def _decision(
    deal: Deal,
    solver: OpenHand,
    step: int,
    seat: int,
    action: Action,
    legal: tuple[Action, ...],
    start: list[int],
    settings: Settings,
    seed: int,
    prev_last_winner: int | None,
) -> DecisionReview:
    played = legal.index(deal.normalise(seat, action))
    opened: Solution = solver.solve(deal, seat)
    info = None
    if deal.decision is not Decision.DECLARE:
        try:
            info = evaluate(
                deal.rules, observe(deal, seat), start[seat], seed=seed,
                nodes=nodes_for_ms(settings.budget_ms), prev_last_winner=prev_last_winner,
            )  # fmt: skip
        except (Unmodelled, Inconsistent):
            info = None
    side = deal.side_of[seat]
    taken = tuple(deal.card_points())
    if info is not None:
        values = [v.mean for v in info.values]
        best = info.best
        loss = values[best] - values[played]
        loss_se = info.values[played].gap_se
        basis = "infoset"
    else:
        values = [v.value for v in opened.values]
        best = max(range(len(values)), key=lambda k: values[k])
        loss, loss_se, basis = values[best] - values[played], 0.0, "open"
    return DecisionReview(
        step=step,
        seat=seat,
        side=side,
        kind=str(deal.decision),
        talon=deal.talon_left,
        actions=legal,
        played=played,
        taken=taken,
        open_low=tuple(v.low for v in opened.values),
        open_high=tuple(v.high for v in opened.values),
        paranoid=opened.paranoid,
        other=None
        if opened.paranoid
        else next(deal.side_of[s] for s in deal.active if deal.side_of[s] != side),
        info=info,
        basis=basis,
        best=best,
        loss=max(0.0, loss),
        loss_se=loss_se,
        label=label(max(0.0, loss), loss_se),
    )


def to_json(review: DealReview) -> dict[str, Any]:
    """A deal's review as plain JSON values (the format of ``kozel analyze --json``)."""
    return {
        "index": review.index,
        "points": list(review.points),
        "luck": [None if v is None else round(v, 2) for v in review.luck],
        "luck_exact": review.luck_exact,
        "error": review.error,
        "seats": {str(s): summary_json(v) for s, v in sorted(review.seats.items())},
        "decisions": [_decision_json(d) for d in review.decisions],
    }


def summary_json(s: SeatSummary) -> dict[str, Any]:
    acc = s.accuracy
    return {
        "decisions": s.decisions,
        "loss": round(s.loss, 2),
        "labels": dict(sorted(s.labels.items())),
        "accuracy": None if acc is None else round(acc, 1),
        "gained": round(s.gained, 3),
        "possible": round(s.possible, 3),
    }


def _decision_json(d: DecisionReview) -> dict[str, Any]:
    actions = []
    for i, a in enumerate(d.actions):
        entry: dict[str, Any] = {"action": a.to_json()}
        if d.open_low is not None and d.open_high is not None:
            entry["open"] = [d.open_low[i], d.open_high[i]]
        if d.info is not None:
            v = d.info.values[i]
            entry["info"] = [round(v.mean, 2), round(v.se, 2)]
            if v.penalty is not None:
                entry["penalty"] = round(v.penalty, 3)
        actions.append(entry)
    out: dict[str, Any] = {
        "step": d.step,
        "seat": d.seat,
        "side": d.side,
        "kind": d.kind,
        "talon": d.talon,
        "taken": list(d.taken),
        "played": d.played,
        "best": d.best,
        "loss": round(d.loss, 2),
        "loss_se": round(d.loss_se, 2),
        "label": d.label,
        "basis": d.basis,
        "paranoid": d.paranoid,
        "actions": actions,
    }
    best = d.values()[d.best]
    expected = {str(d.side): round(d.taken[d.side] + best, 2)}
    if d.other is not None:
        expected[str(d.other)] = round(120 - d.taken[d.side] - best, 2)
    out["expected"] = expected  # each side's card points at the deal's end, as expected now
    if d.info is not None:
        out["deals"] = d.info.deals
        out["exact_deals"] = d.info.exact_deals
        out["enumerated"] = d.info.enumerated
    return out


def summarize(deals: Sequence[DealReview]) -> dict[int, SeatSummary]:
    """Each seat's summary over ``deals``."""
    out: dict[int, SeatSummary] = {}
    for d in deals:
        for seat, summary in d.seats.items():
            out.setdefault(seat, SeatSummary()).merge(summary)
    return out


def luck_by_side(deals: Sequence[DealReview]) -> dict[int, float]:
    """Each side's luck summed over ``deals`` (those whose luck is known)."""
    out: dict[int, float] = {}
    for d in deals:
        for side, v in enumerate(d.luck):
            if v is not None:
                out[side] = out.get(side, 0.0) + v
    return out
