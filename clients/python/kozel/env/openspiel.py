"""Kozel as an OpenSpiel game: ``import kozel.env.openspiel`` registers ``kozel``, then
``pyspiel.load_game("kozel(preset=classic,players=2,reward=points)")``.

One deal of the arena's rules, played by the engine (:class:`kozel.engine.deal.Deal`):

- Chance deals it as a person would: first the dealer (outcome = seat), then the deck card by
  card from the top (outcome = card number, each remaining card equally likely), then, for a
  ``random_middle`` trump, the shown talon card (outcome = its talon position).
- Actions are the SDK encoding's 47 hand-relative indices (:mod:`kozel.sdk.encoding`), legal
  ones ascending; a declaration window asks its seats one after the other.
- Observation and information-state tensors are the encoding's observation tensor of the
  player's current view (the same numbers ``kozel.env`` and ``kozel bot --policy`` give a
  policy; with no match standing). The information-state string has perfect recall: the
  player's first hand, the trump card, then every event as its seat saw it and its own answers.
- ``reward``: ``points`` (the side's card points / 120) or ``penalties`` (minus the deal's
  penalty points for the side; in the money game the chips won from the pot), paid at the end.
- ``resample_from_infostate(player, sampler)`` draws a state the player cannot tell from this
  one (what OpenSpiel's ISMCTS searches over): the cards it never saw are permuted among their
  places and the deal is replayed with others' face-down discards renamed accordingly. A card
  it saw go into a face-down discard (a drawn trump card) stays in the discard it went to.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pyspiel

from kozel.core import convert
from kozel.engine.actions import PASS as PASS_ACTION
from kozel.engine.actions import Action, ActionKind, Combo, Decision
from kozel.engine.cards import CARD_OF, CODES, N_CARDS, codes
from kozel.engine.deal import Deal
from kozel.engine.observation import DeclaredView, DrawnView, PlayView, event_views, observe
from kozel.engine.rules import Ruleset, TrumpMode
from kozel.sdk import encoding
from kozel.sdk.encoding import Context, kind_index, observation_tensor

MAX_PLAYERS = 5
MAX_DECISIONS = 400  # card plays (at most 36) and declaration answers (at most 5 per window)
PARAMETERS = {"preset": "classic", "players": 2, "reward": "points"}

GAME_TYPE = pyspiel.GameType(
    short_name="kozel",
    long_name="Kozel (Kozel Arena rules, one deal)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.GENERAL_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=MAX_PLAYERS,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=PARAMETERS,
)

_DECISION_PB = {
    Decision.LEAD: 1,
    Decision.RESPOND: 2,
    Decision.DECLARE: 3,
}


class KozelGame(pyspiel.Game):
    """One deal of Kozel for ``players`` under a preset's rules."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        params = {**PARAMETERS, **(params or {})}
        self.rules = Ruleset.preset(str(params["preset"]))
        self.players = int(params["players"])
        self.rules.check_players(self.players)
        self.reward = str(params["reward"])
        if self.reward not in ("points", "penalties"):
            raise ValueError(f"reward must be points or penalties, not {self.reward!r}")
        low, high = (0.0, 1.0) if self.reward == "points" else (-12.0, 12.0)
        info = pyspiel.GameInfo(
            num_distinct_actions=encoding.N_ACTIONS,
            max_chance_outcomes=N_CARDS,
            num_players=self.players,
            min_utility=low,
            max_utility=high,
            max_game_length=MAX_DECISIONS,
        )
        super().__init__(GAME_TYPE, info, params)
        self.deck = [c for c in range(N_CARDS) if self.rules.deck >> c & 1]
        # States name their game by key: OpenSpiel deep-copies (clone) and pickles (serialize)
        # every field of a state, which a game object does not survive.
        self.key = f"{params['preset']}/{self.players}/{self.reward}"
        _GAMES[self.key] = self
        self.context = Context(
            deck=tuple(self.deck),
            limit=self.rules.limit,
            money=self.rules.is_money,
            players=self.players,
            sides=self.rules.side_of(self.players),
        )

    def new_initial_state(self) -> KozelState:
        return KozelState(self)

    def make_py_observer(
        self, iig_obs_type: Any = None, params: dict[str, Any] | None = None
    ) -> KozelObserver:
        if params:
            raise ValueError(f"observation parameters are not supported: {params}")
        recall = iig_obs_type is not None and iig_obs_type.perfect_recall
        return KozelObserver(self, perfect_recall=recall)


