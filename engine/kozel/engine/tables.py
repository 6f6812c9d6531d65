"""Precomputed, memoised rule tables: which cards beat which, legal leads and responses.

One :class:`Tables` exists per (trump, shokha, lead rules) combination and is shared by
every deal that uses it, so the legal-action lists of a hand are computed once and then
looked up. This is what makes random play fast enough for search.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations
from typing import Final

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
_INTERNED: Final[dict[ActionKind, dict[int, Action]]] = {k: {} for k in ActionKind}


def action_of(kind: ActionKind, cards: int) -> Action:
    """The shared :class:`Action` object for a kind and card mask (lead, beat or discard)."""
    table = _INTERNED[kind]
    act = table.get(cards)
    if act is None:
        act = table[cards] = Action(kind, cards)
    return act


# The hot look-ups below index plain dicts and build a missing row in an ``except KeyError``
# branch: a dict subclass with ``__missing__`` would do the same, but CPython only
# specialises subscripts of exact dicts, and these are looked up at every decision.


def _singles_row(kind: ActionKind, base: int, pattern: int) -> tuple[Action, ...]:
    """The one-card actions of a kind for an 18-bit ``pattern`` of cards (half the deck:
    spades and clubs when ``base`` is 0, diamonds and hearts when 18), by card numbers."""
    return tuple(action_of(kind, 1 << (base + i)) for i in range(18) if pattern >> i & 1)


# ``table[pattern]``: :func:`_singles_row` of each half for beats and discards, built on
# first use; hands hold at most four cards, so a few thousand patterns ever occur.
_BEAT_LOW: Final[dict[int, tuple[Action, ...]]] = {}
_BEAT_HIGH: Final[dict[int, tuple[Action, ...]]] = {}
_DISCARD_LOW: Final[dict[int, tuple[Action, ...]]] = {}
_DISCARD_HIGH: Final[dict[int, tuple[Action, ...]]] = {}


def _single_responses(b: int, hand: int) -> tuple[Action, ...]:
    """The one-card beats ``b`` and discards of ``hand``, filling the tables' missing rows."""
    out: tuple[Action, ...] = ()
    for table, kind, base, pattern in (
        (_BEAT_LOW, ActionKind.BEAT, 0, b & 0x3FFFF),
        (_BEAT_HIGH, ActionKind.BEAT, 18, b >> 18),
        (_DISCARD_LOW, ActionKind.DISCARD, 0, hand & 0x3FFFF),
        (_DISCARD_HIGH, ActionKind.DISCARD, 18, hand >> 18),
    ):
        row = table.get(pattern)
        if row is None:
            row = table[pattern] = _singles_row(kind, base, pattern)
        out += row
    return out


_BEATS: Final = _INTERNED[ActionKind.BEAT]
_DISCARDS: Final = _INTERNED[ActionKind.DISCARD]
_PAIRS: Final = {n: tuple(combinations(range(n), 2)) for n in range(5)}


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


class _LeadRows(dict[int, list[tuple[Action, ...]]]):
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
                options.extend(
                    1 | sum(1 << c for c in combo) for combo in combinations(cards, size - 1)
                )
            options.extend(sum(1 << c for c in combo) for combo in combinations(cards, size))
        row = self[pattern] = [
            tuple(
                action_of(ActionKind.LEAD, m)
                for m in options
                if m.bit_count() in self.lead_sizes and m.bit_count() <= cap
            )
            for cap in range(5)
        ]
        return row


class _HalfRows:
    """``rows[pattern][cap]``: the leads of an 18-bit ``pattern`` of two suits' cards (spades
    and clubs, or diamonds and hearts), the lower suit's first: two suits' rows joined, so that
    a hand's leads take two lookups. For spades and clubs, ``wild_clubs`` gives the clubs' rows
    when the pattern holds the wild shokha (bit 0), which then joins the clubs' leads. ``rows``
    is a plain dict (see above); :meth:`row` fills it."""

    __slots__ = ("low", "high", "wild_clubs", "rows")

    def __init__(
        self, low: _LeadRows, high: _LeadRows, wild_clubs: _LeadRows | None = None
    ) -> None:
        self.low = low
        self.high = high
        self.wild_clubs = wild_clubs
        self.rows: dict[int, list[tuple[Action, ...]]] = {}

    def row(self, pattern: int) -> list[tuple[Action, ...]]:
        row = self.rows.get(pattern)
        if row is None:
            high = self.wild_clubs if self.wild_clubs is not None and pattern & 1 else self.high
            row = [a + b for a, b in zip(self.low[pattern & 0x1FF], high[pattern >> 9])]
            self.rows[pattern] = row
        return row


@lru_cache(maxsize=32)
def _lead_table(lead_sizes: tuple[int, ...], with_shokha: bool) -> list[_LeadRows]:
    """``table[suit][pattern][cap]``: see :class:`_LeadRows`."""
    return [_LeadRows(suit, lead_sizes, with_shokha) for suit in range(4)]


