"""The open-hand solver against brute force, and against itself.

Brute force (:mod:`tests.analysis.bruteforce`) is plain minimax through the engine's own
``Deal``; the solver must give every legal action exactly its value, on random small positions
(at most ten cards in hands and talon) of every preset and table size, and on whole deals of
small decks whose knobs open declaration windows (at leads and mid-trick, auto-win and
lead-only, Moscow over Molodka), draw unevenly or fill each hand in turn. Then the solver plays
every seat of random deals by its own values and must take exactly what it predicted at the
first decision; a node budget turns values into intervals that hold the exact value.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kozel.analysis.solver import OpenHand, Unsupported
from kozel.engine import Deal, Decision, Ruleset
from kozel.engine.cards import CODES, points
from tests.analysis.bruteforce import Brute, random_position


@dataclass(frozen=True)
class Config:
    preset: str
    players: int
    cards_left: int = 10
    options: tuple[tuple[str, Any], ...] = ()

    def rules(self) -> Ruleset:
        return Ruleset.preset(self.preset, dict(self.options))

    def __str__(self) -> str:
        extra = ",".join(f"{k}={v}" for k, v in self.options if k != "removed_cards")
        return f"{self.preset}-{self.players}{'-' + extra if extra else ''}"


def _small_deck(keep: str, extra: str, players: int, **knobs: Any) -> tuple[tuple[str, Any], ...]:
    """Options leaving the suits ``keep`` and the cards ``extra``: windows become common."""
    removed = [c for c in CODES if c[1] not in keep and c not in extra.split()]
    return (("removed_cards", removed), ("players_allowed", [players]), *knobs.items())


PRESETS = [
    Config("classic", 2),
    Config("classic", 3),
    Config("classic", 4),
    Config("classic-no-shokha", 2),
    Config("classic-no-shokha", 3),
    Config("classic-no-shokha", 4),
    Config("classic-35", 3),
    Config("classic-no-combos", 2),
    Config("classic-no-combos", 3),
    Config("classic-no-combos", 4),
    Config("courtyard", 4),
    Config("balkan", 2),
    Config("balkan", 3),
    Config("balkan", 4),
]
WINDOWS = [  # whole deals of small decks: combinations in most hands
    Config("classic", 2, 12, _small_deck("S", "AC TC AD", 2, midtrick_interrupt=True)),
    Config("classic", 2, 12, _small_deck("S", "AC TC AH", 2, special_effect="lead_only")),
    Config(
        "classic-no-shokha",
        2,
        12,
        _small_deck("H", "AC TC AD", 2, beat_target="original_lead", draw_mode="fill_each"),
    ),
    Config("balkan", 2, 12, _small_deck("D", "AC TS AS", 2, lead_sizes=[1, 3])),
    Config(
        "classic",
        3,
        15,
        _small_deck(
            "S",
            "AC TC AD TD KD QD",
            3,
            midtrick_interrupt=True,
            special_effect="lead_only",
            lead_sizes=[1],
        ),
    ),
    Config(
        "classic",
        3,
        15,
        _small_deck("C", "AS TS AD TD KS QS", 3, draw_mode="fill_each", lead_sizes=[1]),
    ),
]


def _mine(deal: Deal, side: int) -> frozenset[int]:
    return frozenset(s for s in deal.active if deal.side_of[s] == side)


def _check(config: Config, seed: int) -> tuple[str, list[int]]:
    """The solver's values at a random position of ``config`` against brute force; the
    decision checked, and how many windows the search went through (at leads, mid-trick)."""
    rules = config.rules()
    rng = random.Random(seed)
    deal = None
    while deal is None:
        deal = random_position(rules, config.players, rng, config.cards_left)
    seat = deal.to_act[0]
    side = deal.side_of[seat]
    brute = Brute(_mine(deal, side))
    oh = OpenHand(deal)
    solution = oh.solve(deal, seat)
    assert solution.exact
    windows = oh.search_for(side).windows
    if deal.decision is Decision.DECLARE:
        # The window's value: the asked seat's best answer against the saddle point.
        assert max(v.low for v in solution.values) == brute.value(deal), deal
        return "window", windows
    expected = [brute.after(deal, seat, a) for a in deal.legal_actions(seat)]
    assert [v.low for v in solution.values] == expected, deal
    return str(deal.decision), windows


@pytest.mark.parametrize("config", PRESETS, ids=str)
@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32))
def test_every_action_has_its_brute_force_value(config: Config, seed: int) -> None:
    _check(config, seed)


@pytest.mark.slow
@pytest.mark.parametrize("config", WINDOWS, ids=str)
def test_windows_and_knobs_on_small_decks(config: Config) -> None:
    """Positions of each small deck (twelve at two players, four at three, whose brute force
    takes seconds); the search goes through windows (mid-trick ones where the knob is on)."""
    checked = [_check(config, seed) for seed in range(12 if config.players == 2 else 4)]
    roots = {root for root, _ in checked}
    at_lead = sum(w[0] for _, w in checked)
    mid = sum(w[1] for _, w in checked)
    assert roots & {"lead", "respond"}
    assert at_lead > 0
    assert (mid > 0) == dict(config.options).get("midtrick_interrupt", False)


def test_positions_in_a_window_are_checked() -> None:
    roots = [_check(c, seed)[0] for c in WINDOWS[:2] for seed in range(12, 30)]
    assert roots.count("window") >= 2


def _play_out(deal: Deal, for_side: int | None) -> tuple[int, int]:
    """Every seat plays its solver's best action (``for_side``: one side against the others,
    which then play what is worst for it); the value predicted at the start and the points
    taken."""
    oh = OpenHand(deal)
    seat = deal.to_act[0]
    side = deal.side_of[seat] if for_side is None else for_side
    first = max if deal.side_of[seat] == side else min
    predicted = first(v.low for v in oh.solve(deal, seat, side).values)
    before = sum(points(deal.taken[s]) for s in _mine(deal, side))
    while not deal.over:
        seat = deal.to_act[0]
        own = deal.side_of[seat] if for_side is None else for_side
        values = oh.solve(deal, seat, own).values
        assert all(v.exact for v in values)
        pick = max if own == deal.side_of[seat] else min
        best = pick(values, key=lambda v: v.low)
        deal.apply(seat, best.action)
    return predicted, sum(points(deal.taken[s]) for s in _mine(deal, side)) - before


@pytest.mark.parametrize("config", WINDOWS, ids=str)
def test_the_solver_playing_every_seat_realises_its_value(config: Config) -> None:
    rules = config.rules()
    for seed in range(4):
        rng = random.Random(seed)
        deal = Deal.start(rules, config.players, _deck(rules, rng), seed % config.players)
        two_sided = len({deal.side_of[s] for s in deal.active}) == 2
        sides = [None] if two_sided else list(range(config.players))
        for side in sides:
            predicted, taken = _play_out(deal.clone(), side)
            assert taken == predicted, (seed, side)


def _deck(rules: Ruleset, rng: random.Random) -> list[int]:
    deck = [c for c in range(36) if rules.deck >> c & 1]
    rng.shuffle(deck)
    return deck


def test_full_decks_realise_their_value_from_late_positions() -> None:
    """Every preset's full deck, from positions of at most twelve cards, at two to four
    players (three: each seat against the two others)."""
    for config in PRESETS:
        rules = config.rules()
        rng = random.Random(config.players)
        deal = None
        while deal is None:
            deal = random_position(rules, config.players, rng, 12)
        two_sided = len({deal.side_of[s] for s in deal.active}) == 2
        for side in [None] if two_sided else sorted({deal.side_of[s] for s in deal.active}):
            predicted, taken = _play_out(deal.clone(), side)
            assert taken == predicted, (config, side)


def test_a_node_budget_gives_intervals_holding_the_exact_values() -> None:
    rules = Ruleset.preset("classic")
    rng = random.Random(3)
    deal = None
    while deal is None or deal.decision is not Decision.LEAD:
        deal = random_position(rules, 2, rng, 16)
    exact = OpenHand(deal).solve(deal)
    bounded = OpenHand(deal, max_nodes=200).solve(deal)
    assert exact.exact and not bounded.exact
    for e, b in zip(exact.values, bounded.values):
        assert b.low <= e.low <= b.high
    assert bounded.nodes <= 200 + len(bounded.values)  # one over, for each action


def test_the_money_game_is_refused_with_a_reason() -> None:
    rules = Ruleset.preset("money")
    deal = Deal.start(rules, 2, _deck(rules, random.Random(1)), 0)
    with pytest.raises(Unsupported, match="money game"):
        OpenHand(deal)


def test_values_are_for_the_asked_side_and_sum_to_the_points_left() -> None:
    """Two sides: a value for one side and the other's for the same action add up to every
    card point still to be taken."""
    rules = Ruleset.preset("classic")
    rng = random.Random(5)
    deal = None
    while deal is None or deal.decision is not Decision.RESPOND:
        deal = random_position(rules, 2, rng, 10)
    oh = OpenHand(deal)
    seat = deal.to_act[0]
    mine = oh.solve(deal, seat)
    theirs = oh.solve(deal, seat, side=1 - deal.side_of[seat])
    left = 120 - sum(points(t) for t in deal.taken)
    for a, b in zip(mine.values, theirs.values):
        assert a.low + b.low == left
