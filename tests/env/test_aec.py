"""The PettingZoo and Gymnasium environments pass their libraries' own checks for every preset
and table size, reproduce the referee's deals from a seed, and pay the rewards they document."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test, seed_test

from kozel.engine.match import Match
from kozel.engine.rules import Ruleset
from kozel.env import aec
from kozel.env.single import KozelSingleEnv
from kozel.env.table import Table
from kozel.sdk.encoding import ActionMap, Encoder
from tests.env.states import CONFIGS


@pytest.mark.parametrize(("preset", "players"), CONFIGS)
def test_pettingzoo_api_and_seed_tests(preset: str, players: int) -> None:
    with warnings.catch_warnings():
        # Dict observations with an action mask draw these two from api_test, as PettingZoo's
        # own card games (leduc_holdem, texas_holdem) do.
        warnings.filterwarnings("ignore", "Observation is not a NumPy array")
        warnings.filterwarnings("ignore", "Observation space for each agent probably")
        api_test(aec.env(preset=preset, players=players), num_cycles=400)
    seed_test(lambda: aec.env(preset=preset, players=players), num_cycles=400)


@pytest.mark.parametrize(("preset", "players"), CONFIGS)
def test_gymnasium_env_checker(preset: str, players: int) -> None:
    env = KozelSingleEnv(preset, players, seat="random", opponents="greedy")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checker warns about what it does not fail
        check_env(env, skip_render_check=True)


def _table(env: aec.KozelEnv) -> Table:
    assert env.table is not None, "reset() first"
    return env.table


def _match(env: aec.KozelEnv) -> Match:
    return _table(env).match


def _random_match(env: aec.KozelEnv, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    totals: dict[str, float] = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, _ = env.last()
        totals[agent] += reward
        if terminated or truncated:
            env.step(None)
        else:
            env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return totals


@pytest.mark.parametrize(("preset", "players"), [("classic", 2), ("classic", 4), ("money", 3)])
def test_seeds_deal_the_referees_cards(preset: str, players: int) -> None:
    env = aec.env(preset=preset, players=players)
    env.reset(seed=12345)
    ref = Match(Ruleset.preset(preset), players, 12345)  # what a referee deals for this seed
    assert _match(env).deal.deck == ref.deal.deck
    assert _match(env).dealer == ref.dealer
    env.reset(options={"match_seed": (12345).to_bytes(32, "big").hex()})
    assert _match(env).deal.deck == ref.deal.deck


def test_the_observation_is_the_requests_encoding() -> None:
    env = aec.env(preset="classic", players=3)
    env.reset(seed=4)
    for _ in range(30):
        obs, *_, info = env.last()
        request = info["request"]
        want, mask, _ = Encoder().encode(request)  # the cards need no match context
        assert np.array_equal(obs["action_mask"], mask)
        assert np.array_equal(obs["observation"][: 23 * 36], want[: 23 * 36])
        env.step(int(np.flatnonzero(mask)[0]))


@pytest.mark.parametrize("reward", ["points", "penalties", "result"])
def test_rewards_add_up_to_the_match(reward: str) -> None:
    env = aec.env(preset="classic", players=2, reward=reward)
    env.reset(seed=9)
    totals = _random_match(env, 9)
    match = _match(env)
    if reward == "points":
        want = [sum(r.card_points[s] or 0 for r in match.records) / 120 for s in (0, 1)]
    elif reward == "penalties":
        want = [-float(t) for t in match.outcome().penalty_totals]
    else:
        ranks = match.outcome().ranks
        want = [
            1.0 if ranks[s] < ranks[1 - s] else -1.0 if ranks[s] > ranks[1 - s] else 0.0
            for s in (0, 1)
        ]
    assert [totals[a] for a in env.possible_agents] == pytest.approx(want)


def test_max_deals_truncates() -> None:
    env = aec.env(preset="classic", players=2, max_deals=1)
    env.reset(seed=2)
    _random_match(env, 2)
    assert _table(env).cut and len(_match(env).records) == 1


def test_illegal_actions_raise_or_are_refused() -> None:
    env = aec.env(preset="classic", players=2)
    env.reset(seed=1)
    mask = env.observe(env.agent_selection)["action_mask"]
    bad = int(np.flatnonzero(mask == 0)[0])
    with pytest.raises(ValueError, match="not legal now"):
        env.step(bad)
    env = aec.env(preset="classic", players=2, illegal="refuse", illegal_reward=-0.5)
    env.reset(seed=1)
    agent = env.agent_selection
    before = _match(env).deal.history[:]
    env.step(bad)
    assert env.agent_selection == agent and _match(env).deal.history == before
    assert env.rewards[agent] == -0.5 and env.infos[agent]["illegal"]


def test_wrong_settings_are_named() -> None:
    with pytest.raises(ValueError, match="unknown reward 'money'"):
        aec.env(reward="money")
    with pytest.raises(ValueError, match="players"):
        aec.env(preset="courtyard", players=2)
    with pytest.raises(ValueError, match="seat must be"):
        KozelSingleEnv("classic", 2, seat=2)
    with pytest.raises(ValueError, match="one opponent for all or 2"):
        KozelSingleEnv("classic", 3, opponents=["random"] * 3)


def test_action_maps_match_the_masks() -> None:
    env = aec.env(preset="courtyard", players=4)
    env.reset(seed=3)
    while not env.terminations[env.agent_selection]:
        seat = env.possible_agents.index(env.agent_selection)
        mask = env.observe(env.agent_selection)["action_mask"]
        request = env.infos[env.agent_selection]["request"]
        assert request is not None
        amap = ActionMap.of(request)
        assert sorted(amap.indices) == list(np.flatnonzero(mask))
        assert env.action_map(seat).indices == amap.indices
        env.step(amap.indices[-1])
