"""Statistics of luck-corrected results: means with 95 % intervals and the effective-games
multiplier, for units (deals or matches) that come in independent groups (the matches of one
seed, seats rotated; a deal belongs to its match's group).

Each unit has a plain value and a corrected one (plain minus its luck). Means and their
intervals are cluster-robust (the groups are what is independent); the **multiplier** is the
plain value's variance per unit over the corrected one's (how many plain units one corrected
unit is worth), its interval a percentile bootstrap over the groups. For groups of ``k``
matches dealt from one seed, :func:`duplicate` says what the groups themselves give: the
variance of ``k`` independent plain matches' mean over that of a group's mean, plain and
corrected.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from kozel.tools.elo import NORMAL_MIN, Sprt, elo_to_score, llr_pentanomial
from kozel.tournament.intervals import cluster_mean

Unit = tuple[float, float]  # (plain, corrected)
BOOT = 1000
"""Bootstrap resamples of the groups."""


@dataclass(frozen=True, slots=True)
class _Sums:
    """A group's (or a resample's) sums: units, plain, plain², corrected, corrected²."""

    n: int
    p: float
    pp: float
    c: float
    cc: float

    @staticmethod
    def of(units: Sequence[Unit]) -> _Sums:
        return _Sums(
            len(units),
            sum(u[0] for u in units),
            sum(u[0] * u[0] for u in units),
            sum(u[1] for u in units),
            sum(u[1] * u[1] for u in units),
        )

    def __add__(self, o: _Sums) -> _Sums:
        return _Sums(self.n + o.n, self.p + o.p, self.pp + o.pp, self.c + o.c, self.cc + o.cc)

    def ratio(self) -> float:
        """Plain variance over corrected variance (nan when undefined)."""
        if self.n < 2:
            return math.nan
        vp = self.pp - self.p * self.p / self.n
        vc = self.cc - self.c * self.c / self.n
        return vp / vc if vc > 0 else math.nan


def _total(sums: Sequence[_Sums]) -> _Sums:
    out = _Sums(0, 0.0, 0.0, 0.0, 0.0)
    for s in sums:
        out = out + s
    return out


Interval = dict[str, float | None]


def _interval(value: float, low: float, high: float, digits: int = 3) -> Interval:
    """A value and its interval for JSON: None where undefined (strict JSON has no NaN)."""

    def clean(x: float) -> float | None:
        return round(x, digits) if math.isfinite(x) else None

    return {"value": clean(value), "low": clean(low), "high": clean(high)}


def _mean_interval(groups: Sequence[Sequence[float]]) -> Interval:
    """The mean over every unit with its cluster-robust 95 % interval."""
    got = cluster_mean(groups)
    if got is None:
        return _interval(math.nan, math.nan, math.nan)
    mean, low, high = got
    if math.isnan(low):  # one group: no spread between groups to measure
        low = high = mean
    return _interval(mean, low, high, 4)


def _bootstrap(
    k: int, stat: Callable[[list[int]], float], rng: random.Random, boot: int
) -> tuple[float, float]:
    """The 2.5 % and 97.5 % points of ``stat`` over ``boot`` resamples of ``k`` groups."""
    if k == 0:
        return math.nan, math.nan
    values = sorted(
        v for _ in range(boot) if not math.isnan(v := stat([rng.randrange(k) for _ in range(k)]))
    )
    if not values:
        return math.nan, math.nan
    return values[int(0.025 * (len(values) - 1))], values[int(0.975 * (len(values) - 1))]


def clustered(groups: Sequence[Sequence[Unit]], seed: int, boot: int = BOOT) -> dict[str, object]:
    """Plain and corrected means, the mean luck (their difference: zero within its interval
    for an unbiased correction) and the multiplier, over units in ``groups`` (None where
    there are too few units or no spread)."""
    groups = [g for g in groups if g]
    sums = [_Sums.of(g) for g in groups]
    ratio = _total(sums).ratio()
    low, high = _bootstrap(
        len(sums), lambda idx: _total([sums[i] for i in idx]).ratio(), random.Random(seed), boot
    )
    return {
        "units": sum(len(g) for g in groups),
        "groups": len(groups),
        "plain": _mean_interval([[u[0] for u in g] for g in groups]),
        "corrected": _mean_interval([[u[1] for u in g] for g in groups]),
        "luck": _mean_interval([[u[0] - u[1] for u in g] for g in groups]),
        "multiplier": _interval(ratio, low, high),
    }


Cluster = Sequence[Sequence[Unit]]
"""Groups that are not independent of each other (the deal pairs of one seed), resampled
together."""


def _duplicate_ratios(clusters: Sequence[Cluster], idx: list[int]) -> tuple[float, float]:
    """(plain unit variance / size) over the variance of the groups' means, plain and
    corrected, on the groups of the clusters ``idx``."""
    groups = [g for i in idx for g in clusters[i]]
    units = [u for g in groups for u in g]
    size = len(groups[0])
    var_unit = _Sums.of(units)
    v = (var_unit.pp - var_unit.p**2 / var_unit.n) / (var_unit.n - 1) / size
    means = _Sums.of([(sum(u[0] for u in g) / size, sum(u[1] for u in g) / size) for g in groups])
    vp = (means.pp - means.p**2 / means.n) / (means.n - 1)
    vc = (means.cc - means.c**2 / means.n) / (means.n - 1)
    return (v / vp if vp > 0 else math.nan), (v / vc if vc > 0 else math.nan)


def _duplicate_of(clusters: Sequence[Cluster], seed: int, boot: int) -> dict[str, object]:
    rng = random.Random(seed)
    values = _duplicate_ratios(clusters, list(range(len(clusters))))
    out: dict[str, object] = {"groups": sum(len(c) for c in clusters)}
    for j, name in enumerate(("duplicate", "duplicate_corrected")):

        def stat(idx: list[int], j: int = j) -> float:
            return _duplicate_ratios(clusters, idx)[j]

        low, high = _bootstrap(len(clusters), stat, rng, boot)
        out[name] = _interval(values[j], low, high)
    return out


def duplicate(groups: Sequence[Sequence[Unit]], seed: int, boot: int = BOOT) -> dict[str, object]:
    """What dealing a group's matches from one seed gives (complete groups only): the
    multiplier of duplicate alone, and of duplicate with the correction, both against
    independent plain matches."""
    size = max((len(g) for g in groups), default=0)
    full = [g for g in groups if len(g) == size]
    if len(full) < 3 or size < 2:
        return {"groups": len(full)}
    return _duplicate_of([[g] for g in full], seed, boot)


def duplicate_deals(
    matches: Sequence[Sequence[Sequence[Unit]]], seed: int, boot: int = BOOT
) -> dict[str, object]:
    """The same at the level of deals: ``matches`` holds, per seed, each rotation's deals in
    order. The matches of one seed deal the same cards to the same places at deal *k* (the
    deck and the dealer follow the seed and the deal's number), so deal *k* of every rotation
    is a duplicate group while all of them last that long; a seed's groups are resampled
    together. Against independent plain deals."""
    clusters = []
    for rotations in matches:
        if len(rotations) < 2:
            continue
        clusters.append(
            [[deals[k] for deals in rotations] for k in range(min(map(len, rotations)))]
        )
    clusters = [c for c in clusters if c]
    if sum(map(len, clusters)) < 3:
        return {"groups": sum(map(len, clusters))}
    return _duplicate_of(clusters, seed, boot)


def lengths(runs: list[tuple[int, str]]) -> dict[str, object]:
    """Quartiles of the matches runs took, and the share that accepted H1."""
    ordered = sorted(n for n, _ in runs)
    k = len(ordered)
    return {
        "median_matches": ordered[k // 2],
        "q1": ordered[k // 4],
        "q3": ordered[3 * k // 4],
        "h1_share": round(sum(v == "H1" for _, v in runs) / k, 3),
    }


def sprt_run(
    pairs: Iterator[Sequence[Unit]], sprt: Sprt, cap: int
) -> tuple[tuple[int, str], tuple[int, str]]:
    """One run of both tests on the same pairs, taken from ``pairs`` until both decided (at
    most ``cap`` pairs): (matches, verdict) each, ``"none"`` when the cap came first. The
    plain test is pentanomial on the results; the corrected one, as
    :func:`~kozel.tools.elo.llr_normal`, on each pair's mean corrected score from
    :data:`~kozel.tools.elo.NORMAL_MIN` pairs on."""
    counts = [0] * 5
    n = 0
    s = q = 0.0
    s0, s1 = elo_to_score(sprt.elo0), elo_to_score(sprt.elo1)
    plain: tuple[int, str] | None = None
    corrected: tuple[int, str] | None = None
    while (plain is None or corrected is None) and n < cap:
        pair = next(pairs)
        n += 1
        if plain is None:
            counts[round(2 * (pair[0][0] + pair[1][0]))] += 1
            if (v := sprt.decide(llr_pentanomial(counts, sprt.elo0, sprt.elo1))) is not None:
                plain = (2 * n, v)
        m = (pair[0][1] + pair[1][1]) / 2
        s, q = s + m, q + m * m
        var = q / n - (s / n) ** 2
        if corrected is None and n >= NORMAL_MIN and var > 0:
            llr = (s1 - s0) * (2 * s / n - s0 - s1) / (2 * var / n)
            if (v := sprt.decide(llr)) is not None:
                corrected = (2 * n, v)
    return plain or (2 * n, "none"), corrected or (2 * n, "none")


def _drawn(pairs: Sequence[Sequence[Unit]], rng: random.Random) -> Iterator[Sequence[Unit]]:
    while True:
        yield pairs[rng.randrange(len(pairs))]


def sprt_lengths(
    groups: Sequence[Sequence[Unit]], sprt: Sprt, seed: int, runs: int = 200, cap: int = 20_000
) -> dict[str, object]:
    """How many matches the SPRT needs on results (pentanomial) and on the luck-corrected
    pairs (``kozel play --sprt-luck``), estimated by runs that draw the pairs of ``groups``
    at random with replacement, both tests on the same draws (at most ``cap`` pairs a run;
    the corrected one, as :func:`~kozel.tools.elo.llr_normal`, from
    :data:`~kozel.tools.elo.NORMAL_MIN` pairs on)."""
    pairs = [g for g in groups if len(g) == 2]
    if len(pairs) < 5:
        return {"pairs": len(pairs)}
    rng = random.Random(seed)
    done = [sprt_run(_drawn(pairs, rng), sprt, cap) for _ in range(runs)]
    return {
        "elo0": sprt.elo0,
        "elo1": sprt.elo1,
        "runs": runs,
        "pairs": len(pairs),
        "results": lengths([d[0] for d in done]),
        "corrected": lengths([d[1] for d in done]),
    }
