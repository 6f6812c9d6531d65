"""Precomputed, memoised rule tables: which cards beat which, legal leads and responses.

One :class:`Tables` exists per (trump, shokha, lead rules) combination and is shared by
every deal that uses it, so the legal-action lists of a hand are computed once and then
looked up. This is what makes random play fast enough for search.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations

from kozel.engine.actions import Action, ActionKind, Combo
from kozel.engine.cards import (
    ACES,
    RANK_OF,
    SHOKHA,
    SUIT_MASK,
    SUIT_OF,
    TENS,
    cards_in,
)
from kozel.engine.rules import Combos, Ruleset, ShokhaInLead

_MEMO_LIMIT = 1 << 18  # lead lists kept per table before the memo is cleared (bounds memory)

# Interned actions: one object per (kind, cards), so legal lists are cheap to build.
_INTERNED: dict[ActionKind, dict[int, Action]] = {k: {} for k in ActionKind}


def action_of(kind: ActionKind, cards: int) -> Action:
    """The shared :class:`Action` object for a kind and card mask (lead, beat or discard)."""
    table = _INTERNED[kind]
    act = table.get(cards)
    if act is None:
        act = table[cards] = Action(kind, cards)
    return act


_SUBSETS: dict[int, tuple[int, ...]] = {}


def subsets(hand: int, size: int) -> tuple[int, ...]:
    """Every ``size``-card subset of ``hand`` in canonical order (memoised)."""
    key = (hand << 3) | size
    hit = _SUBSETS.get(key)
    if hit is None:
        if len(_SUBSETS) >= _MEMO_LIMIT:
            _SUBSETS.clear()
        hit = _SUBSETS[key] = tuple(
            sum(1 << c for c in combo) for combo in combinations(cards_in(hand), size)
        )
    return hit


class Tables:
    """Beating relations and legal-move builders for one trump suit under one ruleset."""

    def __init__(self, shokha: bool, wild: bool, lead_sizes: tuple[int, ...], trump: int) -> None:
        self.shokha = shokha
        self.wild = wild and shokha
        self.lead_sizes = lead_sizes
        self.trump = trump
        self.trump_mask = SUIT_MASK[trump] | ((1 << SHOKHA) if shokha else 0)
        # beaten_by[d]: mask of every card that beats d.
        self.beaten_by = tuple(
            sum(1 << c for c in range(36) if self.card_beats(c, d)) for d in range(36)
        )
        self._lead_memo: dict[int, tuple[Action, ...]] = {}

    def card_beats(self, c: int, d: int) -> bool:
        """Rule 2: does card ``c`` beat card ``d``?"""
        if self.shokha and c == SHOKHA:
            return True
        if self.shokha and d == SHOKHA:
            return False
        if SUIT_OF[c] == SUIT_OF[d]:
            return RANK_OF[c] > RANK_OF[d]
        return SUIT_OF[c] == self.trump

    def set_beats(self, b: int, w: int) -> bool:
        """Rule 3: can the cards of ``b`` be paired one-to-one with ``w``, each beating its own?"""
        if b.bit_count() != w.bit_count():
            return False
        return _match(cards_in(w), 0, b, self.beaten_by)

    def leads(self, hand: int, cap: int) -> tuple[Action, ...]:
        """Legal leads of ``hand`` when a lead may hold at most ``cap`` cards: by size, then by
        card numbers."""
        key = hand | (cap << 36)
        hit = self._lead_memo.get(key)
        if hit is None:
            one_suit = self.one_suit
            hit = tuple(
                action_of(ActionKind.LEAD, m)
                for size in self.lead_sizes
                if size <= cap
                for m in subsets(hand, size)
                if one_suit(m)
            )
            if len(self._lead_memo) >= _MEMO_LIMIT:
                self._lead_memo.clear()
            self._lead_memo[key] = hit
        return hit

    def responses(self, hand: int, target: int) -> tuple[Action, ...]:
        """Legal responses of ``hand`` to the cards ``target``: every beat, then every discard,
        each by card numbers."""
        k = target.bit_count()
        if k == 1:
            beats = hand & self.beaten_by[target.bit_length() - 1]
            return tuple(
                [action_of(ActionKind.BEAT, 1 << c) for c in cards_in(beats)]
                + [action_of(ActionKind.DISCARD, 1 << c) for c in cards_in(hand)]
            )
        options = subsets(hand, k)
        ws = cards_in(target)
        beaten_by = self.beaten_by
        return tuple(
            [action_of(ActionKind.BEAT, m) for m in options if _match(ws, 0, m, beaten_by)]
            + [action_of(ActionKind.DISCARD, m) for m in options]
        )

    def one_suit(self, cards: int) -> bool:
        """True when ``cards`` are of one suit (the shokha joining any suit when wild)."""
        if self.wild and cards & 1 and cards != 1:
            cards &= ~1
        return (cards & ~0x1FF == 0 or cards & ~0x3FE00 == 0
                or cards & ~0x7FC0000 == 0 or cards & ~0xFF8000000 == 0)


def _match(ws: list[int], i: int, free: int, beaten_by: tuple[int, ...]) -> bool:
    if i == len(ws):
        return True
    options = free & beaten_by[ws[i]]
    while options:
        low = options & -options
        if _match(ws, i + 1, free ^ low, beaten_by):
            return True
        options ^= low
    return False


@lru_cache(maxsize=256)
def _tables(shokha: bool, wild: bool, lead_sizes: tuple[int, ...], trump: int) -> Tables:
    return Tables(shokha, wild, lead_sizes, trump)


def tables_for(rules: Ruleset, trump: int) -> Tables:
    """The shared tables for a ruleset and trump suit."""
    return _tables(rules.shokha, rules.shokha_in_lead == ShokhaInLead.WILD, rules.lead_sizes, trump)


@lru_cache(maxsize=64)
def _combo_table(combos: Combos, shokha: bool) -> dict[int, Combo]:
    return {}


def combo_of(hand: int, rules: Ruleset) -> Combo | None:
    """The combination a hand is under ``rules``, or None."""
    if rules.combos == Combos.NONE or hand.bit_count() != 4:
        return None
    memo = _combo_table(rules.combos, rules.shokha)
    if hand in memo:
        return memo[hand]
    result = _classify(hand, rules.combos, rules.shokha)
    memo[hand] = result  # at most C(36, 4) = 58,905 hands
    return result


def _classify(hand: int, combos: Combos, shokha: bool) -> Combo | None:
    shokha_bit = (1 << SHOKHA) if shokha else 0
    if combos == Combos.FOUR_ACES:
        return Combo.MOSCOW if hand == ACES else None
    if combos == Combos.BOTH and hand & ~(ACES | TENS | shokha_bit) == 0 and hand & ACES:
        return Combo.MOSCOW
    if any(hand & ~m == 0 for m in SUIT_MASK):
        return Combo.MOLODKA
    if combos == Combos.BOTH and hand & shokha_bit:
        rest = hand & ~shokha_bit
        if any(rest & ~m == 0 for m in SUIT_MASK):
            return Combo.MOLODKA
    return None
