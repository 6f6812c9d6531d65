"""The ``ismcts`` house bot: Monte Carlo search over determinizations of what the seat knows.

Each decision draws deals consistent with the seat's observation alone: every card the seat
saw (its hand, its start hand, face-up plays, publicly known cards, the trump card at the
bottom of the talon) stays where it was seen; the cards it never saw are shuffled into the
other hands, the face-down discards and the talon. A drawn deal is replayed from its start
through the public engine API (:meth:`Deal.start`, :meth:`Deal.apply`) and kept only if it
reproduces the seat's observation (the same legal actions now); so every card a seat was seen
to hold is placed where it could have been drawn, and face-down discards come from cards it
still had. The search works at the root, where the seat's legal actions are the same in
every determinization: greedy's best ``candidates`` actions are each played out to the end of
the deal on the same determinizations with the same playout dice (common random numbers), by
fast one-trick policies on the determinized hands (:mod:`kozel.sdk.playout`, compiled with the
engine: this side's seats by one that sees the hands, the opponents' by GreedyBot's judgement of
them, ``playout_policy = "split"``), and rewarded by the deal's penalties plus a share of its
card points (card points alone in the money game); greedy's pick stands unless another beats it
by ``margin`` standard errors (``paired = False``: UCB1 over the candidates instead). The
budget, ``budget_s``, is CPU time of the thinking thread, within a wall-clock cap of
``clock_share`` of the request's ``move_ms`` (so it stays inside the move clock). The search
stops early once every other candidate is ``settled_z`` standard errors below greedy's pick (the
answer would not change). Only the first ``first_worlds`` determinizations are drawn before the
search; it draws the others as its rounds need them.

Some knobs are off (measured no stronger, docs/bots.md): ``playout_policy = "seen"`` or
``"greedy"`` plays every seat's playouts by the seen policy or by GreedyBot's own judgement on
the determinized hands (:func:`~kozel.sdk.playout.policy_greedy`), ``read_opponent`` (two
players) keeps a determinization in which the opponent would not have answered a lead as
GreedyBot does only with chance ``model_slack``, ``search_talon`` searches only late in the
talon (greedy's pick before), ``prune`` stops playing candidates already settled below greedy's
pick, and ``match_aware`` values a deal's penalties by the match win chance they leave
(:func:`_match_term`; at two players the same as the linear reward).

Once the talon is empty (penalty game) the deal is played down without draws, and each
determinization's endgame is solved exactly instead (:mod:`kozel.analysis.endgame`, alpha-beta over
the remaining tricks, each end rewarded as a playout's is, by the ruleset's scoring entry);
the action best on average over the determinizations is played. Above two players
only positions of at most ``endgame_cards`` cards in hand are solved (the other seats are
treated as one team). Declarations, single legal actions and
deals it cannot determinize (a ``random_middle`` trump, mid-trick interrupts) are answered by
:class:`GreedyBot`.
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from google.protobuf.json_format import MessageToDict

from kozel.analysis.endgame import Exhausted, Solver
from kozel.analysis.infoset import evaluate
from kozel.analysis.solver import OpenHand, Unsupported
from kozel.analysis.worlds import Inconsistent, Unlikely, Unmodelled, Worlds, mask
from kozel.engine import (
    Action,
    Deal,
    IllegalAction,
    RulesError,
    Ruleset,
)
from kozel.engine.cards import SUIT_OF, points
from kozel.engine.rules import Elimination, Scheme, TrumpMode
from kozel.engine.scoring import deal_penalties
from kozel.sdk import playout
from kozel.sdk.house import GreedyBot
from kozel.sdk.observed import observation
from kozel.v1 import game_pb2, referee_pb2

_UCB_C = 0.7


_RULESETS: dict[str, Ruleset] = {}


def _ruleset(preset: str, options: dict[str, Any], players: int) -> Ruleset:
    """One Ruleset object per ruleset and process, its engine tables built for every trump
    suit at once (they are cached by object, and building them mid-decision would overrun
    the think budget)."""
    key = f"{preset}:{sorted(options.items())!r}:{players}"
    rules = _RULESETS.get(key)
    if rules is None:
        rules = Ruleset.preset(preset, options)
        deck = [c for c in range(36) if rules.deck >> c & 1]
        if rules.trump_mode != TrumpMode.RANDOM_MIDDLE and 2 <= players <= 5:
            for suit in range(4):  # a deck whose trump card is of this suit
                top = next(c for c in deck if SUIT_OF[c] == suit)
                rest = [c for c in deck if c != top]
                order = rest[: 4 * players] + [top] + rest[4 * players :]
                Deal.start(rules, players, order, 0)
        _RULESETS[key] = rules
    return rules


def _whole(value: Any) -> Any:
    """Struct numbers are doubles: whole ones back to ints, as the ruleset wants them."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole(v) for v in value]
    return value


