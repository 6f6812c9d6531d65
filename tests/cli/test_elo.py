"""The statistics of ``kozel play`` against published values: fastchess's SPRT tests (logistic
trinomial and pentanomial, as ported in magusgeek/brutaltester's SprtTest), cutechess's
BayesElo SPRT (jw1912/SPRT's README example), and cutechess-style Elo intervals."""

from __future__ import annotations

import math

import pytest

from kozel.tools.elo import (
    Sprt,
    elo_interval,
    elo_to_score,
    llr_bayeselo,
    llr_normal,
    llr_pentanomial,
    llr_trinomial,
    score_interval,
    score_to_elo,
    sprt_bounds,
)


@pytest.mark.parametrize(
    ("wdl", "elos", "llr"),
    [
        ((21404, 40708, 21184), (0.5, 2.5), -1.57),
        ((57433, 106593, 57030), (0.0, 2.0), -2.59),
    ],
)
def test_fastchess_logistic_trinomial(
    wdl: tuple[int, int, int], elos: tuple[float, float], llr: float
) -> None:
    assert llr_trinomial(*wdl, *elos) == pytest.approx(llr, rel=0.01)


@pytest.mark.parametrize(
    ("penta", "elos", "llr"),
    [
        # LL, LD, WL+DD, WD, WW
        ((223, 9863, 20279 + 1000, 10037, 246), (0.5, 2.5), -3.07),
        ((871, 26175, 55003 + 980, 26678, 821), (0.0, 2.0), -4.98),
    ],
)
def test_fastchess_logistic_pentanomial(
    penta: tuple[int, ...], elos: tuple[float, float], llr: float
) -> None:
    assert llr_pentanomial(penta, *elos) == pytest.approx(llr, rel=0.01)


def test_cutechess_bayeselo_sprt() -> None:
    # jw1912/SPRT: --wins 4307 --losses 4063 --draws 8620 --elo0 0 --elo1 3 -> LLR 2.47
    assert llr_bayeselo(4307, 8620, 4063, 0, 3) == pytest.approx(2.47, abs=0.005)
    assert llr_bayeselo(10, 0, 5, 0, 3) == 0.0  # no draw yet: no draw Elo, no decision


def test_wald_bounds_and_decisions() -> None:
    low, high = sprt_bounds(0.05, 0.05)
    assert (round(low, 2), round(high, 2)) == (-2.94, 2.94)  # as fastchess prints them
    test = Sprt(0, 20)
    assert test.decide(high) == "H1" and test.decide(low) == "H0" and test.decide(0) is None
    with pytest.raises(ValueError):
        Sprt(5, 2)
    with pytest.raises(ValueError):
        Sprt(0, 5, alpha=0.6, beta=0.6)


def test_score_and_elo_intervals() -> None:
    assert elo_to_score(0) == 0.5
    assert score_to_elo(elo_to_score(123.0)) == pytest.approx(123.0)
    assert score_to_elo(0.75) == pytest.approx(190.85, abs=0.01)  # the textbook 75 % = +191
    s = score_interval(60, 20, 20)  # mean 0.7; var = .6*.09 + .2*.04 + .2*.49 = 0.16
    assert s.value == pytest.approx(0.7)
    assert s.high - s.value == pytest.approx(1.959964 * math.sqrt(0.16 / 100), rel=1e-5)
    e = elo_interval(60, 20, 20)
    assert e.low < e.value < e.high and e.value == pytest.approx(score_to_elo(0.7))
    assert elo_interval(10, 0, 0).value == math.inf
    assert math.isnan(score_interval(0, 0, 0).value)


def test_sprt_ends_when_every_result_is_the_same() -> None:
    assert llr_trinomial(40, 0, 0, 0, 100) > sprt_bounds(0.05, 0.05)[1]
    assert llr_pentanomial([0, 0, 0, 0, 30], 0, 100) > 2.95
    assert llr_trinomial(0, 0, 40, 0, 100) < -2.95
    # Every result the middling one (draws, or pairs split one win each): no evidence yet.
    assert llr_trinomial(0, 3, 0, 0, 10) == 0.0
    assert llr_pentanomial([0, 0, 1, 0, 0], 0, 10) == 0.0


def test_the_normal_llr_on_pair_scores_is_the_pentanomial_one() -> None:
    pairs = [3, 10, 40, 30, 17]
    values = [k / 4 for k, n in enumerate(pairs) for _ in range(n)]
    assert llr_normal(values, 0, 10) == pytest.approx(llr_pentanomial(pairs, 0, 10))
    assert llr_normal([0.5] * 20, 0, 10) == 0.0  # no spread
    assert llr_normal([0.9, 1.0] * 3, 0, 10) == 0.0  # too few to trust their variance
    assert llr_normal([0.9, 1.0] * 4, 0, 10) > 0
