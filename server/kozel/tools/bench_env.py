"""``kozel bench harness`` and ``kozel bench env``: the speed of training and self-play.

``harness``: random bots (``RandomBot``, which reads only the request) play whole matches
through the in-process harness (:func:`kozel.env.harness.play_match`: the referee's seat
protocol, its messages and observations), against the engine's own random play of the same
matches (legal actions and ``Match.apply``, nothing else). ``overhead`` is the harness's CPU
per decision over the engine's.

``env``: random masked actions through the PettingZoo AEC API (``agent_iter``, ``last``,
``step``), steps per second; and the encoding's cost per observation (``Encoder.encode`` of
one request: tensor, mask and action map; one encoder per seat, as in the environment).

Each figure is the best of ``rounds`` rounds (noise on a shared machine only slows a round),
with the median beside it.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from kozel import engine
from kozel.core import native as core_native
from kozel.engine.match import Match
from kozel.engine.rules import Ruleset

CONFIGS = (("classic-2p", "classic", 2), ("classic-3p", "classic", 3), ("classic-4p", "classic", 4))


def _engine_match(rules: Ruleset, players: int, seed: int, rng: random.Random) -> int:
    """A match of random legal play on the engine alone; the decisions taken."""
    match = Match(rules, players, seed)
    decisions = 0
    while not match.over:
        deal = match.deal
        seat = deal.to_act[0]
        legal = deal.legal_actions(seat)
        match.apply(seat, legal[int(rng.random() * len(legal))])
        decisions += 1
    return decisions


def _harness_matches(rules: Ruleset, players: int, matches: int, seeds: Iterator[int]) -> int:
    """Random bots' matches through the harness; the decisions taken."""
    from kozel.env.harness import play_match
    from kozel.sdk.house import RandomBot

    bots = [RandomBot(s) for s in range(players)]
    return sum(play_match(bots, rules=rules, seed=next(seeds)).decisions for _ in range(matches))


def _engine_matches(
    rules: Ruleset, players: int, matches: int, seeds: Iterator[int], rng: random.Random
) -> int:
    return sum(_engine_match(rules, players, next(seeds), rng) for _ in range(matches))


def _rounds(run: Callable[[], int], rounds: int) -> tuple[list[float], int]:
    """CPU microseconds per unit of each round of ``run`` (which returns its units)."""
    costs = []
    total = 0
    for _ in range(rounds):
        cpu = time.process_time()
        n = run()
        costs.append((time.process_time() - cpu) / n * 1e6)
        total += n
    return costs, total


def bench_harness(matches: int, seed: int, rounds: int = 5) -> dict[str, dict[str, Any]]:
    """Matches per second and CPU per decision, harness against the engine."""
    results: dict[str, dict[str, Any]] = {}
    for key, preset, players in CONFIGS:
        rules = Ruleset.preset(preset)
        seeds = iter(range(seed, seed + 10**6))
        harness = partial(_harness_matches, rules, players, matches, seeds)
        alone = partial(_engine_matches, rules, players, matches, seeds, random.Random(seed))
        harness(), alone()  # warm the move tables and the encoders' memos
        h_costs, h_total = _rounds(harness, rounds)
        e_costs, e_total = _rounds(alone, rounds)
        per_match = h_total / (rounds * matches)
        results[key] = {
            "harness_matches_per_s": round(1e6 / (min(h_costs) * per_match), 1),
            "harness_cpu_us_per_decision": round(min(h_costs), 1),
            "median_harness_cpu_us_per_decision": round(statistics.median(h_costs), 1),
            "engine_cpu_us_per_decision": round(min(e_costs), 2),
            "median_engine_cpu_us_per_decision": round(statistics.median(e_costs), 2),
            "overhead": round(min(h_costs) / min(e_costs), 1),
            "decisions_per_match": round(per_match, 1),
            "decisions": h_total + e_total,
            "native": engine.NATIVE,
            "core_native": core_native.loaded(),
        }
    return results


def bench_env(steps: int, seed: int, rounds: int = 5) -> dict[str, dict[str, Any]]:
    """AEC steps per second of random masked play, and the encoding's cost per observation."""
    import numpy as np

    from kozel.env import aec

    results: dict[str, dict[str, Any]] = {}
    for key, preset, players in CONFIGS:
        env = aec.env(preset=preset, players=players)
        env.reset(seed=seed)
        requests: list[Any] = []
        play = partial(_random_steps, env, np.random.default_rng(seed), steps, requests)
        encode = partial(_encode_all, requests)
        play()
        step_costs, total = _rounds(play, rounds)
        encode_costs, _ = _rounds(encode, rounds)
        results[key] = {
            "steps_per_s": round(1e6 / min(step_costs), 1),
            "median_steps_per_s": round(1e6 / statistics.median(step_costs), 1),
            "cpu_us_per_step": round(min(step_costs), 1),
            "encode_us_per_observation": round(min(encode_costs), 1),
            "median_encode_us_per_observation": round(statistics.median(encode_costs), 1),
            "steps": total,
            "native": engine.NATIVE,
            "core_native": core_native.loaded(),
        }
    return results


def _random_steps(env: Any, rng: Any, steps: int, requests: list[Any]) -> int:
    """``steps`` random masked steps through the AEC API (a new match when one ends), keeping
    the first requests for the encoding's figure."""
    import numpy as np

    done = 0
    while done < steps:
        obs, _, terminated, truncated, info = env.last()
        if terminated or truncated:
            env.step(None)
            if not env.agents:
                env.reset()
            continue
        if len(requests) < 500:
            requests.append(info["request"])
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        done += 1
    return done


def _encode_all(requests: list[Any]) -> int:
    """Encode the requests in their order, one encoder per seat (as the environment and
    ``PolicyBot`` do: each remembers its deal's finished tricks)."""
    from kozel.sdk.encoding import Encoder

    encoders: dict[int, Encoder] = {}
    for request in requests:
        encoders.setdefault(request.observation.seat, Encoder()).encode(request)
    return len(requests)