class _Clock:
    """The think budget: CPU time of the thinking thread (so a busy machine does not make the
    bot weaker), within a wall-clock deadline that keeps the answer inside the move clock."""

    def __init__(self, wall_deadline: float, cpu_budget: float) -> None:
        self.wall_deadline = wall_deadline
        self.cpu_start = time.thread_time()
        self.cpu_deadline = self.cpu_start + cpu_budget

    def share(self, fraction: float) -> _Clock:
        """A clock for the first ``fraction`` of this one's budget."""
        part = _Clock.__new__(_Clock)
        now = time.monotonic()
        part.wall_deadline = now + fraction * max(0.0, self.wall_deadline - now)
        part.cpu_start = self.cpu_start
        part.cpu_deadline = self.cpu_start + fraction * (self.cpu_deadline - self.cpu_start)
        return part

    def up(self) -> bool:
        return time.thread_time() >= self.cpu_deadline or time.monotonic() >= self.wall_deadline


def _mean_se(total: float, squares: float, n: int) -> tuple[float, float]:
    """The mean of ``n`` values and its standard error, from their sum and sum of squares."""
    mean = total / n
    return mean, math.sqrt(max(0.0, squares / n - mean * mean) / n)


class IsmctsBot(GreedyBot):
    """Information-set Monte Carlo search over determinizations (see the module docstring).
    ``budget_s`` is the think time per decision; ``seed`` makes it repeatable."""

    thinks = True  # the referee runs choose() off its event loop (kozel.server.seats)
    budget_s = 0.1
    clock_share = 0.25  # of move_ms, at most, in wall-clock time (a loaded host delays the rest)
    max_wall_s = 1.0  # wall-clock cap when the request names no move_ms
    safety_s = 0.015  # kept back for the answer's way to the referee
    max_worlds = 48
    first_worlds = 8  # drawn before the search, which draws the others as it needs them
    worlds_share = 0.35  # of the budget, at most, for drawing them
    candidates = 6  # greedy's best actions searched (3 for ismcts-fast, kozel.sdk.house_bots)
    margin = 1.0  # standard errors by which the search must beat greedy's pick
    min_visits = 12  # playouts each of the two needs before the search may overrule
    settled_z = 2.5  # stop early once every other candidate is this many SEs below (0: never)
    prune = False  # and play no more a candidate this many SEs below, meanwhile
    paired = True  # common random numbers (else UCB1 over the candidates)
    points_weight = 0.2  # card points in the reward, beside the deal's penalties
    match_aware = False  # a deal's penalties valued by the match win chance they leave
    # (_match_term), not linearly
    seen = True  # playouts by playout.policy_seen (else playout.policy_simple)
    playout_policy = "split"  # the opponents by playout.policy_greedy (GreedyBot's judgement),
    # this side by policy_seen; "seen": every seat by policy_seen; "greedy": by policy_greedy
    explore = 0.05  # policy_greedy's share of random moves
    seen_explore = 0.1  # policy_seen's
    read_opponent = False  # two players: determinizations where the opponent answers as
    # GreedyBot would (kozel.sdk.house), the others dropped but with chance model_slack each
    model_slack = 0.1
    search_talon: int | None = None  # search only with at most this many cards in the talon
    # (greedy's pick before that; None: always)
    endgame = True  # solve the deal exactly once the talon is empty (kozel.analysis.endgame)
    solver_nodes = 20_000  # per determinization, else back to the playouts
    endgame_cards = 9  # above two players, solved only with at most this many cards in hand
    open_talon: int | None = None  # two sides, at most this many talon cards: every
    # determinization solved to the end with the cards open (kozel.analysis.solver); None:
    # playouts until the talon is empty. Off: at 4 it measured no stronger at 100 ms (deals
    # won 0.500 [0.463, 0.537] of 715 against None, docs/bots.md)
    open_nodes = 20_000  # per determinization, else back to the playouts
    evaluator_nodes = 0  # > 0: play the information-set evaluator's best action, this budget
    # (off: at 40,000 nodes it won 0.45 [0.38, 0.52] of 182 deals against ismcts, docs/bots.md)
    playout_solve = False  # playouts end in an exact solve once the talon is empty (weaker
    # at 25 ms: 0.50 of 482 paired deals against 0.54 without, the solves eat the playouts)
    solve_talon = 8  # ... when the talon holds at most this many cards at the decision
    playout_nodes = 3_000  # per solve, else the playout goes on by its policy

    def __init__(self, budget_s: float | None = None, seed: int | None = None) -> None:
        super().__init__()
        if budget_s is not None:
            self.budget_s = budget_s
        self.rng = random.Random(seed)
        self.rules: Ruleset | None = None
        self.start_hand = 0
        self.prev_last_winner: int | None = None
        self.totals: tuple[int, ...] = ()  # penalty totals per side before this deal
        self._plan: Worlds | None = None
        self._models: dict[int, _MatchModel] = {}  # by seats per side, for this match's rules
        self._want = 0
        self.stats = {
            "searched": 0,
            "fallback": 0,
            "worlds": 0,
            "playouts": 0,
            "rounds": 0,  # of the paired search
            "solved": 0,
            "unsolved": 0,
            "overruled": 0,
            "unlikely": 0,
            "evaluated": 0,
        }

    # -- what the seat learns --------------------------------------------------------------

    def on_match_start(self, msg: referee_pb2.MatchStart) -> None:
        super().on_match_start(msg)
        try:
            options = (
                _whole(MessageToDict(msg.ruleset.options))
                if msg.ruleset.HasField("options")
                else {}
            )
            self.rules = _ruleset(msg.ruleset.preset or "classic", options, msg.players)
            self._models = {}  # the match models of these rules (match_aware)
        except (RulesError, ValueError, TypeError, KeyError, IllegalAction):
            self.rules = None  # unknown knobs: play greedy

    def on_deal_start(self, msg: referee_pb2.DealStart) -> None:
        self.start_hand = mask(msg.hand)
        self.totals = tuple(msg.penalty_totals)

    def _term(self, deal: Deal, side: int) -> Callable[[Sequence[int | None]], float] | None:
        """The match-aware value of a deal's penalties for ``side`` (None: linear)."""
        if not self.match_aware or self.rules is None or self.rules.is_money:
            return None
        return _match_term(self.rules, deal, self.totals, side, self._models)

    def on_deal_end(self, msg: referee_pb2.DealEnd) -> None:
        if msg.tricks:
            self.prev_last_winner = msg.tricks[-1].winner

    # -- the decision ----------------------------------------------------------------------

    def choose(self, request: referee_pb2.DecisionRequest) -> int:
        legal = request.legal_actions
        if (
            len(legal) == 1
            or request.kind not in (game_pb2.DECISION_KIND_LEAD, game_pb2.DECISION_KIND_RESPOND)
            or self.rules is None
            or (self.search_talon is not None and request.observation.talon > self.search_talon)
        ):
            return super().choose(request)
        if self.evaluator_nodes and self.rules is not None and not self.rules.is_money:
            picked = self._evaluate(request)
            if picked is not None:
                return picked
        started = time.monotonic()
        wall = self.max_wall_s
        if request.move_ms:
            wall = min(wall, self.clock_share * request.move_ms / 1000)
        clock = _Clock(started + max(0.0, wall - self.safety_s), self.budget_s)
        worlds = self._worlds(request, clock.share(self.worlds_share), self.first_worlds)
        if not worlds:
            self.stats["fallback"] += 1
            return super().choose(request)
        self.stats["searched"] += 1
        self.stats["worlds"] += len(worlds)
        scores = self.scores(request) or [0.0] * len(legal)
        ranked = sorted(range(len(legal)), key=lambda i: -scores[i])
        me = request.observation.seat
        if (
            self.endgame
            and not self.rules.is_money
            and worlds[0].talon_left == 0
            and (
                len(worlds[0].active) == 2
                or sum(h.bit_count() for h in worlds[0].hands) <= self.endgame_cards
            )
        ):
            picked = self._solve(worlds, me, ranked, clock)
            if picked is not None:
                return picked
        elif (
            self.open_talon is not None
            and not self.rules.is_money
            and 0 < worlds[0].talon_left <= self.open_talon
            and len({worlds[0].side_of[s] for s in worlds[0].active}) == 2
        ):
            picked = self._solve_open(worlds, me, ranked, clock)
            if picked is not None:
                return picked
        return self._search(worlds, me, ranked[: self.candidates], clock)

    def _evaluate(self, request: referee_pb2.DecisionRequest) -> int | None:
        """The information-set evaluator's best action (:mod:`kozel.analysis.infoset`: the
        open-hand values averaged over determinizations, solved to a horizon while the talon
        is long), greedy's order breaking ties; None where it does not apply."""
        assert self.rules is not None
        obs = observation(request.observation, request.kind)
        try:
            result = evaluate(
                self.rules, obs, self.start_hand, seed=self.rng.randrange(1 << 30),
                nodes=self.evaluator_nodes, prev_last_winner=self.prev_last_winner,
            )  # fmt: skip
        except (Inconsistent, Unmodelled, Unsupported, IllegalAction):
            return None
        self.stats["evaluated"] += 1
        scores = self.scores(request) or [0.0] * len(result.values)
        return max(
            range(len(result.values)), key=lambda i: (round(result.values[i].mean, 6), scores[i])
        )

    def _solve_open(
        self, worlds: list[Deal], me: int, ranked: list[int], clock: _Clock
    ) -> int | None:
        """A short talon (two sides): each determinization solved to the end of the deal with
        the cards open (:mod:`kozel.analysis.solver`), each action's card points turned into
        the reward of the penalties they bring; the action best on average over as many as
        the clock allows (greedy's order breaks ties); None if one is too large to solve."""
        assert self.rules is not None
        side = self.rules.side_of(worlds[0].players)[me]
        reward = _open_reward(
            self.rules, worlds[0], side, self.points_weight, self._term(worlds[0], side)
        )
        totals = [0.0] * len(ranked)
        done = 0
        while done < len(worlds) and (done < 1 or not clock.up()):
            world = worlds[done]
            solution = OpenHand(world, self.open_nodes).solve(world, me)
            if not solution.exact:
                self.stats["unsolved"] += 1
                return None
            for i, v in enumerate(solution.values):
                totals[i] += reward(world, v.low)
            done += 1
            if done == len(worlds) and not clock.up():
                self._more(worlds)
        self.stats["solved"] += 1
        return max(ranked, key=lambda i: (totals[i], -ranked.index(i)))

    def _solve(self, worlds: list[Deal], me: int, ranked: list[int], clock: _Clock) -> int | None:
        """The talon is empty: each determinization's endgame solved exactly
        (:mod:`kozel.analysis.endgame`), the action best on average over as many as the clock
        allows (greedy's order breaks ties); None if a position is too large to solve."""
        assert self.rules is not None
        side = self.rules.side_of(worlds[0].players)[me]
        reward = _solver_reward(
            self.rules, worlds[0], side, self.points_weight, self._term(worlds[0], side)
        )
        totals = [0.0] * len(ranked)
        done = 0
        memo: dict[tuple[object, ...], tuple[float, float]] = {}
        while done < len(worlds) and (done < 1 or not clock.up()):
            solver = Solver(worlds[done], side, reward, self.solver_nodes, clock.up)
            solver.memo = memo  # positions repeat across determinizations
            try:
                vals = solver.values()
            except Exhausted:
                self.stats["unsolved"] += 1
                return None
            for i, v in enumerate(vals):
                totals[i] += v
            done += 1
        self.stats["solved"] += 1
        return max(ranked, key=lambda i: (totals[i], -ranked.index(i)))

    def _search(self, worlds: list[Deal], me: int, cands: list[int], clock: _Clock) -> int:
        if self.paired:
            return self._search_paired(worlds, me, cands, clock)
        return self._search_ucb(worlds, me, cands, clock)

    def _search_paired(self, worlds: list[Deal], me: int, cands: list[int], clock: _Clock) -> int:
        """Every candidate on the same determinization with the same playout dice (common
        random numbers), so the differences to greedy's pick are measured in pairs; greedy's
        pick stands unless another beats it by ``margin`` standard errors. With ``prune``, a
        candidate ``settled_z`` standard errors below greedy's pick is played no more, so the
        rounds go to the ones still in question; the search ends when none is left."""
        assert self.rules is not None
        side = self.rules.side_of(worlds[0].players)[me]
        n = len(cands)
        late = worlds[0].talon_left <= self.solve_talon
        solve = None
        if self.playout_solve and not self.rules.is_money and late:
            solve = self._solver_for(worlds[0], side)
        policy = self.playout_policy_for(side)
        term = self._term(worlds[0], side)
        diff = [0.0] * n
        diff2 = [0.0] * n
        count = [0] * n  # rounds each candidate was played in, beside greedy's pick
        alive = list(range(n))
        rounds = 0
        while rounds < 1 or not clock.up():
            if rounds >= len(worlds):
                self._more(worlds)
            world = worlds[rounds % len(worlds)]
            dice = self.rng.random()
            values: list[float] = []
            for a in alive:
                if rounds and a and clock.up():
                    break  # a round the clock cut short is left out
                sim = world.clone()
                sim.apply(me, sim.legal_actions(me)[cands[a]])
                rng = random.Random(dice)
                weight = self.points_weight
                values.append(
                    playout.playout(sim, side, rng, weight, self.seen, solve, policy, term)
                )
            if len(values) < len(alive):
                break
            for a, v in zip(alive[1:], values[1:]):
                d = v - values[0]
                diff[a] += d
                diff2[a] += d * d
                count[a] += 1
            rounds += 1
            if self.settled_z and rounds >= 2 * self.min_visits and rounds % 4 == 0:
                left = [a for a in alive[1:] if not self._settled(diff[a], diff2[a], count[a])]
                if not left:
                    break
                if self.prune:
                    alive = [0, *left]
        self.stats["playouts"] += rounds + sum(count)
        self.stats["rounds"] += rounds
        if rounds < self.min_visits or n == 1:
            return cands[0]
        return cands[self._overruling(diff, diff2, count)]

    def _overruling(self, diff: list[float], diff2: list[float], count: list[int]) -> int:
        """The candidate that beats greedy's pick (index 0) by ``margin`` standard errors in
        the paired differences, or 0."""
        best = max(range(1, len(diff)), key=lambda a: diff[a] / max(1, count[a]))
        mean, se = _mean_se(diff[best], diff2[best], count[best])
        if mean > self.margin * se and mean > 0:
            self.stats["overruled"] += 1
            return best
        return 0

    def playout_policy_for(self, side: int) -> playout.Policy | None:
        """The playout policy ``playout_policy`` names for a search by ``side`` (None: the
        default of :func:`~kozel.sdk.playout.playout`, by ``seen``)."""
        seen = playout.Exploring(playout.policy_seen, self.seen_explore)
        greedy = playout.Exploring(playout.policy_greedy, self.explore)
        if self.playout_policy == "greedy":
            return greedy
        if self.playout_policy == "split":
            return playout.SplitPolicy(side, seen, greedy)
        if self.playout_policy != "seen":
            raise ValueError(f"unknown playout_policy {self.playout_policy!r}")
        if self.seen and self.seen_explore != playout.SEEN_EXPLORE:
            return seen
        return None

    def _settled(self, diff: float, diff2: float, count: int) -> bool:
        """Whether a candidate is worse than greedy's pick by ``settled_z`` standard errors
        (its summed paired differences ``diff`` and their squares, over ``count`` rounds)."""
        mean, se = _mean_se(diff, diff2, count)
        return mean + self.settled_z * se < 0

    def _solver_for(self, deal: Deal, side: int) -> Callable[[Deal], float | None]:
        """Exact values of playout positions (talon empty) with a shared memo; None when a
        position needs more than ``playout_nodes``."""
        assert self.rules is not None
        reward = _solver_reward(self.rules, deal, side, self.points_weight, self._term(deal, side))
        memo: dict[tuple[object, ...], tuple[float, float]] = {}
        nodes = self.playout_nodes

        def solve(d: Deal) -> float | None:
            solver = Solver(d, side, reward, nodes)
            solver.memo = memo
            try:
                vals = solver.values()
            except Exhausted:
                self.stats["unsolved"] += 1
                return None
            return max(vals) if d.side_of[d.to_act[0]] == side else min(vals)

        return solve

    def _search_ucb(self, worlds: list[Deal], me: int, cands: list[int], clock: _Clock) -> int:
        """UCB1 over the candidates (greedy's best first); greedy's pick stands unless the
        search finds one better by more than ``margin`` standard errors."""
        n = len(cands)
        visits = [0] * n
        totals = [0.0] * n
        squares = [0.0] * n
        assert self.rules is not None
        side = self.rules.side_of(worlds[0].players)[me]
        policy = self.playout_policy_for(side)
        term = self._term(worlds[0], side)
        it = 0
        # Every action once per world first is too slow at 4 cards of 4 leads; UCB1 it is.
        while True:
            if it >= n and clock.up():
                break
            world = worlds[it % len(worlds)]
            if it < n:
                a = it
            else:
                log_t = math.log(it)
                a = max(
                    range(n),
                    key=lambda i: totals[i] / visits[i] + _UCB_C * math.sqrt(log_t / visits[i]),
                )
            sim = world.clone()
            sim.apply(me, sim.legal_actions(me)[cands[a]])
            reward = playout.playout(
                sim, side, self.rng, self.points_weight, self.seen, None, policy, term
            )
            visits[a] += 1
            totals[a] += reward
            squares[a] += reward * reward
            it += 1
        self.stats["playouts"] += it
        best = max(range(n), key=lambda i: totals[i] / visits[i])
        if best == 0 or min(visits[0], visits[best]) < self.min_visits:
            return cands[0]

        m0, se0 = _mean_se(totals[0], squares[0], visits[0])
        mb, seb = _mean_se(totals[best], squares[best], visits[best])
        return cands[best] if mb - m0 > self.margin * math.hypot(se0, seb) else cands[0]

    # -- determinizations ------------------------------------------------------------------

    def _worlds(
        self, request: referee_pb2.DecisionRequest, clock: _Clock, limit: int | None = None
    ) -> list[Deal]:
        """Up to ``limit`` (default ``max_worlds``) determinizations; the search draws more
        as it needs them (:meth:`_more`)."""
        obs = request.observation
        self._plan = None
        rules = self.rules
        assert rules is not None
        try:
            plan = Worlds(rules, observation(obs), self.start_hand, self.prev_last_winner)
        except (Inconsistent, Unmodelled):
            return []
        want = len(request.legal_actions)
        worlds: list[Deal] = []
        tries = 0
        limit = self.max_worlds if limit is None else limit
        slack = self._slack(plan)
        fails = 0
        while len(worlds) < limit and (tries < 2 or not clock.up()):
            tries += 1
            try:
                deal = plan.sample(self.rng, slack, _read_greedy)
            except Unlikely:
                self.stats["unlikely"] += 1
                if tries >= 400 and not worlds:
                    slack = None  # the opponent does not play as modelled here
                continue
            except (Inconsistent, IllegalAction):
                fails += 1
                if fails >= 8 and not worlds:
                    return []  # this position is beyond the model: play greedy
                continue
            if len(deal.legal_actions(obs.seat)) == want:
                worlds.append(deal)
        if worlds:
            self._plan, self._want = plan, want
        return worlds

    def _slack(self, plan: Worlds) -> float | None:
        """``model_slack`` when the opponent's answers are read (two players, penalty game)."""
        assert self.rules is not None
        if not self.read_opponent or len(plan.active) != 2 or self.rules.is_money:
            return None
        return self.model_slack

    def _more(self, worlds: list[Deal], tries: int = 3) -> None:
        """One more determinization for ``worlds``, if one of a few draws gives it."""
        plan = self._plan
        if plan is None or len(worlds) >= self.max_worlds:
            return
        slack = self._slack(plan)
        for _ in range(tries):
            try:
                deal = plan.sample(self.rng, slack, _read_greedy)
            except Unlikely:
                self.stats["unlikely"] += 1
                continue
            except (Inconsistent, IllegalAction):
                continue
            if len(deal.legal_actions(plan.me)) == self._want:
                worlds.append(deal)
                return