@lru_cache(maxsize=32)
def _lead_halves(lead_sizes: tuple[int, ...], wild: bool) -> tuple[_HalfRows, _HalfRows, _HalfRows]:
    """The :class:`_HalfRows` of spades and clubs, of diamonds and hearts, and of diamonds
    and hearts when the hand holds the shokha (the same as the last unless it is wild)."""
    plain = _lead_table(lead_sizes, False)
    if not wild:
        high = _HalfRows(plain[2], plain[3])
        return _HalfRows(plain[0], plain[1]), high, high
    shokha = _lead_table(lead_sizes, True)
    return (
        _HalfRows(plain[0], plain[1], shokha[1]),
        _HalfRows(plain[2], plain[3]),
        _HalfRows(shokha[2], shokha[3]),
    )


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
        self._low, self._high, self._high_wild = _lead_halves(lead_sizes, self.wild)
        self._low_rows, self._high_rows = self._low.rows, self._high.rows
        self._high_wild_rows = self._high_wild.rows

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
        return _covers(b, _hall(w, self.beaten_by))

    def leads(self, hand: int, cap: int) -> tuple[Action, ...]:
        """Legal leads of ``hand`` when a lead may hold at most ``cap`` cards, suit by suit
        (S C D H), then by size, then by card numbers. A wild shokha joins each suit's leads;
        alone it is a spade lead."""
        high = self._high_wild_rows if hand & 1 else self._high_rows
        try:
            return self._low_rows[hand & 0x3FFFF][cap] + high[hand >> 18][cap]
        except KeyError:
            half = self._high_wild if hand & 1 else self._high
            return self._low.row(hand & 0x3FFFF)[cap] + half.row(hand >> 18)[cap]

    def responses(self, hand: int, target: int) -> tuple[Action, ...]:
        """Legal responses of ``hand`` to the cards ``target``: every beat, then every discard,
        each by card numbers."""
        beaten_by = self.beaten_by
        if target & (target - 1) == 0:  # one card: the common case, from the suit tables
            b = hand & beaten_by[target.bit_length() - 1]
            try:
                return (
                    _BEAT_LOW[b & 0x3FFFF]
                    + _BEAT_HIGH[b >> 18]
                    + _DISCARD_LOW[hand & 0x3FFFF]
                    + _DISCARD_HIGH[hand >> 18]
                )
            except KeyError:
                return _single_responses(b, hand)
        k = target.bit_count()
        sets = subsets(hand, k)  # the discards; the beats are those that pass Hall's test
        if k == 2:  # Hall's condition for two cards: each is beaten by one of the pair
            low = target & -target
            b1, b2 = beaten_by[low.bit_length() - 1], beaten_by[target.bit_length() - 1]
            both = b1 | b2
            beats = [
                _BEATS.get(m) or action_of(ActionKind.BEAT, m)
                for m in sets
                if m & both == m and m & b1 and m & b2
            ]
        else:
            hall = _hall(target, beaten_by)
            union = hall[-1][0]
            beats = [
                _BEATS.get(m) or action_of(ActionKind.BEAT, m)
                for m in sets
                if m & union == m and _covers(m, hall)
            ]
        return tuple(beats + [_DISCARDS.get(m) or action_of(ActionKind.DISCARD, m) for m in sets])

    def one_suit(self, cards: int) -> bool:
        """True when ``cards`` are of one suit (the shokha joining any suit when wild)."""
        if self.wild and cards & 1 and cards != 1:
            cards &= ~1
        return (
            cards & ~0x1FF == 0
            or cards & ~0x3FE00 == 0
            or cards & ~0x7FC0000 == 0
            or cards & ~0xFF8000000 == 0
        )


def _hall(target: int, beaten_by: tuple[int, ...]) -> list[tuple[int, int]]:
    """For every non-empty subset of the cards of ``target``: the cards that beat one of
    them, and the subset's size; the whole set comes last."""
    out: list[tuple[int, int]] = []
    for w in cards_in(target):
        bw = beaten_by[w]
        out += [(u | bw, n + 1) for u, n in out]
        out.append((bw, 1))
    out.sort(key=lambda un: un[1])
    return out


def _covers(m: int, hall: list[tuple[int, int]]) -> bool:
    """Hall's condition: every set of ``n`` target cards has ``n`` cards of ``m`` beating one
    of them, so ``m`` pairs off with the target, each card beating its own (rule 3)."""
    for u, n in hall:  # noqa: SIM110 - a loop: all() over a generator is slower here
        if (m & u).bit_count() < n:
            return False
    return True


@lru_cache(maxsize=256)
def _tables(shokha: bool, wild: bool, lead_sizes: tuple[int, ...], trump: int) -> Tables:
    return Tables(shokha, wild, lead_sizes, trump)


def tables_for(rules: Ruleset, trump: int) -> Tables:
    """The shared tables for a ruleset and trump suit."""
    return _tables(rules.shokha, rules.shokha_in_lead == ShokhaInLead.WILD, rules.lead_sizes, trump)


@lru_cache(maxsize=64)
def _combo_table(combos: Combos, shokha: bool) -> dict[int, Combo]:
    """Every four-card hand that is a combination, with its combination (a few hundred hands:
    the four-card sets of one suit, with the shokha, and of the aces, tens and shokha)."""
    table: dict[int, Combo] = {}
    if combos == Combos.NONE:
        return table
    groups = [SUIT_MASK[s] | (1 << SHOKHA) for s in range(4)] + [ACES | TENS | (1 << SHOKHA)]
    for group in groups:
        for hand in subsets(group, 4):
            combo = _classify(hand, combos, shokha)
            if combo is not None:
                table[hand] = combo
    return table


def combo_memo(rules: Ruleset) -> dict[int, Combo]:
    """The shared table of :func:`combo_of` for a ruleset: each combination hand (a four-card
    mask) to its combination; a hand that is not in it is no combination."""
    return _combo_table(rules.combos, rules.shokha)


def combo_of(hand: int, rules: Ruleset) -> Combo | None:
    """The combination a hand is under ``rules``, or None."""
    return _combo_table(rules.combos, rules.shokha).get(hand)


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
