"""Match statistics for ``kozel play``: the score with its 95 % interval, the Elo difference
with its interval, and the sequential probability ratio test (SPRT) as fastchess and cutechess
run it.

Scores are per match: a win 1, a draw 1/2, a loss 0. Two models of the log-likelihood ratio:

- the generalised SPRT (GSPRT) with logistic Elo, on match results (trinomial) or on pairs of
  matches played with the same seed and the seats swapped (pentanomial), fastchess's default
  ``logistic`` model: ``LLR = (s1 - s0) (2 s - s0 - s1) / (2 var / n)``;
- BayesElo (cutechess's SPRT), on match results, with the draw Elo estimated from them.

The figures are checked against fastchess's and cutechess's published values in
``tests/cli/test_elo.py``. While every result so far is the same the variance is zero and
the GSPRT undefined; one middling result (a draw, or a WL/DD pair) is then counted extra.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Final

Z95 = NormalDist().inv_cdf(0.975)  # 1.95996...


def elo_to_score(elo: float) -> float:
    """Expected score of a side ``elo`` points stronger (logistic)."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def score_to_elo(score: float) -> float:
    """The logistic Elo difference that expects ``score`` (infinite at 0 and 1)."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


@dataclass(frozen=True)
class Estimate:
    """A point estimate and its 95 % interval."""

    value: float
    low: float
    high: float


def _mean_var(probs: Sequence[float], values: Sequence[float]) -> tuple[float, float]:
    mean = sum(p * v for p, v in zip(probs, values))
    return mean, sum(p * (v - mean) ** 2 for p, v in zip(probs, values))


def score_interval(wins: int, draws: int, losses: int) -> Estimate:
    """Mean score and its 95 % normal interval (clamped to [0, 1])."""
    n = wins + draws + losses
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan)
    mean, var = _mean_var([wins / n, draws / n, losses / n], [1.0, 0.5, 0.0])
    half = Z95 * math.sqrt(var / n)
    return Estimate(mean, max(0.0, mean - half), min(1.0, mean + half))


def elo_interval(wins: int, draws: int, losses: int) -> Estimate:
    """The Elo difference and its 95 % interval, from the score interval (as cutechess and
    fastchess print it; infinite when every match went one way)."""
    s = score_interval(wins, draws, losses)
    if math.isnan(s.value):
        return Estimate(math.nan, math.nan, math.nan)
    return Estimate(score_to_elo(s.value), score_to_elo(s.low), score_to_elo(s.high))


def sprt_bounds(alpha: float, beta: float) -> tuple[float, float]:
    """Wald's bounds: accept H0 at or below the first, H1 at or above the second."""
    if not (0 < alpha < 1 and 0 < beta < 1 and alpha + beta < 1):
        raise ValueError("alpha and beta must lie in (0, 1) and sum to less than 1")
    return math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)


def _gsprt(
    probs: Sequence[float], values: Sequence[float], n: int, elo0: float, elo1: float
) -> float:
    mean, var = _mean_var(probs, values)
    if n == 0:
        return 0.0
    if var <= 0:  # every result alike: count one more, middling one, so the test can end
        mid = len(values) // 2
        probs = [(p * n + (i == mid)) / (n + 1) for i, p in enumerate(probs)]
        mean, var = _mean_var(probs, values)
        n += 1
        if var <= 0:  # every result the middling one: no evidence either way yet
            return 0.0
    s0, s1 = elo_to_score(elo0), elo_to_score(elo1)
    return (s1 - s0) * (2 * mean - s0 - s1) / (2 * var / n)


def llr_trinomial(wins: int, draws: int, losses: int, elo0: float, elo1: float) -> float:
    """GSPRT log-likelihood ratio of H1 (``elo1``) against H0 (``elo0``), logistic Elo."""
    n = wins + draws + losses
    if n == 0:
        return 0.0
    return _gsprt([wins / n, draws / n, losses / n], [1.0, 0.5, 0.0], n, elo0, elo1)


def llr_pentanomial(pairs: Sequence[int], elo0: float, elo1: float) -> float:
    """GSPRT log-likelihood ratio on match pairs: ``pairs[k]`` counts the pairs that scored
    ``k`` half-points of 4 (LL, LD, WL+DD, WD, WW), logistic Elo."""
    n = sum(pairs)
    if n == 0:
        return 0.0
    return _gsprt([c / n for c in pairs], [0.0, 0.25, 0.5, 0.75, 1.0], n, elo0, elo1)


NORMAL_MIN: Final = 8
"""Values :func:`llr_normal` waits for: a variance estimated from fewer is too unsure to
stop on (a few close values would end the test at once)."""


def llr_normal(values: Sequence[float], elo0: float, elo1: float) -> float:
    """GSPRT log-likelihood ratio on scores taken as they come (the mean of each pair of
    matches, luck-corrected: no longer on a few levels), logistic Elo; 0 under
    :data:`NORMAL_MIN` values or with no spread."""
    n = len(values)
    if n < NORMAL_MIN:
        return 0.0
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / n
    if var <= 0:
        return 0.0
    s0, s1 = elo_to_score(elo0), elo_to_score(elo1)
    return (s1 - s0) * (2 * mean - s0 - s1) / (2 * var / n)


def llr_bayeselo(wins: int, draws: int, losses: int, elo0: float, elo1: float) -> float:
    """cutechess's SPRT: BayesElo model, draw Elo estimated from the results (0 until every
    outcome has occurred)."""
    if wins == 0 or draws == 0 or losses == 0:
        return 0.0
    n = wins + draws + losses
    pw, pl = wins / n, losses / n
    draw_elo = 200 * math.log10((1 - 1 / pw) * (1 - 1 / pl))

    def probs(elo: float) -> tuple[float, float, float]:
        w = 1 / (1 + 10 ** ((draw_elo - elo) / 400))
        lo = 1 / (1 + 10 ** ((draw_elo + elo) / 400))
        return w, 1 - w - lo, lo

    (w0, d0, l0), (w1, d1, l1) = probs(elo0), probs(elo1)
    return wins * math.log(w1 / w0) + draws * math.log(d1 / d0) + losses * math.log(l1 / l0)


@dataclass(frozen=True)
class Sprt:
    """A sequential test of H0: Elo = ``elo0`` against H1: Elo = ``elo1``."""

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        if self.elo0 >= self.elo1:
            raise ValueError("--sprt needs elo0 < elo1")
        sprt_bounds(self.alpha, self.beta)

    @property
    def bounds(self) -> tuple[float, float]:
        return sprt_bounds(self.alpha, self.beta)

    def decide(self, llr: float) -> str | None:
        """``"H1"``, ``"H0"`` or None (keep playing)."""
        low, high = self.bounds
        if llr >= high:
            return "H1"
        if llr <= low:
            return "H0"
        return None
