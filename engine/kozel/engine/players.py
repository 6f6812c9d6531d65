"""Simple built-in players that choose among the legal actions (for demos, tests, benchmarks)."""

from __future__ import annotations

import math
import random
from functools import lru_cache
from typing import Final, NamedTuple

from kozel.engine.actions import PASS, Action, ActionKind, Decision
from kozel.engine.cards import cards_in, deck_mask
from kozel.engine.deal import Deal
from kozel.engine.rules import Ruleset

_LEAD: Final = Decision.LEAD
_RESPOND: Final = Decision.RESPOND
_DECLARE: Final = Decision.DECLARE


class _Deck(NamedTuple):
    cards: tuple[int, ...]
    orders: int  # n!
    bits: int  # enough random bits to draw a number below n!
    # The radices n, n - 1, ... 2 in runs whose product is below 2**30, with the product: the
    # Lehmer digits of a run are those of one remainder, a machine integer, so the long
    # number is divided by one of its digits a few times instead of n - 1 times.
    runs: tuple[tuple[int, tuple[int, ...]], ...]


@lru_cache(maxsize=16)
def _deck(removed_cards: tuple[str, ...]) -> _Deck:
    cards = tuple(cards_in(deck_mask(removed_cards)))
    orders = math.factorial(len(cards))
    runs: list[tuple[int, tuple[int, ...]]] = []
    run: list[int] = []
    for n in range(len(cards), 1, -1):
        if math.prod(run) * n >= 1 << 30:
            runs.append((math.prod(run), tuple(run)))
            run = []
        run.append(n)
    runs.append((math.prod(run), tuple(run)))
    return _Deck(cards, orders, (orders - 1).bit_length(), tuple(runs))


def _shuffled(removed_cards: tuple[str, ...], rng: random.Random) -> list[int]:
    """A uniformly random order of the deck: one random number below n! read as the digits of
    a Lehmer code, each picking one of the cards left (half the cost of ``rng.shuffle``, which
    draws every card's place on its own)."""
    cards, orders, nbits, runs = _deck(removed_cards)
    x = rng.getrandbits(nbits)
    while x >= orders:
        x = rng.getrandbits(nbits)
    left = list(cards)
    deck: list[int] = []
    put, take = deck.append, left.pop
    for product, radices in runs:
        x, r = divmod(x, product)
        for n in radices:
            put(take(r % n))
            r //= n
    put(left[0])
    return deck


def random_action(deal: Deal, seat: int, rng: random.Random) -> Action:
    """A uniformly random legal action of ``seat``."""
    return rng.choice(deal.legal_actions(seat))


def play_random_deal(rules: Ruleset, players: int, rng: random.Random) -> tuple[Deal, int]:
    """Deal a random deck and play it out with random legal actions; returns the deal and the
    number of decisions taken."""
    deck = _shuffled(rules.removed_cards, rng)
    tidx = rng.randrange(len(deck) - 4 * players)
    deal = Deal.start(rules, players, deck, rng.randrange(players), trump_index=tidx)
    decisions = 0
    rnd = rng.random  # cheaper than rng.choice; uniform to within float precision
    while True:
        phase = deal.phase  # deal.to_act, inlined: this loop is the engine benchmark
        if phase is _RESPOND:
            seat = deal.responders[deal.resp_i]
        elif phase is _LEAD:
            seat = deal.leader
        elif phase is _DECLARE:
            seat = min(deal.pending)
        else:
            return deal, decisions
        legal = deal.legal_actions(seat)
        deal.apply(seat, legal[int(rnd() * len(legal))])
        decisions += 1


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
