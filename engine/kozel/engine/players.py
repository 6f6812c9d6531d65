"""Simple built-in players that choose among the legal actions (for demos, tests, benchmarks)."""

from __future__ import annotations

import random

from kozel.engine.actions import Action
from kozel.engine.cards import cards_in
from kozel.engine.deal import Deal
from kozel.engine.rules import Ruleset


def random_action(deal: Deal, seat: int, rng: random.Random) -> Action:
    """A uniformly random legal action of ``seat``."""
    return rng.choice(deal.legal_actions(seat))


def play_random_deal(rules: Ruleset, players: int, rng: random.Random) -> tuple[Deal, int]:
    """Deal a random deck and play it out with random legal actions; returns the deal and the
    number of decisions taken."""
    deck = cards_in(rules.deck)
    rng.shuffle(deck)
    tidx = rng.randrange(len(deck) - 4 * players)
    deal = Deal.start(rules, players, deck, rng.randrange(players), trump_index=tidx)
    decisions = 0
    choice = rng.choice
    while not deal.over:
        seat = deal.to_act[0]
        deal.apply(seat, choice(deal.legal_actions(seat)))
        decisions += 1
    return deal, decisions