def _read_greedy(deal: Deal, seat: int, rng: random.Random) -> Action:
    """How GreedyBot would answer in ``deal`` (the model of ``read_opponent``)."""
    return playout.policy_greedy(deal, deal.legal_actions(seat), deal.trump, rng, 0.0)


def _open_reward(
    rules: Ruleset,
    deal: Deal,
    side: int,
    points_weight: float,
    term: Callable[[Sequence[int | None]], float] | None = None,
) -> Callable[[Deal, int], float]:
    """The reward of ``side`` taking ``value`` more card points in a determinization (two
    sides: the other takes the rest), by :func:`_solver_reward`; a side that has no trick
    yet is counted as taking one when it takes points."""
    final = _solver_reward(rules, deal, side, points_weight, term)
    other = next(deal.side_of[s] for s in deal.active if deal.side_of[s] != side)
    total = points(rules.deck)

    def reward(world: Deal, value: int) -> float:
        pts = world.card_points()
        trk = [1 if t else 0 for t in world.side_tricks()]
        left = total - sum(pts)
        pts[side] += value
        pts[other] += left - value
        trk[side] |= value > 0
        trk[other] |= left - value > 0
        return final(pts, trk)

    return reward


def _solver_reward(
    rules: Ruleset,
    deal: Deal,
    side: int,
    points_weight: float,
    term: Callable[[Sequence[int | None]], float] | None = None,
) -> Callable[[Sequence[int], Sequence[int]], float]:
    """The solver's terminal value: :func:`~kozel.sdk.playout.reward` of the penalties the
    deal's scoring entry charges for these points and tricks per side."""
    sides = deal.active_sides()
    entry = rules.scoring_for(len(deal.active))
    others = [s for s in sides if s != side]
    n = deal.n_sides

    def reward(pts: Sequence[int], trk: Sequence[int]) -> float:
        charged = deal_penalties(entry, [pts[s] for s in sides], [trk[s] for s in sides])
        pen: list[int | None] = [None] * n
        for s, p in zip(sides, charged):
            pen[s] = p
        return playout.reward(pen, pts, side, others, points_weight, term)

    return reward


