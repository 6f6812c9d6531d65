"""``Deal.clone`` and ``Match.clone``: a copy equal to its original in every observable, that
goes its own way afterwards. Search relies on both halves: it clones a state, plays on the
clone, and expects the original untouched (and the clone to behave exactly as the original
would have).

Each example plays a random prefix of a deal or match (hypothesis draws the seed and where
to stop), clones it, then plays random continuations on the clone and on the original.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kozel.engine import Deal, Decision, Match, Ruleset, full_view, observe
from kozel.engine.players import play_random_deal
from kozel.engine.shuffle import shuffled_deck
from tests.engine.slots import DEAL_SLOTS

CONFIGS: list[tuple[str, int, dict[str, Any]]] = [
    ("classic", 2, {}),
    ("classic", 3, {}),
    ("classic", 4, {}),
    ("courtyard", 4, {}),
    ("money", 3, {}),
    ("money", 5, {"draw_mode": "fill_each"}),
    ("classic", 3, {"midtrick_interrupt": True, "discard_visibility": "open"}),
]
ALL = pytest.mark.parametrize(
    ("preset", "players", "options"),
    CONFIGS,
    ids=[f"{p}-{n}{'-' + ','.join(o) if o else ''}" for p, n, o in CONFIGS],
)
CACHES = {
    "tables",
    "_offered",
    "_offered_seat",
    "_combo_memo",
}  # shared lookup tables, not the deal's state


def state(deal: Deal) -> tuple:
    """Every slot of the deal (caches aside), containers copied."""
    out = []
    for name in DEAL_SLOTS:
        if name in CACHES:
            continue
        value = getattr(deal, name)
        if isinstance(value, (list, tuple)):
            value = tuple(value)
        elif isinstance(value, set):
            value = frozenset(value)
        elif isinstance(value, dict):
            value = tuple(sorted(value.items()))
        out.append((name, value))
    return tuple(out)


def observables(deal: Deal) -> tuple:
    """What the public API shows: decision, seats asked, legal lists, every view, the log."""
    seats = range(deal.players)
    return (
        deal.decision,
        deal.to_act,
        deal.over,
        deal.talon_left,
        deal.card_points(),
        deal.side_tricks(),
        deal.penalties(),
        tuple(deal.legal_actions(s) for s in seats),
        tuple(observe(deal, s) for s in seats),
        full_view(deal),
        tuple(deal.log),
        tuple(deal.history),
        repr(deal),
    )


def play(deal: Deal, rng: random.Random, steps: int) -> list[tuple[int, Any]]:
    """Up to ``steps`` random legal actions; returns them."""
    done: list[tuple[int, Any]] = []
    while not deal.over and len(done) < steps:
        seat = deal.to_act[rng.randrange(len(deal.to_act))]
        action = rng.choice(deal.legal_actions(seat))
        deal.apply(seat, action)
        done.append((seat, action))
    return done


def started(preset: str, players: int, options: dict, seed: int) -> Deal:
    rules = Ruleset.preset(preset, options)
    deck = shuffled_deck(seed.to_bytes(32, "big"), 0, rules.deck)
    return Deal.start(
        rules, players, deck, seed % players, trump_index=seed % (len(deck) - 4 * players)
    )


@ALL
@given(seed=st.integers(0, 2**32 - 1), stop=st.integers(0, 60), more=st.integers(1, 60))
@settings(max_examples=40, deadline=None)
def test_deal_clone_is_equal_and_independent(
    preset: str, players: int, options: dict, seed: int, stop: int, more: int
) -> None:
    rng = random.Random(seed)
    deal = started(preset, players, options, seed)
    play(deal, rng, stop)
    if rng.random() < 0.5 and not deal.over:
        deal.legal_actions(deal.to_act[0])  # a clone taken right after a legal list is asked
    clone = deal.clone()
    assert state(clone) == state(deal)
    assert observables(clone) == observables(deal)
    before = state(deal)

    moves = play(clone, random.Random(seed + 1), more)
    assert state(deal) == before, "acting on the clone changed the original"
    # The original, given the same actions, ends where the clone is.
    for seat, action in moves:
        deal.apply(seat, action)
    assert state(deal) == state(clone)
    assert observables(deal) == observables(clone)
    # And acting on the original now leaves the clone alone.
    after = state(clone)
    play(deal, random.Random(seed + 2), more)
    assert state(clone) == after, "acting on the original changed the clone"


@pytest.mark.parametrize(("preset", "players"), [("classic", 3), ("courtyard", 4)])
def test_clone_inside_a_declaration_window(preset: str, players: int) -> None:
    """The window's pending seats and answers are copied while a window is open."""
    opened = 0
    for seed in range(400):
        rng = random.Random(seed)
        deal = started(preset, players, {}, seed)
        while not deal.over and deal.decision is not Decision.DECLARE:
            play(deal, rng, 1)
        if deal.over:
            continue
        opened += 1
        before = state(deal)
        clone = deal.clone()
        seat = clone.to_act[0]
        clone.apply(seat, clone.legal_actions(seat)[-1])  # a pass
        assert state(deal) == before
        assert seat in deal.pending and seat not in clone.pending
        if opened >= 10:
            break
    assert opened >= 10, "too few declaration windows to test"


def test_clone_of_a_finished_deal() -> None:
    deal, _ = play_random_deal(Ruleset.preset("classic"), 2, random.Random(7))
    clone = deal.clone()
    assert clone.over and state(clone) == state(deal) and observables(clone) == observables(deal)


def match_state(match: Match) -> tuple:
    b = match.board
    return (
        state(match.deal),
        tuple(match.records),
        tuple(match.chips),
        match.pot,
        match.dealer,
        match.over,
        match.winner,
        tuple(b.totals),
        tuple(b.eliminated),
        b.deals,
        b.double_next,
        b.over,
        b.winner,
        b.reason,
    )


def play_match(match: Match, rng: random.Random, steps: int) -> list[tuple[int, Any]]:
    done: list[tuple[int, Any]] = []
    while not match.over and len(done) < steps:
        deal = match.deal
        seat = deal.to_act[0]
        action = rng.choice(deal.legal_actions(seat))
        match.apply(seat, action)
        done.append((seat, action))
    return done


@pytest.mark.parametrize(("preset", "players"), [("classic", 2), ("classic", 4), ("money", 3)])
@given(seed=st.integers(0, 2**32 - 1), stop=st.integers(0, 300), more=st.integers(1, 300))
@settings(max_examples=15, deadline=None)
def test_match_clone_is_equal_and_independent(
    preset: str, players: int, seed: int, stop: int, more: int
) -> None:
    rng = random.Random(seed)
    match = Match(Ruleset.preset(preset), players, seed)
    play_match(match, rng, stop)
    if rng.random() < 0.3 and not match.over:
        match.forfeit(rng.randrange(players))
    clone = match.clone()
    assert match_state(clone) == match_state(match)
    before = match_state(match)
    moves = play_match(clone, random.Random(seed + 1), more)
    assert match_state(match) == before, "acting on the clone changed the original match"
    for seat, action in moves:
        match.apply(seat, action)
    assert match_state(match) == match_state(clone)