_GAMES: dict[str, KozelGame] = {}


class _DealBox:
    """The engine's deal, a compiled class: copied by :meth:`Deal.clone` (a clone), pickled as
    what rebuilds it (a serialized state)."""

    __slots__ = ("deal", "key")

    def __init__(self, deal: Deal | None, key: str) -> None:
        self.deal = deal
        self.key = key

    def __deepcopy__(self, memo: dict[int, Any]) -> _DealBox:
        return _DealBox(self.deal.clone() if self.deal is not None else None, self.key)

    def __reduce__(self) -> tuple[Any, ...]:
        deal = self.deal
        if deal is None:
            return (_DealBox, (None, self.key))
        history = [(s, str(a.kind), a.cards, a.combo and str(a.combo)) for s, a in deal.history]
        start = (list(deal.deck), deal.dealer, deal.trump_index, deal.first_leader, deal.active)
        return (_rebuild, (self.key, start, history))


def _rebuild(key: str, start: tuple[Any, ...], history: list[tuple[Any, ...]]) -> _DealBox:
    deck, dealer, trump_index, first_leader, active = start
    game = _GAMES[key]
    deal = Deal.start(
        game.rules,
        game.players,
        deck,
        dealer,
        trump_index=trump_index,
        first_leader=first_leader,
        active=tuple(active),
    )
    for seat, kind, cards, combo in history:
        deal.apply(seat, Action(ActionKind(kind), cards, combo and Combo(combo)))
    return _DealBox(deal, key)


