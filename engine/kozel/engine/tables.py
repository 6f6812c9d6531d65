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

# Interned actions: one object per (kind, cards), so legal lists are cheap to build.
_INTERNED: dict[ActionKind, dict[int, Action]] = {k: {} for k in ActionKind}


def action_of(kind: ActionKind, cards: int) -> Action:
    """The shared :class:`Action` object for a kind and card mask (lead, beat or discard)."""
    table = _INTERNED[kind]
    act = table.get(cards)
    if act is None:
        act = table[cards] = Action(kind, cards)
    return act


def _single_parts(kind: ActionKind) -> tuple[tuple[tuple[Action, ...], ...], ...]:
    """``parts[suit][pattern]``: one-card actions of ``kind`` for a suit's 9-bit pattern."""
    return tuple(
        tuple(tuple(action_of(kind, 1 << (9 * suit + i)) for i in range(9) if pattern >> i & 1)
              for pattern in range(512))
        for suit in range(4)
    )


_BEAT_PARTS = _single_parts(ActionKind.BEAT)
_DISCARD_PARTS = _single_parts(ActionKind.DISCARD)


def _singles(parts: tuple[tuple[tuple[Action, ...], ...], ...], mask: int) -> tuple[Action, ...]:
    return (parts[0][mask & 0x1FF] + parts[1][mask >> 9 & 0x1FF]
            + parts[2][mask >> 18 & 0x1FF] + parts[3][mask >> 27 & 0x1FF])
_PAIRS = {n: tuple(combinations(range(n), 2)) for n in range(5)}


def subsets(hand: int, size: int) -> list[int]:
    """Every ``size``-card subset of ``hand`` in canonical (lexicographic) order."""
    bits = []
    m = hand
    while m:
        low = m & -m
        bits.append(low)
        m ^= low
    n = len(bits)
    if size == 1:
        return bits
    if size == n:
        return [hand]
    if size > n:
        return []
    if n <= 4:
        if size == 2:
            return [bits[i] | bits[j] for i, j in _PAIRS[n]]
        return [hand ^ low for low in reversed(bits)]  # n == 4, size == 3
    return [sum(combo) for combo in combinations(bits, size)]


class _LeadRows(dict):
    """``rows[pattern][cap]`` for one suit: the leads made of the suit's 9-bit ``pattern`` of
    cards (and the wild shokha when ``with_shokha``), of allowed sizes up to ``cap``, by size
    then cards. A row is built the first time it is looked up: building all 512 at once takes
    long enough (a good fraction of a second per table) to stall a server's first match."""

    __slots__ = ("base", "lead_sizes", "with_shokha")

    def __init__(self, suit: int, lead_sizes: tuple[int, ...], with_shokha: bool) -> None:
        super().__init__()
        self.base = 9 * suit
        self.lead_sizes = lead_sizes
        self.with_shokha = with_shokha

    def __missing__(self, pattern: int) -> list[tuple[Action, ...]]:
        cards = [self.base + i for i in range(9) if pattern >> i & 1]
        options: list[int] = []
        for size in range(1, 5):
            if self.with_shokha and size > 1:  # shokha (card 0) first: lexicographically smallest
                options.extend(1 | sum(1 << c for c in combo)
                               for combo in combinations(cards, size - 1))
            options.extend(sum(1 << c for c in combo) for combo in combinations(cards, size))
        row = self[pattern] = [
            tuple(action_of(ActionKind.LEAD, m) for m in options
                  if m.bit_count() in self.lead_sizes and m.bit_count() <= cap)
            for cap in range(5)
        ]
        return row


@lru_cache(maxsize=32)
def _lead_table(lead_sizes: tuple[int, ...], with_shokha: bool) -> list[_LeadRows]:
    """``table[suit][pattern][cap]``: see :class:`_LeadRows`."""
    return [_LeadRows(suit, lead_sizes, with_shokha) for suit in range(4)]


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
        self._plain = _lead_table(lead_sizes, False)
        self._wild = _lead_table(lead_sizes, True) if self.wild else self._plain

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
        """Legal leads of ``hand`` when a lead may hold at most ``cap`` cards, suit by suit
        (S C D H), then by size, then by card numbers. A wild shokha joins each suit's leads;
        alone it is a spade lead."""
        plain = self._plain
        if hand & 1 and self.wild:
            others = self._wild
            out = plain[0][hand & 0x1FF][cap]
        else:
            others = plain
            out = plain[0][hand & 0x1FF][cap]
        p = hand >> 9 & 0x1FF
        if p:
            out += others[1][p][cap]
        p = hand >> 18 & 0x1FF
        if p:
            out += others[2][p][cap]
        p = hand >> 27 & 0x1FF
        if p:
            out += others[3][p][cap]
        return out

    def responses(self, hand: int, target: int) -> tuple[Action, ...]:
        """Legal responses of ``hand`` to the cards ``target``: every beat, then every discard,
        each by card numbers."""
        k = target.bit_count()
        if k == 1:
            beats = hand & self.beaten_by[target.bit_length() - 1]
            return _singles(_BEAT_PARTS, beats) + _singles(_DISCARD_PARTS, hand)
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
def _combo_table(combos: Combos, shokha: bool) -> dict[int, Combo | None]:
    return {}


def combo_memo(rules: Ruleset) -> dict[int, Combo | None]:
    """The shared memo of :func:`combo_of` for a ruleset (hand mask to combination)."""
    return _combo_table(rules.combos, rules.shokha)


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
