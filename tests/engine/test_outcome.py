"""The match outcome (:meth:`Match.outcome`): properties over random matches with random
forfeits under every preset, and the rule vectors of kind ``match``."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kozel.engine import PRESETS, Match, MatchOutcome, Ruleset
from kozel.engine.match import EndReason, Scoreboard, standing_ranks
from kozel.engine.vectors import compare, run

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
MATCH_VECTORS = sorted(
    p for p in VECTORS.rglob("*.json") if json.loads(p.read_text()).get("kind") == "match"
)


def _tables() -> list[tuple[str, int]]:
    """Every preset with every player count it allows."""
    out = []
    for name in sorted(PRESETS):
        rules = Ruleset.preset(name)
        for n in (2, 3, 4, 5):
            try:
                rules.check_players(n)
            except ValueError:
                continue
            out.append((name, n))
    return out


TABLES = _tables()


def play(rules: Ruleset, players: int, seed: int, forfeit_rate: float) -> Match:
    """A match played with random legal actions; before each action, with ``forfeit_rate``,
    one or two random seats forfeit together."""
    rng = random.Random(seed)
    match = Match(rules, players, seed)
    steps = 0
    while not match.over:
        steps += 1
        assert steps < 20_000, "the match does not end"
        if rng.random() < forfeit_rate:
            match.forfeit(*rng.sample(range(players), rng.choice((1, 1, 1, 2))))
            check(match.outcome(), match)
            continue
        deal = match.deal
        seat = rng.choice(deal.to_act)
        match.apply(seat, rng.choice(deal.legal_actions(seat)))
    return match


def check(o: MatchOutcome, match: Match) -> None:
    """What every outcome satisfies, playing or over."""
    n_sides = max(match.side_of) + 1
    assert o.money == match.rules.is_money
    if o.money:
        assert o.penalty_totals == () and o.chips == tuple(match.chips)
        assert len(o.chips) == match.players == n_sides  # a seat is a side
        assert sum(o.chips) + match.pot == 0, "chips are conserved"
        assert o.standing == tuple(-c for c in o.chips)
    else:
        assert o.chips == () and o.penalty_totals == tuple(match.board.totals)
        assert len(o.penalty_totals) == n_sides and min(o.penalty_totals) >= 0
        assert o.standing == o.penalty_totals
    assert o.eliminated == tuple(sorted(match.board.eliminated))
    assert set(o.forfeited) <= set(range(n_sides)) and list(o.forfeited) == sorted(o.forfeited)
    assert o.over == match.over and o.reason == match.board.reason
    assert o.winner == match.winner
    check_ranks(o.ranks, o.standing, o.forfeited)
    if not o.over:
        assert o.winner is None and not o.draw
    else:
        assert o.draw == (o.winner is None)
    if o.winner is not None and o.winner not in o.forfeited:
        # The winner has the best standing of all, alone (sides past the limit are worse).
        assert o.ranks[o.winner] == 1 and o.ranks.count(1) == 1
        assert o.winner not in o.eliminated


def check_ranks(
    ranks: tuple[int, ...], standing: tuple[int, ...], forfeited: tuple[int, ...]
) -> None:
    n = len(standing)
    assert len(ranks) == n and all(1 <= r <= n for r in ranks)
    if n:
        assert min(ranks) == 1
    for a in range(n):
        # A rank counts the sides ahead: 1 + how many are strictly better.
        ahead = [b for b in range(n) if _key(b, standing, forfeited) < _key(a, standing, forfeited)]
        assert ranks[a] == 1 + len(ahead)
        for b in range(n):
            if a in forfeited and b not in forfeited:
                assert ranks[a] > ranks[b], "forfeited sides come last"
            if a not in forfeited and b not in forfeited:
                assert (standing[a] < standing[b]) == (ranks[a] < ranks[b])
                assert (standing[a] == standing[b]) == (ranks[a] == ranks[b])


def _key(side: int, standing: tuple[int, ...], forfeited: tuple[int, ...]) -> tuple[int, int]:
    return (side in forfeited, 0 if side in forfeited else standing[side])


@pytest.mark.parametrize(("preset", "players"), TABLES, ids=str)
@given(
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    forfeit_rate=st.sampled_from([0.0, 0.002, 0.02]),
)
@settings(max_examples=8, deadline=None)
def test_the_outcome_is_consistent_during_and_after_a_match(
    preset: str, players: int, seed: int, forfeit_rate: float
) -> None:
    rules = Ruleset.preset(preset)
    match = play(rules, players, seed, forfeit_rate)
    o = match.outcome()
    check(o, match)
    assert o.over and o.reason is not None
    if o.reason == EndReason.FORFEIT:
        assert o.forfeited
    if not o.money and o.reason == EndReason.LIMIT:
        assert any(t >= rules.limit for t in o.penalty_totals)


@given(standing=st.lists(st.integers(-50, 50), min_size=0, max_size=5), data=st.data())
@settings(deadline=None)  # a busy machine is no failure
def test_standing_ranks_order_by_standing_with_forfeits_last(
    standing: list[int], data: st.DataObject
) -> None:
    forfeited = tuple(
        sorted(
            data.draw(
                st.sets(st.sampled_from(range(len(standing)))) if standing else st.just(set())
            )
        )
    )
    check_ranks(standing_ranks(standing, forfeited), tuple(standing), forfeited)


def test_standing_ranks_share_ties_and_skip() -> None:
    assert standing_ranks([4, 4, 12]) == (1, 1, 3)
    assert standing_ranks([0, 12], forfeited=[0]) == (2, 1)
    assert MatchOutcome(money=True, chips=(3, -5, 2)).ranks == (1, 3, 2)
    assert MatchOutcome(money=False, penalty_totals=(12, 2, 6)).ranks == (3, 1, 2)


def test_a_forfeit_is_in_the_outcome_and_ranks_last() -> None:
    match = Match(Ruleset.preset("classic"), 3, 7)
    match.forfeit(1)
    o = match.outcome()
    assert o.forfeited == (1,) and o.eliminated == (1,) and not o.over
    assert o.ranks[1] == 3 and o.ranks[0] == o.ranks[2] == 1
    match.forfeit(0)
    o = match.outcome()
    assert o.over and o.reason == EndReason.FORFEIT and o.winner == 2 and o.ranks == (2, 2, 1)
    assert match.clone().outcome() == o


@pytest.mark.parametrize("path", MATCH_VECTORS, ids=lambda p: p.name)
def test_the_match_vectors_hold_for_the_outcome(path: Path) -> None:
    vector = json.loads(path.read_text())
    assert compare(vector["expect"], run(vector)) == []
    rules = Ruleset.preset(vector.get("ruleset", "classic"), vector.get("options") or {})
    board = Scoreboard(rules, vector["players"])
    for deal in vector["deals"]:
        if board.over:
            break
        board.record(
            [None if s is None else s["points"] for s in deal],
            [None if s is None else s["tricks"] for s in deal],
        )
    o = board.outcome()
    assert (list(o.penalty_totals), o.winner, o.over) == (board.totals, board.winner, board.over)
    check_ranks(o.ranks, o.standing, ())
    if o.winner is not None:
        assert o.ranks[o.winner] == 1 and o.ranks.count(1) == 1