class KozelState(pyspiel.State):
    """A deal being dealt or played (see the module docstring)."""

    def __init__(self, game: KozelGame) -> None:
        super().__init__(game)
        self.key = game.key
        self.dealer = -1
        self.deck: list[int] = []
        self.trump_index: int | None = None
        # A match's deal (from_deal): its first leader (``prev_last_trick``) and seats dealt in.
        self.first_leader: int | None = None
        self.active: tuple[int, ...] = tuple(range(game.players))
        self.box = _DealBox(None, game.key)
        self.start_hands: list[int] = []
        self.seen: list[list[str]] = [[] for _ in range(game.players)]  # per player: its events
        self.log_pos = 0

    @property
    def _game(self) -> KozelGame:
        return _GAMES[self.key]

    @property
    def deal(self) -> Deal:
        deal = self.box.deal
        assert deal is not None, "the deal is still being dealt"
        return deal

    # -- OpenSpiel's state API -------------------------------------------------------------

    def current_player(self) -> int:
        deal = self.box.deal
        if deal is None:
            return int(pyspiel.PlayerId.CHANCE)
        if deal.over:
            return int(pyspiel.PlayerId.TERMINAL)
        return deal.to_act[0]

    def is_terminal(self) -> bool:
        return self.box.deal is not None and self.box.deal.over

    def chance_outcomes(self) -> list[tuple[int, float]]:
        game = self._game
        if self.dealer < 0:
            outcomes = list(range(game.players))
        elif len(self.deck) < len(game.deck):
            taken = set(self.deck)
            outcomes = [c for c in game.deck if c not in taken]
        else:  # the shown talon card of a random_middle trump
            outcomes = list(range(len(game.deck) - 4 * len(self.active)))
        p = 1.0 / len(outcomes)
        return [(o, p) for o in outcomes]

    def _legal_actions(self, player: int) -> list[int]:
        deal = self.deal
        if player not in deal.to_act or player != deal.to_act[0]:
            return []
        return sorted(self.indexed(player))

    def indexed(self, seat: int) -> dict[int, Action]:
        """``seat``'s legal actions by index."""
        deal = self.deal
        hand = deal.hands[seat]
        return {kind_index(str(a.kind), a.cards, hand): a for a in deal.legal_actions(seat)}

    def _apply_action(self, action: int) -> None:
        if self.box.deal is None:
            self._deal_card(action)
            return
        seat = self.deal.to_act[0]
        chosen = self.indexed(seat).get(action)
        if chosen is None:
            raise ValueError(f"action {action} is not legal for seat {seat}")
        self._play(seat, chosen)

    def _play(self, seat: int, action: Action) -> None:
        deal = self.deal
        deal.apply(seat, action)
        self.seen[seat].append(f"me:{action}")
        for player in range(self._game.players):
            self.seen[player] += [repr(v) for v in event_views(deal, self.log_pos, player)]
        self.log_pos = len(deal.log)

    def _deal_card(self, outcome: int) -> None:
        game = self._game
        if self.dealer < 0:
            self.dealer = outcome
            return
        if len(self.deck) < len(game.deck):
            self.deck.append(outcome)
            if len(self.deck) < len(game.deck) or game.rules.trump_mode == TrumpMode.RANDOM_MIDDLE:
                return
        else:
            self.trump_index = outcome
        self._start()

    def _start(self) -> None:
        game = self._game
        deal = Deal.start(
            game.rules,
            game.players,
            self.deck,
            self.dealer,
            trump_index=self.trump_index,
            first_leader=self.first_leader,
            active=self.active,
        )
        self.box = _DealBox(deal, self.key)
        self.start_hands = list(deal.hands)
        self.log_pos = len(deal.log)

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            if self.dealer < 0:
                return f"dealer {action}"
            if len(self.deck) < len(self._game.deck):
                return f"deal {CODES[action]}"
            return f"trump card at talon position {action}"
        hand = sorted(c for c in range(N_CARDS) if self.deal.hands[player] >> c & 1)
        return encoding.index_name(action, hand)

    def returns(self) -> list[float]:
        deal = self.box.deal
        n = self._game.players
        if deal is None or not deal.over:
            return [0.0] * n
        side_of = deal.side_of
        if self._game.reward == "points":
            pts = deal.card_points()
            return [pts[side_of[s]] / 120 for s in range(n)]
        if deal.rules.is_money:
            winners = deal.pot_winners
            share = len(deal.active) / len(winners) if winners else 0.0
            return [(share if s in winners else 0.0) - (s in deal.active) for s in range(n)]
        pen = deal.penalties() or []
        return [-float(pen[side_of[s]] or 0) for s in range(n)]

    def __str__(self) -> str:
        if self.box.deal is None:
            return f"dealer {self.dealer}, dealt {' '.join(CODES[c] for c in self.deck)}"
        deal = self.deal
        hands = " | ".join(" ".join(codes(h)) for h in deal.hands)
        return f"{deal!r}; hands {hands}; history {len(deal.history)}"

    # -- what a player knows -----------------------------------------------------------------

    def information_state_text(self, player: int) -> str:
        if self.box.deal is None:
            return f"p{player} dealing"
        deal = self.deal
        return (
            f"p{player} hand {' '.join(codes(self.start_hands[player]))} "
            f"trump {CODES[deal.indicator]} dealer {deal.dealer}|" + ";".join(self.seen[player])
        )

    def view(self, player: int) -> Any:
        """The player's observation as the referee would send it (``kozel.v1.Observation``)."""
        return convert.observation_to_pb(observe(self.deal, player))

    def tensor(self, player: int) -> np.ndarray:
        """The encoding's observation tensor of ``player`` (zeros while dealing)."""
        if self.box.deal is None:
            return np.zeros(encoding.OBS_SIZE, dtype=np.float32)
        deal = self.deal
        asked = player in deal.to_act and not deal.over
        kind = _DECISION_PB.get(deal.phase, 0) if asked else 0
        return observation_tensor(self.view(player), kind, self._game.context)

    def resample_from_infostate(self, player: int, sampler: Any = None) -> KozelState:
        """A state ``player`` cannot tell from this one (see the module docstring)."""
        deal = self.deal
        seen = _seen_by(deal, player, self.start_hands[player])
        unseen = [c for c in self._game.deck if c not in seen]
        perm = unseen[:]
        random.shuffle(perm)
        return from_deal(self._game, deal, dict(zip(unseen, perm)), self.current_player())

    def replay(self, truth: Deal, rename: dict[int, int], until: int | None) -> None:
        """Apply the true deal's history with the cards renamed. Declaration windows are
        answered in this deal's order: a seat this world asks but the true one did not passes,
        an answer of a seat this world does not ask is dropped, a declaration whose cards were
        renamed (it lost its window, unseen) becomes a pass; the window open at the end is
        answered until ``until`` is to act."""
        window: list[tuple[int, Action]] = []  # answers of the window open, in order
        opened_at = 0
        for (seat, action), tricks in zip(truth.history, _tricks_before(truth), strict=True):
            if action.kind in (ActionKind.PASS, ActionKind.DECLARE):
                if window and tricks != opened_at:  # a declared combination won a trick
                    self._close_windows(window, None, one=True)
                    window = []
                opened_at = tricks
                hidden = any(action.cards >> c & 1 for c in rename)
                window.append((seat, PASS_ACTION if hidden else action))  # a losing declaration
                continue
            self._close_windows(window, None)
            window = []
            cards = sum(1 << rename.get(c, c) for c in range(N_CARDS) if action.cards >> c & 1)
            self._apply_engine(seat, Action(action.kind, cards, action.combo))
        if window and opened_at != len(truth.tricks):  # the last window's trick is played
            self._close_windows(window, None, one=True)
            window = []
        self._close_windows(window, until)

    def _close_windows(
        self, answers: list[tuple[int, Action]], until: int | None, *, one: bool = False
    ) -> None:
        """Answer the window open now with each seat's recorded answers in order, PASS where it
        has none. A declaration won ends the window (its trick is played at once); any window
        it opens is passed until ``until`` acts, or left open with ``one`` (its answers come
        next)."""
        deal = self.deal
        tricks = len(deal.tricks)
        while deal.phase is Decision.DECLARE and not deal.over:
            if len(deal.tricks) != tricks:
                if one:
                    return
                answers = []
            seat = deal.to_act[0]
            mine = next((i for i, (s, _) in enumerate(answers) if s == seat), None)
            if seat == until and mine is None:
                return
            self._apply_engine(seat, answers.pop(mine)[1] if mine is not None else PASS_ACTION)

    def _apply_engine(self, seat: int, action: Action) -> None:
        self.apply_action(kind_index(str(action.kind), action.cards, self.deal.hands[seat]))


