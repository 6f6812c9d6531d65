"""Kozel as an OpenSpiel game: OpenSpiel's own consistency check for every preset and table
size, resampling within the information set, the tensors from the encoding, and ISMCTS on it."""

from __future__ import annotations

import random

import numpy as np
import pyspiel
import pytest
from open_spiel.python.algorithms import ismcts, mcts

from kozel.engine.match import Match
from kozel.engine.rules import Ruleset
from kozel.env import openspiel
from kozel.sdk import encoding
from kozel.sdk.encoding import Context, observation_tensor
from tests.env.states import CONFIGS


def _game(preset: str, players: int, reward: str = "points") -> pyspiel.Game:
    return pyspiel.load_game(f"kozel(preset={preset},players={players},reward={reward})")


def _dealt(game: pyspiel.Game, rng: random.Random) -> pyspiel.State:
    state = game.new_initial_state()
    while state.is_chance_node():
        outcomes, _ = zip(*state.chance_outcomes(), strict=True)
        state.apply_action(rng.choice(outcomes))
    return state


@pytest.mark.parametrize(("preset", "players"), CONFIGS)
@pytest.mark.parametrize("reward", ["points", "penalties"])
def test_random_sim_test(preset: str, players: int, reward: str) -> None:
    pyspiel.random_sim_test(
        _game(preset, players, reward), num_sims=6, serialize=True, verbose=False
    )


@pytest.mark.parametrize(("preset", "players"), CONFIGS)
def test_resampled_states_look_the_same_to_the_player(preset: str, players: int) -> None:
    game = _game(preset, players)
    rng = random.Random(players)
    for _ in range(4):
        state = _dealt(game, rng)
        truth_changed = 0
        while not state.is_terminal():
            player = state.current_player()
            other = state.resample_from_infostate(player, None)
            assert other.information_state_string(player) == state.information_state_string(player)
            assert other.information_state_tensor(player) == state.information_state_tensor(player)
            assert other.current_player() == player
            assert other.legal_actions() == state.legal_actions()
            truth_changed += str(other) != str(state)
            state.apply_action(rng.choice(state.legal_actions()))
        assert truth_changed > 0  # the hidden cards do move


def test_the_tensors_are_the_encodings() -> None:
    game = _game("classic", 3)
    state = _dealt(game, random.Random(5))
    for _ in range(20):
        player = state.current_player()
        deal = state.deal
        view = state.view(player)
        context = Context(players=3, sides=(0, 1, 2))
        want = observation_tensor(
            view, {"lead": 1, "respond": 2, "declare": 3}[deal.phase], context
        )
        assert np.array_equal(np.asarray(state.observation_tensor(player)), want)
        assert len(state.information_state_tensor(player)) == encoding.OBS_SIZE
        state.apply_action(state.legal_actions()[0])


def test_a_match_deal_becomes_a_state() -> None:
    match = Match(Ruleset.preset("classic"), 2, 77)
    rng = random.Random(1)
    for _ in range(9):
        seat = match.deal.to_act[0]
        match.apply(seat, rng.choice(match.deal.legal_actions(seat)))
    game = _game("classic", 2)
    state = openspiel.from_deal(game, match.deal, until=match.deal.to_act[0])
    assert state.current_player() == match.deal.to_act[0]
    assert list(state.deal.hands) == list(match.deal.hands)
    assert state.deal.history == match.deal.history


@pytest.mark.parametrize(("preset", "players"), [("classic", 2), ("classic", 4), ("courtyard", 4)])
def test_every_decision_of_a_match_becomes_a_state(preset: str, players: int) -> None:
    """Declarations half the time they are legal: one declared combination, led at once, can
    open the next window with no card play between (a replay that merged them lost one), and a
    declaration that lost its window stays unseen by the others (a resample that kept it
    replayed another deal)."""
    game = _game(preset, players)
    rng = random.Random(8)
    for seed in range(8):
        match = Match(Ruleset.preset(preset), players, seed)
        while not match.over:
            deal = match.deal
            seat = deal.to_act[0]
            state = openspiel.from_deal(game, deal, until=seat)
            assert state.current_player() == seat
            assert list(state.deal.hands) == list(deal.hands)
            assert sorted(state.indexed(seat).values()) == sorted(deal.legal_actions(seat))
            for _ in range(8):  # a losing declaration, unseen, is hidden in some worlds only
                other = state.resample_from_infostate(seat, None)
                assert other.information_state_string(seat) == state.information_state_string(seat)
            legal = deal.legal_actions(seat)
            declare = [a for a in legal if a.kind == "declare"]
            pick = declare[0] if declare and rng.random() < 0.5 else rng.choice(legal)
            match.apply(seat, pick)


def test_back_to_back_windows_resample_apart() -> None:
    """Seat 1 declares, its combination takes the trick, then seat 0's new hand is declared in
    the next window: every world keeps the two windows apart (they once merged, seat 0's
    answer went to the first and the replay broke)."""
    state = _dealt(_game("classic", 2), random.Random(151))
    plays = ["lead JC", "beat TC", "declare molodka (8D QD KD AD)"]
    plays += ["declare molodka (QH KH TH AH)", "lead 9S KS"]
    random.seed(7)
    for play in plays:
        seat = state.current_player()
        index = next(i for i, a in state.indexed(seat).items() if str(a) == play)
        state.apply_action(index)
        seat = state.current_player()
        for player in range(2):
            for _ in range(40):
                other = state.resample_from_infostate(player, None)
                assert other.information_state_string(player) == (
                    state.information_state_string(player)
                )
                if player == seat:
                    assert other.current_player() == seat


def test_openspiel_ismcts_plays_a_deal() -> None:
    game = _game("classic", 2)
    random.seed(0)  # worlds are drawn with Python's random
    rng = np.random.RandomState(0)
    bots = [
        ismcts.ISMCTSBot(game, mcts.RandomRolloutEvaluator(1, rng), 2.0, 20, random_state=rng)
        for _ in range(2)
    ]
    state = _dealt(game, random.Random(2))
    while not state.is_terminal():
        state.apply_action(bots[state.current_player()].step(state))
    assert sum(state.returns()) == pytest.approx(1.0)  # every card point went to a side


def test_bad_parameters_are_named() -> None:
    with pytest.raises(Exception, match="reward must be points or penalties"):
        pyspiel.load_game("kozel(reward=chips)")
    with pytest.raises(Exception, match="players"):
        pyspiel.load_game("kozel(preset=courtyard,players=2)")
