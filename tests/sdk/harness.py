"""Plays engine matches between SDK bots in-process, building each DecisionRequest the way
the referee does (``kozel.core.convert``), so house bots can be evaluated without a server."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kozel.core.convert import (
    DECISION_TO_PB,
    action_from_pb,
    action_to_pb,
    observation_to_pb,
    ruleset_to_pb,
)
from kozel.engine import Action, ActionKind, Deal, Match, Ruleset, observe
from kozel.engine.cards import CARD_OF, cards_in, mask_of
from kozel.sdk import Bot
from kozel.v1 import game_pb2, referee_pb2


@dataclass
class Outcome:
    """How one match went."""

    winner: int | None  # winning side, None on a draw
    deals: int
    decisions: int
    explicit_actions: int  # answers given as an Action rather than an index


def request_for(
    deal: Deal, seat: int, request_id: int = 0, match_id: str = "m"
) -> tuple[referee_pb2.DecisionRequest, tuple[Action, ...]]:
    """The DecisionRequest the referee would send ``seat`` now, and the engine's legal list."""
    legal = deal.legal_actions(seat)
    req = referee_pb2.DecisionRequest(
        match_id=match_id,
        request_id=request_id,
        kind=DECISION_TO_PB[deal.decision],
        observation=observation_to_pb(observe(deal, seat)),
        legal_actions=[action_to_pb(a) for a in legal],
    )
    return req, legal


def to_engine(choice: int | game_pb2.Action, legal: Sequence[Action], hand: int) -> Action:
    """A bot's answer as an engine action; fails the test if it is not legal. A declaration
    may leave its cards out (they are the whole ``hand``)."""
    if isinstance(choice, game_pb2.Action):
        kind, cards, combo = action_from_pb(choice)
        mask = hand if kind is ActionKind.DECLARE and not cards else mask_of(cards)
        action = Action(kind, mask, combo)
        assert action in legal, f"explicit action {choice} is not legal"
        return action
    assert isinstance(choice, int) and not isinstance(choice, bool), choice
    assert 0 <= choice < len(legal), f"index {choice} of {len(legal)}"
    return legal[choice]


def start_match(
    bots: Sequence[Bot], seed: int | bytes, preset: str = "classic", move_ms: int = 0
) -> Match:
    """A match of ``len(bots)`` seats, announced to each bot by its MatchStart."""
    rules = Ruleset.preset(preset)
    players = len(bots)
    match = Match(rules, players, seed)
    seating = [
        referee_pb2.Player(seat=s, name=f"p{s}", side=match.side_of[s]) for s in range(players)
    ]
    for seat, bot in enumerate(bots):
        bot.on_match_start(
            referee_pb2.MatchStart(
                match_id="m",
                seat=seat,
                players=players,
                ruleset=ruleset_to_pb(rules),
                seating=seating,
                time_control=game_pb2.TimeControl(move_ms=move_ms),
            )
        )
    return match


def play_match(bots: Sequence[Bot], seed: int | bytes, preset: str = "classic") -> Outcome:
    """Play one match of ``len(bots)`` seats, seat i played by ``bots[i]``."""
    match = start_match(bots, seed, preset)
    decisions = explicit = 0
    while not match.over:
        seat = match.deal.to_act[0]
        req, legal = request_for(match.deal, seat, decisions)
        choice = bots[seat].choose(req)
        explicit += isinstance(choice, game_pb2.Action)
        match.apply(seat, to_engine(choice, legal, match.deal.hands[seat]))
        decisions += 1
    return Outcome(match.winner, len(match.records), decisions, explicit)


def deal_with(
    hands: Sequence[Sequence[str]],
    trump_card: str,
    preset: str = "classic",
    dealer: int | None = None,
) -> Deal:
    """A deal whose seats hold ``hands`` and whose turned-up card is ``trump_card``; the
    rest of the talon is in canonical order. Seat 0 leads first (left of the dealer)."""
    rules = Ruleset.preset(preset)
    players = len(hands)
    dealer = players - 1 if dealer is None else dealer
    order = [(dealer + 1 + i) % players for i in range(players)]
    deck = [CARD_OF[hands[s][r]] for r in range(4) for s in order]
    deck.append(CARD_OF[trump_card])
    deck += [c for c in cards_in(rules.deck) if c not in deck]
    return Deal.start(rules, players, deck, dealer)