def _tricks_before(deal: Deal) -> list[int]:
    """For each action of ``deal``'s history, the tricks completed before it: two declaration
    windows with no card play between them (a declared combination won the trick that parts
    them) differ."""
    again = Deal.start(
        deal.rules,
        deal.players,
        deal.deck,
        deal.dealer,
        trump_index=deal.trump_index,
        first_leader=deal.first_leader,
        active=deal.active,
    )
    counts = []
    for seat, action in deal.history:
        counts.append(len(again.tricks))
        again.apply(seat, action)
    return counts


def _seen_by(deal: Deal, player: int, start_hand: int) -> set[int]:
    """Every card ``player`` has seen: its own (dealt, drawn, played), the trump card, face-up
    plays, declared hands, cards known to be in a hand."""
    seen = {deal.indicator}
    mine = start_hand | deal.hands[player]
    for s in range(deal.players):
        mine |= deal.known[s]
    seen.update(c for c in range(N_CARDS) if mine >> c & 1)
    for view in event_views(deal, 0, player):
        if isinstance(view, PlayView | DeclaredView | DrawnView):
            seen.update(CARD_OF[c] for c in view.cards)
    return seen


class KozelObserver:
    """OpenSpiel's observer for Kozel: the encoding's tensor, and a string (perfect recall:
    the player's history; otherwise its current view)."""

    def __init__(self, game: KozelGame, *, perfect_recall: bool) -> None:
        self.perfect_recall = perfect_recall
        self.tensor = np.zeros(encoding.OBS_SIZE, dtype=np.float32)
        self.dict = {"observation": self.tensor}

    def set_from(self, state: KozelState, player: int) -> None:
        self.tensor[:] = state.tensor(player)

    def string_from(self, state: KozelState, player: int) -> str:
        if self.perfect_recall:
            return state.information_state_text(player)
        if state.box.deal is None:
            return f"p{player} dealing"
        return str(state.view(player)).replace("\n", " ")


def from_deal(
    game: KozelGame, deal: Deal, rename: dict[int, int] | None = None, until: int | None = None
) -> KozelState:
    """The state of an engine deal (a match's deal in play, for a search), its cards renamed
    by ``rename``; a declaration window open at the end is answered until ``until`` acts."""
    rename = rename or {}
    state = KozelState(game)
    state.first_leader = deal.first_leader
    state.active = tuple(deal.active)
    for outcome in [deal.dealer, *(rename.get(c, c) for c in deal.deck)]:
        state.apply_action(outcome)
    if deal.trump_index is not None:
        state.apply_action(deal.trump_index)
    state.replay(deal, rename, until)
    return state


pyspiel.register_game(GAME_TYPE, KozelGame)
