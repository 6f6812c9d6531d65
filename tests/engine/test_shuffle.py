"""The seeded shuffle: it follows its documented recipe exactly, is deterministic, and is uniform
enough (chi-square sanity checks on fixed seeds, so these tests are deterministic too)."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from kozel.engine import Match, Ruleset
from kozel.engine.cards import CODES
from kozel.engine.shuffle import (
    Stream,
    commitment,
    first_dealer,
    new_seed,
    seed_from,
    shuffled_deck,
    trump_index,
)

# -- an independent implementation of the recipe in shuffle.py's docstring ---------------------


class RefStream:
    def __init__(self, seed: bytes, label: str) -> None:
        self.seed, self.label, self.k, self.buf = seed, label.encode("utf-8"), 0, b""

    def next64(self) -> int:
        if not self.buf:
            self.buf = hashlib.sha256(self.seed + self.label + self.k.to_bytes(8, "big")).digest()
            self.k += 1
        x, self.buf = int.from_bytes(self.buf[:8], "big"), self.buf[8:]
        return x

    def below(self, n: int) -> int:
        while True:
            x = self.next64()
            if x < 2**64 - (2**64 % n):
                return x % n


def ref_deck(seed: bytes, deal: int, removed: tuple[str, ...] = ()) -> list[str]:
    cards = [r + s for s in "SCDH" for r in "6789JQKTA" if r + s not in removed]
    stream = RefStream(seed, f"deck/{deal}")
    for i in range(len(cards) - 1, 0, -1):
        j = stream.below(i + 1)
        cards[i], cards[j] = cards[j], cards[i]
    return cards


SEEDS = [bytes(32), bytes(range(32)), hashlib.sha256(b"kozel").digest()] + [
    i.to_bytes(32, "big") for i in (1, 2, 3, 12345, 2**255 + 7)
]


@pytest.mark.parametrize("preset", ["classic", "classic-35"])
@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: s.hex()[:8])
def test_decks_follow_the_documented_recipe(seed: bytes, preset: str) -> None:
    rules = Ruleset.preset(preset)
    for deal in range(4):
        got = [CODES[c] for c in shuffled_deck(seed, deal, rules.deck)]
        assert got == ref_deck(seed, deal, rules.removed_cards)


@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: s.hex()[:8])
def test_dealer_and_trump_card_follow_the_recipe(seed: bytes) -> None:
    for players in (2, 3, 4, 5):
        assert first_dealer(seed, players) == RefStream(seed, "dealer").below(players)
    for deal in range(4):
        for talon in (16, 19, 20, 24, 27, 28):
            assert trump_index(seed, deal, talon) == RefStream(seed, f"trump/{deal}").below(talon)


def test_stream_reads_blocks_as_64_bit_big_endian_integers() -> None:
    seed = bytes(range(32))
    stream = Stream(seed, "x")
    ref = RefStream(seed, "x")
    # 2**64 is divisible by 2**k, so below(2**k) never rejects: it shows the raw integers
    for _ in range(20):
        assert stream.below(2**63) == ref.next64() % 2**63
    block0 = hashlib.sha256(seed + b"x" + bytes(8)).digest()
    assert Stream(seed, "x").below(2**64) == int.from_bytes(block0[:8], "big")


def test_below_rejects_the_biased_top_range(monkeypatch: pytest.MonkeyPatch) -> None:
    values = iter([2**64 - 1, 2**64 - 2, 5])  # 2**64 mod 3 == 1: only 2**64-1 is rejected
    stream = Stream(bytes(32), "t")
    monkeypatch.setattr(Stream, "_next64", lambda self: next(values))
    assert stream.below(3) == (2**64 - 2) % 3
    assert stream.below(3) == 5 % 3


def test_below_range_and_errors() -> None:
    stream = Stream(bytes(32), "r")
    for n in (1, 2, 3, 7, 36):
        assert all(0 <= stream.below(n) < n for _ in range(50))
    assert all(Stream(bytes(32), "one").below(1) == 0 for _ in range(5))
    with pytest.raises(ValueError):
        stream.below(0)
    with pytest.raises(ValueError):
        stream.below(-3)


# -- seeds -----------------------------------------------------------------------------------------


def test_seed_forms_agree() -> None:
    raw = bytes(range(32))
    assert seed_from(raw) == raw
    assert seed_from(raw.hex()) == raw
    assert seed_from(raw.hex().upper()) == raw
    assert seed_from(int.from_bytes(raw, "big")) == raw
    assert seed_from(7) == (7).to_bytes(32, "big")
    assert len(new_seed()) == 32 and new_seed() != new_seed()


@pytest.mark.parametrize("bad", [b"short", bytes(33), -1, 2**256, "abc", "zz" * 32, "00" * 31])
def test_bad_seeds_are_refused(bad: object) -> None:
    with pytest.raises(ValueError):
        seed_from(bad)  # type: ignore[arg-type]


def test_commitment_is_the_sha256_of_the_seed() -> None:
    raw = bytes(range(32))
    assert commitment(raw) == hashlib.sha256(raw).hexdigest()
    assert commitment(raw) != commitment(bytes(32))


def test_match_decks_come_from_the_seed() -> None:
    rules = Ruleset.preset("classic")
    for seed in (0, 1, 99):
        raw = seed_from(seed)
        m = Match(rules, 3, seed)
        assert list(m.deal.deck) == shuffled_deck(raw, 0, rules.deck)
        assert m.dealer == first_dealer(raw, 3)


# -- determinism -----------------------------------------------------------------------------------


def test_same_inputs_same_deck_other_inputs_other_decks() -> None:
    deck = Ruleset.preset("classic").deck
    a = shuffled_deck(seed_from(1), 0, deck)
    assert a == shuffled_deck(seed_from(1), 0, deck)
    assert sorted(a) == list(range(36))
    others = [shuffled_deck(seed_from(2), 0, deck), shuffled_deck(seed_from(1), 1, deck)]
    assert all(o != a for o in others)
    decks = {tuple(shuffled_deck(seed_from(s), d, deck)) for s in range(50) for d in range(4)}
    assert len(decks) == 200


# -- uniformity sanity -----------------------------------------------------------------------------


def chi_square(counts: list[int], expected: float) -> float:
    return sum((c - expected) ** 2 / expected for c in counts)


def test_every_card_lands_in_every_position_evenly() -> None:
    n = 3600
    deck = Ruleset.preset("classic").deck
    table = [[0] * 36 for _ in range(36)]  # table[card][position]
    first: Counter[int] = Counter()
    for i in range(n):
        cards = shuffled_deck(seed_from(i // 4), i % 4, deck)
        for pos, card in enumerate(cards):
            table[card][pos] += 1
        first[cards[0]] += 1
    expected = n / 36
    # each card's position, and each position's card: 35 degrees of freedom (p = 1e-5 near 80)
    for card in range(36):
        assert chi_square(table[card], expected) < 80, f"card {CODES[card]} is not spread out"
    for pos in range(36):
        assert chi_square([table[c][pos] for c in range(36)], expected) < 80
    # the whole table: 35 * 35 = 1225 degrees of freedom, standard deviation about 50
    total = sum(chi_square(row, expected) for row in table)
    assert 1225 - 250 < total < 1225 + 250
    assert len(first) == 36


def test_first_dealer_and_trump_index_are_even() -> None:
    for players in (2, 3, 4, 5):
        counts = Counter(first_dealer(seed_from(s), players) for s in range(3000))
        assert sorted(counts) == list(range(players))
        assert chi_square([counts[p] for p in range(players)], 3000 / players) < 25
    counts = Counter(trump_index(seed_from(s), s % 7, 20) for s in range(4000))
    assert sorted(counts) == list(range(20))
    assert chi_square([counts[i] for i in range(20)], 200) < 50  # 19 degrees of freedom


def test_below_is_even_for_a_range_that_does_not_divide_two_to_the_64() -> None:
    stream = Stream(bytes(32), "even")
    counts = Counter(stream.below(7) for _ in range(14000))
    assert chi_square([counts[i] for i in range(7)], 2000) < 25  # 6 degrees of freedom
