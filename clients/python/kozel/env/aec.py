"""Kozel as a PettingZoo AEC environment: ``kozel.env.aec.env(preset, players, ...)``.

Agents are ``player_0`` .. ``player_{n-1}`` (seat numbers). An episode is one match of the
referee's own seat protocol (:class:`kozel.env.table.Table`), so every observation comes from
the ``DecisionRequest`` the referee would send that seat, encoded by
:mod:`kozel.sdk.encoding`:

- ``observation_space(agent)``: ``Dict(observation=Box(0, 1, (906,), float32),
  action_mask=Box(0, 1, (47,), int8))``; an agent not asked now gets its current observation
  with an all-zero mask.
- ``action_space(agent)``: ``Discrete(47)``, the encoding's hand-relative action space.
- ``infos[agent]["request"]``: the raw ``DecisionRequest`` (``kozel.v1``) behind the
  observation, for the agent that is asked (``None`` otherwise).
- ``reset(seed=s)`` plays the match the referee plays with seed ``s`` (an integer, as
  ``seed_from`` reads it); ``reset(options={"match_seed": b"..."})`` takes a 32-byte seed or
  64 hex digits (a replay's ``seed``). An unseeded reset after a seeded one draws the next
  match seed from the first, so a run of episodes repeats.
- ``reward``: ``points``, ``penalties`` or ``result`` (:mod:`kozel.env.rewards`).
- ``max_deals``: cut each match after that many deals (the agents are then *truncated*).
- An action outside the mask raises ``ValueError`` (``illegal="raise"``), or, with
  ``illegal="refuse"``, is refused as the referee refuses an answer: nothing changes, the
  same agent is asked again, and it is charged ``illegal_reward`` (``infos[agent]["illegal"]``).

Several seats can be asked at once (a declaration window): they are selected one after the
other, in the order the referee asked them; each answers the request it was sent. Seats
whose side is eliminated stay in ``agents`` (never selected) until the match ends.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

import gymnasium
import numpy as np
from pettingzoo import AECEnv

from kozel.core import convert
from kozel.core.clock import Clock
from kozel.core.protocol import Send
from kozel.engine.cards import codes
from kozel.engine.observation import observe
from kozel.engine.rules import Ruleset
from kozel.engine.shuffle import new_seed, seed_from
from kozel.env.harness import wants_events
from kozel.env.rewards import Rewarder, check_kind
from kozel.env.table import Table, ruleset_of
from kozel.sdk.bot import Bot
from kozel.sdk.encoding import N_ACTIONS, OBS_SIZE, ActionMap, Encoder
from kozel.v1 import referee_pb2 as rpb

Observation = dict[str, np.ndarray]


def observation_space() -> gymnasium.spaces.Dict:
    """The space of one agent's observations."""
    return gymnasium.spaces.Dict(
        {
            "observation": gymnasium.spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32),
            "action_mask": gymnasium.spaces.Box(0, 1, (N_ACTIONS,), np.int8),
        }
    )


def match_seed(
    seed: int | None, options: dict[str, Any] | None, rng: random.Random | None
) -> bytes:
    """The match seed a reset asks for (see the module docstring)."""
    given = (options or {}).get("match_seed")
    if given is not None:
        return seed_from(given)
    if seed is not None:
        return seed_from(seed)
    return rng.randbytes(32) if rng is not None else new_seed()


