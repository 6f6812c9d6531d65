"""The endgame solver: its values are those of a brute-force minimax through the engine
itself (clone, apply every legal action, score the finished deal), on positions reached by
random play at 2, 3 and 4 seats and several presets."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kozel.analysis.endgame import Exhausted, Solver
from kozel.engine import Deal, Match, Ruleset
from kozel.sdk.ismcts import _solver_reward
from kozel.sdk.playout import reward


def _brute(deal: Deal, side: int, weight: float) -> float:
    """Minimax through the engine: ``side`` maximizes, every other seat minimizes."""
    if deal.over:
        others = [s for s in deal.active_sides() if s != side]
        return reward(deal.penalties(), deal.card_points(), side, others, weight)
    seat = deal.to_act[0]
    vals = []
    for a in deal.legal_actions(seat):
        d = deal.clone()
        d.apply(seat, a)
        vals.append(_brute(d, side, weight))
    return max(vals) if deal.side_of[seat] == side else min(vals)


def _endgame(preset: str, players: int, seed: int, max_hand: int) -> Deal | None:
    """A position of random play with the talon empty and no hand above ``max_hand`` cards."""
    rules = Ruleset.preset(preset)
    rng = random.Random(seed)
    match = Match(rules, players, seed)
    deal = match.deal
    while not deal.over:
        seat = deal.to_act[0]
        if (
            deal.talon_left == 0
            and deal.decision in ("lead", "respond")
            and max(h.bit_count() for h in deal.hands) <= max_hand
            and rng.random() < 0.5
        ):
            return deal
        acts = deal.legal_actions(seat)
        deal.apply(seat, acts[rng.randrange(len(acts))])
    return None


@pytest.mark.parametrize(
    ("preset", "players", "max_hand"),
    [
        ("classic", 2, 4),
        ("balkan", 2, 4),
        ("classic", 3, 2),
        ("classic", 4, 2),
        ("classic-35", 3, 2),
    ],
)
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_solver_matches_brute_force(preset: str, players: int, max_hand: int, seed: int) -> None:
    deal = _endgame(preset, players, seed, max_hand)
    if deal is None:
        return
    rules = Ruleset.preset(preset)
    seat = deal.to_act[0]
    side = deal.side_of[seat]
    solver = Solver(deal, side, _solver_reward(rules, deal, side, 0.2))
    got = solver.values()
    want = []
    for a in deal.legal_actions(seat):
        d = deal.clone()
        d.apply(seat, a)
        want.append(_brute(d, side, 0.2))
    assert got == pytest.approx(want)


def test_node_budget_and_stop() -> None:
    deal = next(
        d
        for s in range(50)
        if (d := _endgame("classic", 4, s, 4)) is not None
        and sum(h.bit_count() for h in d.hands) >= 12
    )
    seat = deal.to_act[0]
    side = deal.side_of[seat]
    reward = _solver_reward(Ruleset.preset("classic"), deal, side, 0.2)
    with pytest.raises(Exhausted):
        Solver(deal, side, reward, max_nodes=10).values()
    with pytest.raises(Exhausted):
        Solver(deal, side, reward, stop=lambda: True).values()


def test_solver_refuses_a_position_with_a_talon() -> None:
    deal = Match(Ruleset.preset("classic"), 2, 1).deal
    with pytest.raises(ValueError, match="talon"):
        Solver(deal, 0, lambda p, t: 0.0)
