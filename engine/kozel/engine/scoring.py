"""Scoring a finished deal: penalties per side, eggs, and the money pot."""

from __future__ import annotations

from collections.abc import Sequence

from kozel.engine.rules import Scheme, ScoringEntry, ZeroCriterion


def is_eggs(points: Sequence[int]) -> bool:
    """Two sides on 60 each."""
    return len(points) == 2 and points[0] == 60 and points[1] == 60


def deal_penalties(entry: ScoringEntry, points: Sequence[int], tricks: Sequence[int]) -> list[int]:
    """Penalties for the sides of one deal (rule 9), before any eggs doubling.

    Sides tied for the most points score 0; the others by the entry's scheme.
    """
    if is_eggs(points):
        return [0, 0]
    top = max(points)
    out = []
    for p, t in zip(points, tricks):
        if p == top:
            out.append(0)
        elif entry.scheme == Scheme.FLAT2:
            out.append(2)
        elif entry.scheme == Scheme.POSITIONAL:
            place = 1 + sum(1 for q in points if q > p)
            out.append(2 * (place - 1))
        elif p >= entry.threshold:
            out.append(2)
        else:
            zero = t == 0 if entry.zero_criterion == ZeroCriterion.NO_TRICKS else p == 0
            out.append(6 if zero else 4)
    return out


def split_pot(pot: int, winners: int) -> tuple[int, int]:
    """Each winner's share of the pot and the indivisible remainder that stays in it."""
    return divmod(pot, winners)
