"""A mean with its cluster-robust 95 % interval: the matches of one seed group (a duplicate
group of a ladder, a tournament pairing's seed group) share their cards and are not
independent, so the groups are what is counted as independent (a match outside any group is a
group of its own). Used by the ladder's and the tournaments' luck-corrected scores
(docs/luck.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

Z95 = NormalDist().inv_cdf(0.975)


@dataclass(frozen=True, slots=True)
class Estimate:
    """A mean with its 95 % interval (None where there are too few groups)."""

    value: float
    low: float | None
    high: float | None
    matches: int
    groups: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "value": round(self.value, 4),
            "low": None if self.low is None else round(self.low, 4),
            "high": None if self.high is None else round(self.high, 4),
            "matches": self.matches,
            "groups": self.groups,
        }


def cluster_sums(sums: Sequence[tuple[int, float]]) -> tuple[float, float, float] | None:
    """The mean over every value and its cluster-robust 95 % interval (the groups are what
    is independent) from each group's (count, sum); None without values, an interval of nan
    with one group."""
    sums = [(c, t) for c, t in sums if c]
    n = sum(c for c, _ in sums)
    if n == 0:
        return None
    mean = sum(t for _, t in sums) / n
    k = len(sums)
    if k < 2:
        return mean, math.nan, math.nan
    spread = sum((t - c * mean) ** 2 for c, t in sums)
    half = Z95 * math.sqrt(spread * k / (k - 1)) / n
    return mean, mean - half, mean + half


def cluster_mean(groups: Sequence[Sequence[float]]) -> tuple[float, float, float] | None:
    """:func:`cluster_sums` over the groups' values."""
    return cluster_sums([(len(g), sum(g)) for g in groups])


def estimate(sums: Sequence[tuple[int, float]]) -> Estimate | None:
    """:func:`cluster_sums` as an :class:`Estimate` (None without values)."""
    got = cluster_sums(sums)
    if got is None:
        return None
    mean, low, high = got
    finite = math.isfinite(low)
    return Estimate(
        mean,
        low if finite else None,
        high if finite else None,
        sum(c for c, _ in sums),
        len([c for c, _ in sums if c]),
    )
