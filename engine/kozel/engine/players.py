"""Simple built-in players that choose among the legal actions (for demos, tests, benchmarks)."""

from __future__ import annotations

import random
from functools import lru_cache

from kozel.engine.actions import PASS, Action, ActionKind
from kozel.engine.cards import cards_in
from kozel.engine.deal import Deal
from kozel.engine.rules import Ruleset


@lru_cache(maxsize=16)
def _deck_cards(deck: int) -> tuple[int, ...]:
    return tuple(cards_in(deck))


def random_action(deal: Deal, seat: int, rng: random.Random) -> Action:
    """A uniformly random legal action of ``seat``."""
    return rng.choice(deal.legal_actions(seat))


def play_random_deal(rules: Ruleset, players: int, rng: random.Random) -> tuple[Deal, int]:
    """Deal a random deck and play it out with random legal actions; returns the deal and the
    number of decisions taken."""
    deck = list(_deck_cards(rules.deck))
    rng.shuffle(deck)
    tidx = rng.randrange(len(deck) - 4 * players)
    deal = Deal.start(rules, players, deck, rng.randrange(players), trump_index=tidx)
    decisions = 0
    rnd = rng.random  # cheaper than rng.choice; uniform to within float precision
    while not deal.over:
        seat = deal.to_act[0]
        legal = deal.legal_actions(seat)
        deal.apply(seat, legal[int(rnd() * len(legal))])
        decisions += 1
    return deal, decisions


def default_action(deal: Deal, seat: int) -> Action:
    """The action the referee plays for a seat that ran out of time.

    Declaration window: pass. Lead: the single card of lowest rank (suits S C D H break ties),
    the shokha only if nothing else can be led. Response: discard the lowest-ranked cards.
    """
    legal = deal.legal_actions(seat)
    if not legal:
        raise ValueError(f"seat {seat} is not asked now")
    kind = legal[0].kind
    if kind is ActionKind.DECLARE:
        return PASS
    shokha = deal.rules.shokha

    def low_first(c: int) -> tuple[int, int]:  # rank, then suit; the shokha is never cheap
        return (99, 0) if shokha and c == 0 else (c % 9, c // 9)

    if kind is ActionKind.LEAD:
        singles = [a for a in legal if a.cards.bit_count() == 1]
        return min(singles, key=lambda a: low_first(a.cards.bit_length() - 1))
    discards = [a for a in legal if a.kind is ActionKind.DISCARD]
    return min(discards, key=lambda a: sorted(low_first(c) for c in cards_in(a.cards)))