class KozelEnv(AECEnv):
    """One Kozel match per episode (see the module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {
        "name": "kozel_v0",
        "render_modes": ["ansi"],
        "is_parallelizable": False,
    }

    def __init__(
        self,
        preset: str = "classic",
        players: int = 2,
        *,
        rules: Ruleset | None = None,
        reward: str = "points",
        max_deals: int = 0,
        clock: Clock | None = None,
        illegal: str = "raise",
        illegal_reward: float = -1.0,
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        self.rules = rules if rules is not None else ruleset_of(preset)
        self.rules.check_players(players)
        self.players = players
        self.reward_kind = check_kind(reward)
        if illegal not in ("raise", "refuse"):
            raise ValueError(f"illegal must be 'raise' or 'refuse', not {illegal!r}")
        if max_deals < 0:
            raise ValueError(f"max_deals must be 0 (no cap) or more, not {max_deals}")
        self.illegal, self.illegal_reward = illegal, float(illegal_reward)
        self.max_deals, self.clock = max_deals, clock
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', not {render_mode!r}")
        self.render_mode = render_mode
        self.possible_agents = [f"player_{s}" for s in range(players)]
        space = observation_space()
        self.observation_spaces = dict.fromkeys(self.possible_agents, space)
        self.action_spaces = {a: gymnasium.spaces.Discrete(N_ACTIONS) for a in self.possible_agents}
        self._rng: random.Random | None = None
        self.table: Table | None = None
        # Bots playing seats in-process (kozel.env.single): they get their seats' messages.
        self.seated: dict[int, Bot] = {}

    def observation_space(self, agent: str) -> gymnasium.spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gymnasium.spaces.Space[Any]:
        return self.action_spaces[agent]

    # -- the episode -------------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None:
            self._rng = random.Random(seed)
        self.seed_bytes = match_seed(seed, options, self._rng if seed is None else None)
        self.table = Table(
            self.rules,
            self.players,
            self.seed_bytes,
            match_id=self.seed_bytes.hex()[:16],
            clock=self.clock,
            max_deals=self.max_deals,
            wants_events=[wants_events(self.seated.get(s)) for s in range(self.players)],
        )
        self.encoders = [Encoder() for _ in range(self.players)]
        # Per seat, its pending request's encoding: (request id, tensor, mask, action map).
        self._encoded: dict[int, tuple[int, np.ndarray, np.ndarray, ActionMap]] = {}
        self.rewarder = Rewarder(self.reward_kind, self.table.match)
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self._skip_agent_selection = None
        self._take(self.table.start())

    def observe(self, agent: str) -> Observation:
        seat = self.possible_agents.index(agent)
        table = self._table()
        if seat in table.asked:
            _, obs, mask, _ = self._encoding(seat)
            return {"observation": obs.copy(), "action_mask": mask.copy()}
        view = convert.observation_to_pb(observe(table.match.deal, seat))
        return {
            "observation": self.encoders[seat].observe(view),
            "action_mask": np.zeros(N_ACTIONS, dtype=np.int8),
        }

    def action_map(self, seat: int) -> ActionMap:
        """The action map of ``seat``'s pending request."""
        return self._encoding(seat)[3]

    def _encoding(self, seat: int) -> tuple[int, np.ndarray, np.ndarray, ActionMap]:
        """``seat``'s pending request encoded (once per request)."""
        request = self._table().asked[seat]
        held = self._encoded.get(seat)
        if held is None or held[0] != request.request_id:
            obs, mask, actions = self.encoders[seat].encode(request.decision)
            held = self._encoded[seat] = (request.request_id, obs, mask, actions)
        return held

    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        seat = self.possible_agents.index(agent)
        table = self._table()
        try:
            if action is None:
                raise ValueError("a live agent must act (None is for terminated agents)")
            legal_index = self.action_map(seat).legal(action)
        except ValueError:
            if self.illegal == "raise":
                raise
            self._refuse(agent)
            return
        self.answer(seat, table.reply_to(seat, legal_index=legal_index))

    def answer(self, seat: int, reply: rpb.ActionReply) -> None:
        """Hand the referee ``seat``'s answer (the step of a seated bot, or of an agent)."""
        agent = self.possible_agents[seat]
        table = self._table()
        self._cumulative_rewards[agent] = 0.0
        self._take(table.reply(seat, reply))
        ended = table.result is not None
        paid = self.rewarder.step(final=ended)
        self.rewards = {a: paid[i] for i, a in enumerate(self.possible_agents) if a in self.rewards}
        if ended:
            done = self.truncations if table.cut else self.terminations
            for a in self.agents:
                done[a] = True
        self._accumulate_rewards()

    def _refuse(self, agent: str) -> None:
        self._cumulative_rewards[agent] = 0.0
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self.rewards[agent] = self.illegal_reward
        self.infos[agent] = {**self.infos[agent], "illegal": True}
        self._accumulate_rewards()

    def _take(self, sends: list[Send]) -> None:
        """Feed each seat's encoder its messages and select the next agent."""
        for seat, msg in sends:
            which = msg.WhichOneof("message")
            if which == "match_start":
                self.encoders[seat].match_start(getattr(msg, which))
            elif which == "deal_start":
                self.encoders[seat].deal_start(getattr(msg, which))
            bot = self.seated.get(seat)
            if bot is not None and which not in (None, "decision"):
                hook = getattr(bot, f"on_{which}", None)
                if hook is not None:
                    hook(getattr(msg, which))
        table = self._table()
        self.infos: dict[str, dict[str, Any]] = {a: {"request": None} for a in self.agents}
        for seat, request in table.asked.items():
            self.infos[self.possible_agents[seat]] = {"request": request.decision}
        if table.asked:
            self.agent_selection = self.possible_agents[next(iter(table.asked))]
        else:
            self.agent_selection = self.agents[0]

    def _table(self) -> Table:
        if self.table is None:
            raise RuntimeError("call reset() first")
        return self.table

    # -- looking at it -------------------------------------------------------------------------

    def render(self) -> str | None:
        """The table as text (``render_mode="ansi"``): the deal in play, every hand shown."""
        if self.render_mode is None or self.table is None:
            return None
        match = self.table.match
        deal = match.deal
        lines = [f"deal {len(match.records)}, trump {deal.trump_suit}, talon {deal.talon_left}"]
        lines += [f"seat {s}: {' '.join(codes(deal.hands[s]))}" for s in range(self.players)]
        return "\n".join(lines)

    def close(self) -> None:
        self.table = None


def raw_env(**kwargs: Any) -> KozelEnv:
    """The environment without PettingZoo's wrappers."""
    return KozelEnv(**kwargs)


def env(**kwargs: Any) -> KozelEnv:
    """The environment: ``kozel.env.aec.env(preset="classic", players=2, reward="points")``."""
    return KozelEnv(**kwargs)
