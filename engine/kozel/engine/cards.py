"""Cards as small integers and sets of cards as bit masks.

A card is ``suit * 9 + rank`` where suits are S, C, D, H (0-3) and ranks run by
strength inside a suit: 6 7 8 9 J Q K T A (0-8). A set of cards is an ``int``
whose bit ``c`` is set when card ``c`` is in the set, so membership, union and
removal are single integer operations. Codes are two characters, rank then
suit: ``6S``, ``TH``, ``AD``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final

SUITS: Final = "SCDH"
RANKS: Final = "6789JQKTA"  # by strength, low to high
N_CARDS: Final = 36

SPADES, CLUBS, DIAMONDS, HEARTS = range(4)
SHOKHA: Final = 0  # the six of spades

_RANK_POINTS: Final = {"A": 11, "T": 10, "K": 4, "Q": 3, "J": 2}

CODES: Final[tuple[str, ...]] = tuple(r + s for s in SUITS for r in RANKS)
"""Card code by card number."""
CARD_OF: Final[dict[str, int]] = {code: i for i, code in enumerate(CODES)}
"""Card number by code."""
POINTS: Final[tuple[int, ...]] = tuple(_RANK_POINTS.get(code[0], 0) for code in CODES)
"""Card points by card number (the deck holds 120)."""
SUIT_OF: Final[tuple[int, ...]] = tuple(i // 9 for i in range(N_CARDS))
RANK_OF: Final[tuple[int, ...]] = tuple(i % 9 for i in range(N_CARDS))
SUIT_MASK: Final[tuple[int, ...]] = tuple(0x1FF << (9 * s) for s in range(4))
FULL_DECK: Final = (1 << N_CARDS) - 1
ACES: Final = sum(1 << (9 * s + 8) for s in range(4))
TENS: Final = sum(1 << (9 * s + 7) for s in range(4))


def bit(card: int) -> int:
    """The mask holding only ``card``."""
    return 1 << card


def parse_card(code: str) -> int:
    """Card number of a code such as ``"TH"``; raises ``KeyError`` if unknown."""
    return CARD_OF[code.upper()] if isinstance(code, str) else CARD_OF[code]


def is_card_code(code: object) -> bool:
    """True when ``code`` is one of the 36 card codes."""
    return isinstance(code, str) and code.upper() in CARD_OF


def cards_in(mask: int) -> list[int]:
    """Card numbers of a mask, ascending."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def iter_cards(mask: int) -> Iterator[int]:
    """Iterate the card numbers of a mask, ascending."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def mask_of(cards: Iterable[int]) -> int:
    """The mask of some card numbers."""
    m = 0
    for c in cards:
        m |= 1 << c
    return m


def mask_of_codes(codes: Iterable[str]) -> int:
    """The mask of some card codes; raises ``KeyError`` on an unknown code."""
    return mask_of(parse_card(code) for code in codes)


def codes(mask: int) -> list[str]:
    """Card codes of a mask in canonical order (suit S C D H, then strength)."""
    return [CODES[c] for c in iter_cards(mask)]


def count(mask: int) -> int:
    """Number of cards in a mask."""
    return mask.bit_count()


PATTERN_POINTS: Final[tuple[int, ...]] = tuple(
    sum(_RANK_POINTS.get(RANKS[r], 0) for r in range(9) if p >> r & 1) for p in range(512)
)
"""Card points of one suit's cards by their 9-bit pattern (rank ``r`` is bit ``r``)."""


HALF_POINTS: Final[list[int]] = [lo + hi for hi in PATTERN_POINTS for lo in PATTERN_POINTS]
"""Card points of two suits' cards by their 18-bit pattern (spades and clubs, or diamonds and
hearts): a mask's points in two look-ups."""


def points(mask: int) -> int:
    """Card points of a mask."""
    return HALF_POINTS[mask & 0x3FFFF] + HALF_POINTS[mask >> 18 & 0x3FFFF]


def deck_mask(removed: Iterable[str] = ()) -> int:
    """The deck as a mask, without the ``removed`` card codes."""
    return FULL_DECK & ~mask_of_codes(removed)


def submasks_of_size(mask: int, size: int) -> list[int]:
    """Every subset of ``mask`` with ``size`` cards, in canonical order."""
    out: list[int] = []
    items = cards_in(mask)

    def rec(start: int, left: int, acc: int) -> None:
        if left == 0:
            out.append(acc)
            return
        for i in range(start, len(items) - left + 1):
            rec(i + 1, left - 1, acc | (1 << items[i]))

    rec(0, size, 0)
    return out
