"""The luck of a deal (kozel.analysis.luck): every expectation equals its brute-force average
over all the outcomes of its chance event, a deal's events are the ones the engine dealt and
drew, luck adds up to zero over the sides, and over a few hundred deals of random against
greedy its mean is zero (the corrected mean is the plain one) while it takes variance away."""

from __future__ import annotations

import hashlib
import itertools
import math
import random
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kozel.analysis.luck import (
    DEAL,
    DRAW,
    N_CLASSES,
    card_class,
    chance_events,
    class_counts,
    deal_expectation,
    deal_luck,
    draw_expectation,
    match_luck,
    replay_deal,
)
from kozel.engine import Match, Ruleset
from kozel.engine.cards import CARD_OF, SUIT_OF, mask_of
from kozel.engine.deal import Drawn
from kozel.engine.match import DealRecord
from kozel.engine.players import random_action

cards = st.lists(st.integers(0, 35), min_size=3, max_size=7, unique=True)


def _close(a: list[float] | tuple[float, ...], b: list[float] | tuple[float, ...]) -> bool:
    return all(math.isclose(x, y, abs_tol=1e-9) for x, y in zip(a, b, strict=True))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(deck=cards, hand=st.integers(1, 2), shokha=st.booleans())
def test_the_deal_expectation_is_the_average_over_every_shuffle(
    deck: list[int], hand: int, shokha: bool
) -> None:
    # A uniform shuffle makes (indicator, one seat's hand) a uniform ordered pick of distinct
    # cards: every such pick is one outcome, all equally likely.
    total = [0.0] * N_CLASSES
    picks = list(itertools.permutations(deck, hand + 1))
    for indicator, *held in picks:
        got = class_counts(mask_of(held), SUIT_OF[indicator], shokha)
        total = [t + g for t, g in zip(total, got)]
    brute = [t / len(picks) for t in total]
    assert _close(list(deal_expectation(mask_of(deck), hand, shokha)), brute)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(pool=cards, data=st.data(), trump=st.integers(0, 3), shokha=st.booleans())
def test_the_draw_expectation_is_the_average_over_every_talon_order(
    pool: list[int], data: st.DataObject, trump: int, shokha: bool
) -> None:
    k = data.draw(st.integers(0, min(3, len(pool))))
    orders = list(itertools.permutations(pool, k))
    total = [0.0] * N_CLASSES
    for order in orders:
        got = class_counts(mask_of(order), trump, shokha)
        total = [t + g for t, g in zip(total, got)]
    brute = [t / len(orders) for t in total]
    assert _close(draw_expectation(mask_of(pool), k, trump, shokha), brute)


def test_card_classes() -> None:
    assert card_class(0, 2, True) == 0  # the shokha, whatever trump is
    assert card_class(0, 2, False) == 10  # a plain six of spades without it
    assert card_class(8, 0, True) == 9  # the ace of spades as trump
    assert card_class(35, 0, True) == 18  # a plain ace of hearts


def _random_match(preset: str, players: int, seed: int) -> Match:
    rules = Ruleset.preset(preset, {"fixed_deals": 3})
    match = Match(rules, players, seed)
    rng = random.Random(seed)
    while not match.over:
        seat = match.deal.to_act[0]
        match.apply(seat, random_action(match.deal, seat, rng))
    return match


@pytest.mark.parametrize(
    ("preset", "players"),
    [("classic", 2), ("classic", 3), ("classic", 4), ("courtyard", 4), ("classic-35", 3)],
)
def test_events_follow_the_deal_and_luck_adds_up_to_zero(preset: str, players: int) -> None:
    match = _random_match(preset, players, 7)
    for rec in match.records:
        events = chance_events(match.rules, players, rec)
        assert events[0].kind == DEAL and all(e.kind == DRAW for e in events[1:])
        # A seat's excess counts sum to zero: it got as many cards as expected, by class.
        assert all(math.isclose(sum(ex), 0.0, abs_tol=1e-9) for e in events for ex in e.excess)
        deal = replay_deal(match.rules, players, rec)
        for seat, action in rec.actions:
            deal.apply(seat, action)
        assert len(events) == 1 + sum(isinstance(e, Drawn) for e in deal.log)
        luck = deal_luck(match.rules, players, rec)
        known = [v for v in luck.luck if v is not None]
        assert math.isclose(sum(known), 0.0, abs_tol=1e-6)
        assert len(known) == len({match.rules.side_of(players)[s] for s in rec.active})


def test_the_shokha_and_high_trumps_dealt_are_luck() -> None:
    rules = Ruleset.preset("classic")
    strong = [CARD_OF[c] for c in ("6S", "AH", "TH", "KH")]
    rest = [c for c in range(36) if c not in strong and c != CARD_OF["7H"]]
    # Dealer 0 deals seat 1 first: seat 1 gets deck[0], [2], [4], [6]; deck[8] is the
    # indicator (hearts).
    deck = [0] * 36
    deck[0:8:2] = strong
    deck[1:8:2] = rest[:4]
    deck[8] = CARD_OF["7H"]
    deck[9:] = rest[4:]
    record = DealRecord(0, 0, tuple(deck), None, 1, (0, 1), (), (60, 60), (1, 1), (0, 0), ())
    luck = deal_luck(rules, 2, record)
    assert len(luck.events) == 1  # no action: the deal alone
    one = luck.luck[1]
    assert one is not None and one > 15 and luck.luck[0] == pytest.approx(-one)
    assert luck.corrected[1] == pytest.approx(60 - one)


def _seed(i: int) -> bytes:
    return hashlib.sha256(b"test-luck" + i.to_bytes(4, "big")).digest()


def _deal_units(bots: list[str], matches: int) -> list[tuple[float, float]]:
    """(card points - 60, luck) of seat ``i % 2``'s side in deal after deal of ``matches``
    matches, the bots swapping seats from one match to the next."""
    from kozel.env.harness import play_match

    rules = Ruleset.preset("classic")
    out = []
    for i in range(matches):
        side = i % 2
        seated = bots if side == 0 else bots[::-1]
        played = play_match(seated, rules=rules, seed=_seed(i))
        for dl in match_luck(rules, 2, played.match.records):
            points, lk = dl.points[side], dl.luck[side]
            assert points is not None and lk is not None
            out.append((points - 60.0, lk))
    return out


def test_the_corrected_mean_is_the_plain_mean() -> None:
    units = _deal_units(["greedy", "random"], 100)
    n = len(units)
    assert n >= 500
    plain = [p for p, _ in units]
    luck = [lk for _, lk in units]
    # The corrected mean differs from the plain one by the mean luck: zero within its interval.
    se = statistics.stdev(luck) / math.sqrt(n)
    assert abs(statistics.fmean(luck)) < 2.58 * se  # 99 %
    assert statistics.fmean(plain) > 10  # greedy beats random: the measure sees it


def test_the_correction_takes_variance_away() -> None:
    units = _deal_units(["greedy", "greedy"], 60)
    plain = [p for p, _ in units]
    corrected = [p - lk for p, lk in units]
    assert statistics.variance(corrected) < 0.85 * statistics.variance(plain)
