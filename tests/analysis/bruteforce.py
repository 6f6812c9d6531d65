"""A brute-force reference for the open-hand solver: plain minimax through the engine's own
``Deal`` (``legal_actions``, ``clone``, ``apply``), with no pruning and no move ordering.

The only shortcut is a memo of exact values by the whole state of the deal (hands, talon
position, the trick on the table, the window's answers): card points are additive, so what a
side takes from a state on does not depend on how the state was reached. A declaration window is
solved as the sealed matrix game it is: every joint answer of the holders is played through
the engine, and the window's value is the maximin over the maximizing side's joint answers,
which the reference checks equals the minimax (a saddle point; the solver relies on it).
"""

from __future__ import annotations

import itertools
import random

from kozel.engine import PASS, Action, ActionKind, Deal, Decision
from kozel.engine.cards import points
from kozel.engine.players import _shuffled


class NoSaddle(AssertionError):
    """A window whose matrix game has no pure saddle point (the solver assumes one)."""


class Brute:
    """Values for the side made of the seats in ``mine`` (points it takes from here on)."""

    def __init__(self, mine: frozenset[int]) -> None:
        self.mine = mine
        self.memo: dict[tuple[object, ...], int] = {}
        self.nodes = 0

    def taken(self, deal: Deal) -> int:
        return sum(points(deal.taken[s]) for s in self.mine)

    def after(self, deal: Deal, seat: int, action: Action) -> int:
        """What the side takes from before ``seat``'s ``action`` to the end."""
        child = deal.clone()
        before = self.taken(child)
        child.apply(seat, action)
        return self.taken(child) - before + self.value(child)

    def value(self, deal: Deal) -> int:
        self.nodes += 1
        if deal.over:
            return 0
        key = (
            tuple(deal.hands),
            deal.talon_pos,
            deal.decision,
            deal.leader,
            tuple((p.seat, p.kind, p.cards) for p in deal.trick),
            deal.trick_combo,
            deal.window_mid,
            tuple(sorted(deal.pending)),
            tuple(sorted((s, a.kind) for s, a in deal.answers.items())),
        )
        got = self.memo.get(key)
        if got is not None:
            return got
        if deal.decision is Decision.DECLARE:
            v = self.window(deal)
        else:
            seat = deal.to_act[0]
            vals = [self.after(deal, seat, a) for a in deal.legal_actions(seat)]
            v = max(vals) if seat in self.mine else min(vals)
        self.memo[key] = v
        return v

    def profile_value(self, deal: Deal, declare: frozenset[int]) -> int:
        """The value when exactly the seats in ``declare`` (of those asked) declare."""
        child = deal.clone()
        before = self.taken(child)
        while child.decision is Decision.DECLARE and child.pending:
            s = min(child.pending)
            hand = child.hands[s]
            legal = child.legal_actions(s)
            pick = legal[0] if s in declare else PASS
            assert pick.kind is ActionKind.PASS or pick.cards == hand
            child.apply(s, pick)
        return self.taken(child) - before + self.value(child)

    def window(self, deal: Deal) -> int:
        asked = sorted(deal.pending)
        ours = [s for s in asked if s in self.mine]
        theirs = [s for s in asked if s not in self.mine]
        table = {}
        for a in _subsets(ours):
            for b in _subsets(theirs):
                table[a, b] = self.profile_value(deal, a | b)
        maximin = max(min(table[a, b] for b in _subsets(theirs)) for a in _subsets(ours))
        minimax = min(max(table[a, b] for a in _subsets(ours)) for b in _subsets(theirs))
        if maximin != minimax:
            raise NoSaddle(f"window at {deal!r}: maximin {maximin} != minimax {minimax}")
        return maximin


def _subsets(seats: list[int]) -> list[frozenset[int]]:
    return [frozenset(c) for k in range(len(seats) + 1) for c in itertools.combinations(seats, k)]


def random_position(rules, players: int, rng: random.Random, cards_left: int) -> Deal | None:
    """A random deal played by random legal actions until at most ``cards_left`` cards are
    in hands and the talon, stopped at a decision (None if the deal ended first)."""
    deck = _shuffled(rules.removed_cards, rng)
    tidx = rng.randrange(len(deck) - 4 * players)
    deal = Deal.start(rules, players, deck, rng.randrange(players), trump_index=tidx)
    while not deal.over:
        left = sum(h.bit_count() for h in deal.hands) + deal.talon_left
        if left <= cards_left and rng.random() < 0.5:
            return deal
        seat = deal.to_act[0]
        deal.apply(seat, rng.choice(deal.legal_actions(seat)))
    return None
