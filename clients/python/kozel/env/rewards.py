"""What a seat is rewarded with, read from the engine's match after each step.

Three kinds (``reward=`` of the environments), each paid to every seat of a side:

- ``points``: card points as tricks are taken, as a fraction of the deck's 120 (a deal pays a
  side its card points / 120; face-down cards count, as they do in the score).
- ``penalties``: at the end of each deal, minus the penalty points the side was charged (the
  penalty game; eggs doubling included), or the chips the seat won or lost (the money game).
- ``result``: once, when the match ends (or is cut at ``max_deals``, by the standing then):
  ``(sides ranked below - sides ranked above) / (sides - 1)``: +1 alone at the top, -1 alone
  at the bottom, 0 for a two-sided draw.
"""

from __future__ import annotations

from typing import Literal

from kozel.engine.match import Match

RewardKind = Literal["points", "penalties", "result"]
KINDS: tuple[RewardKind, ...] = ("points", "penalties", "result")
DECK_POINTS = 120


def check_kind(kind: str) -> RewardKind:
    """``kind`` if it is one of :data:`KINDS` (``ValueError`` naming them otherwise)."""
    for known in KINDS:
        if kind == known:
            return known
    raise ValueError(f"unknown reward {kind!r}; choose from {', '.join(KINDS)}")


def result_values(match: Match) -> list[float]:
    """Per seat, the ``result`` reward of the match's standing."""
    ranks = match.outcome().ranks
    n = len(ranks)
    by_side = [
        (sum(r > mine for r in ranks) - sum(r < mine for r in ranks)) / max(n - 1, 1)
        for mine in ranks
    ]
    return [by_side[side] for side in match.side_of]


class Rewarder:
    """The rewards of one match, step by step: :meth:`step` after every applied action."""

    def __init__(self, kind: str, match: Match) -> None:
        self.kind = check_kind(kind)
        self.match = match
        self.deal_index = 0  # the deal whose points are counted in ``points``
        self.points = [0] * (max(match.side_of) + 1)
        self.chips = list(match.chips)
        self.paid_result = False

    def step(self, final: bool = False) -> list[float]:
        """Per seat, what the actions since the last call earned; ``final``: the match is over
        or cut (the ``result`` is paid)."""
        match = self.match
        side_of = match.side_of
        if self.kind == "result":
            if final and not self.paid_result:
                self.paid_result = True
                return result_values(match)
            return [0.0] * match.players
        if self.kind == "penalties":
            return self._penalties()
        gained = [0] * len(self.points)
        while self.deal_index < len(match.records):
            record = match.records[self.deal_index]
            for side, pts in enumerate(record.card_points):
                gained[side] += (pts or 0) - self.points[side]
            self.points = [0] * len(self.points)
            self.deal_index += 1
        if not match.over and self.deal_index == len(match.records):
            now = match.deal.card_points()
            for side, pts in enumerate(now):
                gained[side] += pts - self.points[side]
            self.points = list(now)
        return [gained[side_of[s]] / DECK_POINTS for s in range(match.players)]

    def _penalties(self) -> list[float]:
        match = self.match
        paid = [0.0] * match.players
        if match.rules.is_money:
            for s in range(match.players):
                paid[s] = float(match.chips[s] - self.chips[s])
            self.chips = list(match.chips)
            return paid
        while self.deal_index < len(match.records):
            record = match.records[self.deal_index]
            charged = record.penalties or ()
            for s in range(match.players):
                side = match.side_of[s]
                paid[s] -= (charged[side] or 0) if side < len(charged) else 0
            self.deal_index += 1
        return paid
