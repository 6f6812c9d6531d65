"""The documented, language-neutral shuffle: every random choice of a match follows from its seed.

A match seed is 32 bytes (shown as 64 hex digits). Each random choice has a label, such as
``deck/3`` for the deck order of deal 3 (deals count from 0). The stream of a label is

    block(k) = SHA-256(seed || label as UTF-8 || k as 8 bytes big-endian),  k = 0, 1, 2 ...

read as consecutive unsigned 64-bit big-endian integers. ``below(n)`` takes the next integer
``x`` and rejects it while ``x >= 2**64 - (2**64 mod n)``, then answers ``x mod n``.

- ``dealer`` picks the first dealer: ``below(players)``.
- ``deck/D`` orders deal D's deck by Fisher-Yates: start from the ruleset's deck in canonical
  order (suits S C D H, ranks 6 7 8 9 J Q K T A); for ``i`` from ``len-1`` down to 1 swap
  position ``i`` with position ``below(i + 1)``. Index 0 is the top card.
- ``trump/D`` picks the shown talon card under ``random_middle``: ``below(talon size)``.

Anyone can re-derive every deck of a match from the revealed seed with this page and SHA-256.
"""

from __future__ import annotations

import hashlib
import secrets

from kozel.engine.cards import cards_in

_TWO64 = 1 << 64


def new_seed() -> bytes:
    """A fresh random 32-byte match seed."""
    return secrets.token_bytes(32)


def seed_from(value: bytes | str | int) -> bytes:
    """Normalise a seed given as bytes, 64 hex digits, or a small integer (for tests)."""
    if isinstance(value, bytes):
        if len(value) != 32:
            raise ValueError(f"a seed is 32 bytes, not {len(value)}")
        return value
    if isinstance(value, int):
        if value < 0 or value >= 1 << 256:
            raise ValueError("an integer seed must lie in 0 .. 2**256-1")
        return value.to_bytes(32, "big")
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raise ValueError(f"a seed is 64 hex digits, not {value!r}") from None
    return seed_from(raw)


def commitment(seed: bytes) -> str:
    """The SHA-256 commitment to a seed, announced before the match (hex)."""
    return hashlib.sha256(seed).hexdigest()


class Stream:
    """The deterministic integer stream of one label of one seed."""

    __slots__ = ("_prefix", "_block", "_buf", "_pos")

    def __init__(self, seed: bytes, label: str) -> None:
        self._prefix = seed + label.encode()
        self._block = 0
        self._buf = b""
        self._pos = 0

    def _next64(self) -> int:
        if self._pos >= len(self._buf):
            self._buf = hashlib.sha256(self._prefix + self._block.to_bytes(8, "big")).digest()
            self._block += 1
            self._pos = 0
        x = int.from_bytes(self._buf[self._pos : self._pos + 8], "big")
        self._pos += 8
        return x

    def below(self, n: int) -> int:
        """A uniform integer in ``0 .. n-1``."""
        if n <= 0:
            raise ValueError("below() needs n >= 1")
        limit = _TWO64 - (_TWO64 % n)
        while True:
            x = self._next64()
            if x < limit:
                return x % n


def shuffled_deck(seed: bytes, deal_index: int, deck: int) -> list[int]:
    """Deal ``deal_index``'s deck order (index 0 on top) for a deck mask."""
    cards = cards_in(deck)
    stream = Stream(seed, f"deck/{deal_index}")
    for i in range(len(cards) - 1, 0, -1):
        j = stream.below(i + 1)
        cards[i], cards[j] = cards[j], cards[i]
    return cards


def first_dealer(seed: bytes, players: int) -> int:
    """The first dealer of a match."""
    return Stream(seed, "dealer").below(players)


def trump_index(seed: bytes, deal_index: int, talon_size: int) -> int:
    """The talon index of the shown trump card under ``random_middle``."""
    return Stream(seed, f"trump/{deal_index}").below(talon_size)
