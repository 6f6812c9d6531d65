"""One seat against chosen opponents, as a Gymnasium environment.

``KozelSingleEnv(preset, players, seat=0, opponents=("random",))`` plays whole matches of the
AEC environment (:class:`kozel.env.aec.KozelEnv`); the learner acts for ``seat`` and the other
seats are played by bots (house bot names, ``kozel.sdk.Bot`` objects or factories of them;
one spec for all, or one per other seat), which get the referee's own messages for their seats
as in :mod:`kozel.env.harness`. ``seat="random"`` draws the learner's seat at each reset.

Observations are the AEC environment's ``{"observation", "action_mask"}``; the mask is also
``action_masks()`` (sb3-contrib's ``MaskablePPO`` reads it). The reward is the learner's seat's
(``reward=`` as in :mod:`kozel.env.rewards`). An action outside the mask is refused as the
referee refuses an answer: nothing changes, the step costs ``illegal_reward`` and
``info["illegal"]`` is set (``illegal="raise"`` raises instead). ``info["request"]`` holds the
raw ``DecisionRequest``. Opponents with an ``rng`` (the house bots) are reseeded from the
reset's seed, so a seeded reset repeats its episode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np

from kozel.env.aec import KozelEnv, Observation
from kozel.env.harness import BotSpec, make_bot, reply_for
from kozel.sdk.bot import Bot


class KozelSingleEnv(gymnasium.Env[Observation, np.int64]):
    """One seat of a Kozel match against bots (see the module docstring)."""

    metadata = {"render_modes": ["ansi"]}  # noqa: RUF012 (gymnasium.Env declares it)

    def __init__(
        self,
        preset: str = "classic",
        players: int = 2,
        *,
        seat: int | str = 0,
        opponents: BotSpec | Sequence[BotSpec] = "random",
        reward: str = "points",
        max_deals: int = 0,
        illegal: str = "refuse",
        illegal_reward: float = -1.0,
        render_mode: str | None = None,
        **aec_options: Any,
    ) -> None:
        self.game = KozelEnv(
            preset,
            players,
            reward=reward,
            max_deals=max_deals,
            illegal=illegal,
            illegal_reward=illegal_reward,
            render_mode=render_mode,
            **aec_options,
        )
        if seat != "random" and not (isinstance(seat, int) and 0 <= seat < players):
            raise ValueError(f"seat must be 0..{players - 1} or 'random', not {seat!r}")
        self.seat_choice = seat
        specs = (
            [opponents] if isinstance(opponents, str | Bot) or callable(opponents) else opponents
        )
        specs = list(specs)
        if len(specs) not in (1, players - 1):
            raise ValueError(f"give one opponent for all or {players - 1}, not {len(specs)}")
        self.opponent_specs = specs * (players - 1) if len(specs) == 1 else specs
        self.render_mode = render_mode
        self.observation_space = self.game.observation_space("player_0")
        self.action_space = self.game.action_space("player_0")
        self.seat = 0
        self.bots: dict[int, Bot] = {}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        super().reset(seed=seed)
        rng = self.np_random
        players = self.game.players
        self.seat = (
            int(rng.integers(players)) if self.seat_choice == "random" else int(self.seat_choice)
        )
        match_seed = rng.bytes(32)
        others = [s for s in range(players) if s != self.seat]
        self.bots = {
            s: make_bot(spec, int(rng.integers(1 << 62)))
            for s, spec in zip(others, self.opponent_specs)
        }
        self.game.seated = self.bots
        self.game.reset(options={"match_seed": (options or {}).get("match_seed", match_seed)})
        self._play_bots()
        return self._observe(), self._info()

    def step(self, action: np.int64 | int) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        game = self.game
        me = game.possible_agents[self.seat]
        game.step(int(action))
        reward = game.rewards.get(me, 0.0)
        info = self._info()
        if game.infos[me].get("illegal"):
            info["illegal"] = True
            return self._observe(), float(reward), False, False, info
        reward += self._play_bots()
        return (
            self._observe(),
            float(reward),
            game.terminations[me],
            game.truncations[me],
            self._info(),
        )

    def action_masks(self) -> np.ndarray:
        """The legal actions now (1 = legal), for maskable trainers."""
        return self._observe()["action_mask"].astype(bool)

    def _play_bots(self) -> float:
        """Let the bots play until the learner is asked or the match ends; the learner's reward
        meanwhile."""
        game = self.game
        me = game.possible_agents[self.seat]
        earned = 0.0
        while not (game.terminations[me] or game.truncations[me]):
            seat = game.possible_agents.index(game.agent_selection)
            if seat == self.seat:
                break
            request = game.infos[game.agent_selection]["request"]
            assert request is not None  # the selected agent is always asked
            game.answer(seat, reply_for(request, self.bots[seat].choose(request)))
            earned += game.rewards.get(me, 0.0)
        return earned

    def _observe(self) -> Observation:
        obs = self.game.observe(self.game.possible_agents[self.seat])
        return {"observation": obs["observation"].copy(), "action_mask": obs["action_mask"].copy()}

    def _info(self) -> dict[str, Any]:
        request = self.game.infos.get(self.game.possible_agents[self.seat], {}).get("request")
        return {"request": request, "seat": self.seat}

    def render(self) -> str | None:
        return self.game.render()