class _MatchModel:
    """Each side's chance to win the match from penalty totals, under a plain model of the
    deals to come: every order of the sides' places equally likely, each place charged as the
    ruleset's scoring scheme charges it (a graded scheme's non-top places 2). The limit, the
    elimination rule (last survivor, first out) and the scoring entry per number of sides left
    are the ruleset's; the sides are ``seats_per`` seats each."""

    def __init__(self, rules: Ruleset, seats_per: int) -> None:
        self.limit = rules.limit
        self.first_out = rules.elimination == Elimination.FIRST_OUT
        self.rules = rules
        self.seats_per = seats_per
        self.memo: dict[tuple[int, ...], tuple[float, ...]] = {}
        self.places: dict[int, tuple[int, ...]] = {}

    def place_penalties(self, k: int) -> tuple[int, ...]:
        """What the places 1..k pay in a deal of ``k`` sides."""
        got = self.places.get(k)
        if got is None:
            entry = self.rules.scoring_for(k * self.seats_per)
            if entry.scheme == Scheme.POSITIONAL:
                got = tuple(2 * p for p in range(k))
            else:
                got = (0,) + (2,) * (k - 1)
            self.places[k] = got
        return got

    def after(self, totals: Sequence[int]) -> tuple[float, ...]:
        """Each side's win chance once a deal has brought the totals to ``totals``."""
        k = len(totals)
        out = [i for i in range(k) if totals[i] >= self.limit]
        if not out:
            return self.chances(tuple(totals))
        rest = [i for i in range(k) if i not in out]
        won = [0.0] * k
        if self.first_out:
            if rest:
                low = min(totals[i] for i in rest)
                best = [i for i in rest if totals[i] == low]
                for i in best:
                    won[i] = 1.0 / len(best)
        elif len(rest) == 1:
            won[rest[0]] = 1.0
        elif rest:
            for i, v in zip(rest, self.chances(tuple(totals[i] for i in rest))):
                won[i] = v
        return tuple(won)

    def chances(self, totals: tuple[int, ...]) -> tuple[float, ...]:
        """Each side's win chance before a deal, the totals ``totals``."""
        got = self.memo.get(totals)
        if got is not None:
            return got
        k = len(totals)
        if k == 1:
            return (1.0,)
        pens = self.place_penalties(k)
        acc = [0.0] * k
        orders = list(itertools.permutations(range(k)))
        for order in orders:
            for i, v in enumerate(self.after([totals[i] + pens[order[i]] for i in range(k)])):
                acc[i] += v
        got = tuple(a / len(orders) for a in acc)
        self.memo[totals] = got
        return got


