"""The information-set evaluator: it reads nothing but the seat's observation (a deal the seat
cannot tell from the real one gets the same values), it is the same for the same seed and
budget, it takes every deal of the hidden cards when they are few (then it is the weighted
mean of their open-hand values, with no sampling error, and the real deal is among them), and
it says when deals were solved only to a horizon."""

from __future__ import annotations

import random

import pytest

from kozel.analysis.infoset import evaluate
from kozel.analysis.solver import OpenHand
from kozel.analysis.worlds import Unmodelled, Worlds
from kozel.engine import Deal, Decision, Ruleset, observe
from kozel.engine.players import _shuffled


def _position(preset: str, players: int, seed: int, talon_at_most: int) -> tuple[Deal, list[int]]:
    """A deal played at random to a lead or response with at most ``talon_at_most`` talon
    cards, and the hands as dealt."""
    rules = Ruleset.preset(preset)
    rng = random.Random(seed)
    while True:
        deck = _shuffled(rules.removed_cards, rng)
        deal = Deal.start(rules, players, deck, seed % players, trump_index=3)
        dealt = list(deal.hands)
        while not deal.over:
            seat = deal.to_act[0]
            legal = deal.legal_actions(seat)
            if (
                deal.talon_left <= talon_at_most
                and deal.decision in (Decision.LEAD, Decision.RESPOND)
                and len(legal) > 1
                and rng.random() < 0.5
            ):
                return deal, dealt
            deal.apply(seat, rng.choice(legal))


def test_a_deal_the_seat_cannot_tell_apart_gets_the_same_values() -> None:
    for seed in range(4):
        deal, dealt = _position("classic", 2, seed, 12)
        seat = deal.to_act[0]
        rules = deal.rules
        other = Worlds(rules, observe(deal, seat), dealt[seat]).sample(random.Random(seed))
        assert other.hands != deal.hands  # other hidden cards ...
        assert observe(other, seat) == observe(deal, seat)  # ... the same view
        a = evaluate(rules, observe(deal, seat), dealt[seat], seed=3, nodes=20_000)
        b = evaluate(rules, observe(other, seat), dealt[seat], seed=3, nodes=20_000)
        assert a == b


def test_the_same_seed_and_budget_give_the_same_values() -> None:
    deal, dealt = _position("classic", 3, 5, 20)
    seat = deal.to_act[0]
    obs = observe(deal, seat)
    first = evaluate(deal.rules, obs, dealt[seat], seed=7, nodes=30_000)
    assert first == evaluate(deal.rules, obs, dealt[seat], seed=7, nodes=30_000)
    assert first.deals >= 8
    assert [v.action for v in first.values] == list(deal.legal_actions(seat))


def test_few_hidden_cards_are_all_taken_and_weighed() -> None:
    checked = 0
    for seed in range(40):
        deal, dealt = _position("classic", 2, seed, 0)
        seat = deal.to_act[0]
        worlds = Worlds(deal.rules, observe(deal, seat), dealt[seat])
        if worlds.count() > 720:
            continue
        result = evaluate(deal.rules, observe(deal, seat), dealt[seat], seed=1)
        assert result.enumerated and result.exact_deals == result.deals
        every = worlds.every(random.Random(1))
        assert any(w.hands == deal.hands for w, _ in every)  # the real deal is one of them
        weight = sum(n for _, n in every)
        for i, v in enumerate(result.values):
            expected = sum(n * OpenHand(w).solve(w, seat).values[i].low for w, n in every) / weight
            assert v.mean == pytest.approx(expected)
            assert v.se == 0.0
        checked += 1
    assert checked >= 5


def test_long_talons_are_solved_to_a_horizon_and_say_so() -> None:
    deal, dealt = _position("classic", 2, 11, 28)
    seat = deal.to_act[0]
    result = evaluate(deal.rules, observe(deal, seat), dealt[seat], seed=0, nodes=40_000)
    assert result.exact_deals < result.deals and not result.enumerated
    left = 120 - sum(deal.card_points())
    assert all(0 <= v.mean <= left and v.se >= 0 for v in result.values)


def test_unmodelled_rulesets_are_refused() -> None:
    deal, dealt = _position("courtyard", 4, 2, 20)
    seat = deal.to_act[0]
    with pytest.raises(Unmodelled, match="random_middle"):
        evaluate(deal.rules, observe(deal, seat), dealt[seat])
