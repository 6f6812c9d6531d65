"""Every decision of a deal reviewed: the labels follow the documented thresholds and the
standard error, a decision is scored only where there was a choice, the played action's loss
is the best value minus its own, the summaries add up, and the luck of two sides is
opposite."""

from __future__ import annotations

import random

import pytest

from kozel.analysis.review import (
    SIGNIFICANCE,
    THRESHOLDS,
    Settings,
    label,
    review_deal,
    summarize,
    to_json,
)
from kozel.engine import Action, Deal, Ruleset
from kozel.engine.players import _shuffled

FAST = Settings(budget_ms=5, open_nodes=20_000)


@pytest.mark.parametrize(
    ("loss", "se", "expected"),
    [
        (0.0, 0.0, "good"),
        (3.9, 0.0, "good"),
        (4.0, 0.0, "inaccuracy"),
        (9.99, 0.5, "inaccuracy"),
        (10.0, 1.0, "mistake"),
        (20.0, 0.0, "blunder"),
        (25.0, 13.0, "good"),  # within two standard errors of nothing: not told apart
        (25.0, 12.0, "blunder"),
    ],
)
def test_labels_follow_the_thresholds_and_the_noise(loss: float, se: float, expected: str) -> None:
    assert label(loss, se) == expected
    assert dict(THRESHOLDS) == {"blunder": 20.0, "mistake": 10.0, "inaccuracy": 4.0}
    assert SIGNIFICANCE == 2.0


def _played(preset: str, players: int, seed: int) -> tuple[Deal, list[tuple[int, Action]]]:
    rules = Ruleset.preset(preset)
    rng = random.Random(seed)
    deal = Deal.start(rules, players, _shuffled(rules.removed_cards, rng), 0, trump_index=2)
    sim = deal.clone()
    steps = []
    while not sim.over:
        seat = sim.to_act[0]
        action = rng.choice(sim.legal_actions(seat))
        steps.append((seat, action))
        sim.apply(seat, action)
    return deal, steps


@pytest.mark.parametrize(("preset", "players"), [("classic", 2), ("classic", 3), ("courtyard", 4)])
def test_a_deal_review_scores_each_choice(preset: str, players: int) -> None:
    deal, steps = _played(preset, players, 4)
    start = deal.clone()
    review = review_deal(deal, steps, FAST)
    choices = []
    for i, (seat, action) in enumerate(steps):
        legal = start.legal_actions(seat)
        if len(legal) > 1:
            choices.append((i, seat, legal, legal.index(start.normalise(seat, action))))
        start.apply(seat, action)
    assert [(d.step, d.seat, d.actions, d.played) for d in review.decisions] == choices
    for d in review.decisions:
        values = d.values()
        assert d.loss == pytest.approx(max(0.0, values[d.best] - values[d.played]))
        assert values[d.best] == max(values)
        assert d.label == label(d.loss, d.loss_se)
        # courtyard: a random_middle trump, its hidden cards are not modelled: open-hand values
        assert d.basis == ("open" if preset == "courtyard" or d.kind == "declare" else "infoset")
    assert review.points == tuple(deal.card_points())
    for seat, s in review.seats.items():
        mine = [d for d in review.decisions if d.seat == seat]
        assert s.decisions == len(mine) == sum(s.labels.values())
        assert s.loss == pytest.approx(sum(d.loss for d in mine))
        assert s.accuracy is None or 0.0 <= s.accuracy <= 100.0
    assert (
        summarize([review, review])[steps[0][0]].decisions
        == 2 * review.seats[steps[0][0]].decisions
    )


def test_two_sides_have_opposite_luck_and_the_seats_filter_holds() -> None:
    deal, steps = _played("classic", 2, 9)
    review = review_deal(deal, steps, Settings(budget_ms=5, open_nodes=20_000, seats=(1,)))
    a, b = review.luck
    assert a is not None and b is not None and a == pytest.approx(-b)
    assert review.decisions and {d.seat for d in review.decisions} == {1}
    json = to_json(review)
    assert json["decisions"][0]["actions"][0]["action"] == review.decisions[0].actions[0].to_json()
    assert set(json["seats"]) == {"1"}


def test_a_played_best_action_loses_nothing() -> None:
    deal, steps = _played("classic", 2, 13)
    review = review_deal(deal, steps, FAST)
    best_played = [d for d in review.decisions if d.played == d.best]
    assert best_played and all(d.loss == 0 and d.label == "good" for d in best_played)