def _match_term(
    rules: Ruleset,
    deal: Deal,
    totals: Sequence[int],
    side: int,
    models: dict[int, _MatchModel] | None = None,
) -> Callable[[Sequence[int | None]], float] | None:
    """A deal's penalties (per side) valued for ``side`` by the match win chance they leave
    (:class:`_MatchModel`, from the totals before the deal), mapped linearly onto the scale of
    :func:`~kozel.sdk.playout.reward`'s linear term: the model's best and worst outcomes of this
    deal for ``side`` get the linear term's best and worst values. None when the match is of
    fixed deals, the totals are unknown, or no outcome of the deal changes the chance.
    ``models`` keeps the models (by seats per side) of one ruleset from call to call."""
    sides = deal.active_sides()
    if rules.fixed_deals is not None or len(totals) < deal.n_sides or side not in sides:
        return None
    if any(totals[s] >= rules.limit for s in sides):
        return None
    seats_per = max(1, len(deal.active) // len(sides))
    models = {} if models is None else models
    model = models.get(seats_per)
    if model is None:
        model = models[seats_per] = _MatchModel(rules, seats_per)
    me = sides.index(side)
    base = [totals[s] for s in sides]
    k = len(sides)
    pens = model.place_penalties(k)
    vals: list[float] = []
    lin: list[float] = []
    for order in itertools.permutations(range(k)):
        vals.append(model.after([base[i] + pens[order[i]] for i in range(k)])[me])
        mine = pens[order[me]]
        lin.append((sum(pens[o] for o in order) - mine) / (k - 1) / 6 - mine / 6)
    hi, lo = max(vals), min(vals)
    if hi - lo < 1e-6:
        return None
    scale = (max(lin) - min(lin)) / (hi - lo)
    mid = (hi + lo) / 2
    cache: dict[tuple[int, ...], float] = {}

    def term(pen: Sequence[int | None]) -> float:
        key = tuple(pen[s] or 0 for s in sides)
        v = cache.get(key)
        if v is None:
            v = (model.after([b + p for b, p in zip(base, key)])[me] - mid) * scale
            cache[key] = v
        return v

    return term
