"""Pairing invariants, with hypothesis: Swiss (no repeat pairing, byes, seat balance), round
robins and gauntlets (every table once per cycle, a bot once per round), knockout brackets
(sources before use, eliminations, byes, the champion)."""

from __future__ import annotations

import itertools
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from kozel.tournament import formats, knockout, swiss
from kozel.tournament.director import run
from tests.tournament.sim import SEED, event, play

names_ = st.integers(min_value=2, max_value=18).map(lambda n: [f"b{i:02d}" for i in range(n)])


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=4, max_value=20), st.integers(min_value=0, max_value=10**6))
def test_swiss_never_repeats_and_balances_seats(n: int, salt: int) -> None:
    rounds = min(5, (n + 1) // 2)
    spec = event(bots=n, stages=[{"format": "swiss", "rounds": rounds}])
    strength = {f"b{i:02d}": ((i * 7919 + salt) % 13) / 13 for i in range(n)}
    state, results, _ = play(spec, strength)
    stage = state.stages[0]
    met: Counter[frozenset[str]] = Counter()
    byes: Counter[str] = Counter()
    opened: Counter[str] = Counter()
    for rnd in stage.rounds:
        seated = [x for p in rnd.pairings for x in p.pairing.order] + rnd.byes
        assert sorted(seated) == sorted(stage.entrants), "every bot plays or rests, once"
        byes.update(rnd.byes)
        for p in rnd.pairings:
            met[frozenset(p.pairing.order)] += 1
            opened[p.pairing.order[0]] += 1
    assert max(met.values()) == 1, "no pairing is repeated"
    assert max(byes.values(), default=0) <= 1, "no bot rests twice while others have not"
    for name in stage.entrants:
        played = sum(1 for rnd in stage.rounds for p in rnd.pairings if name in p.pairing.order)
        assert abs(2 * opened[name] - played) <= 2, f"{name} opened {opened[name]} of {played}"
    seats = Counter((name, seat) for r in results.values() for seat, name in enumerate(r.seats))
    for name in stage.entrants:
        assert seats[name, 0] == seats[name, 1], "every bot plays both seats of every seed"


def test_swiss_pairs_top_half_against_bottom_half_in_round_one() -> None:
    pairs, byes = swiss.pair_round([f"b{i}" for i in range(8)], {}, swiss.History())
    assert {frozenset(p) for p in pairs} == {
        frozenset(x) for x in [("b0", "b4"), ("b1", "b5"), ("b2", "b6"), ("b3", "b7")]
    }
    assert byes == []


def test_swiss_gives_the_bye_to_the_lowest_ranked_without_one() -> None:
    history = swiss.History(byes={"b4"})
    _, byes = swiss.pair_round([f"b{i}" for i in range(5)], {}, history)
    assert byes == ["b3"]


def test_swiss_backtracks_rather_than_repeat() -> None:
    # b0 has met everyone in its group but b3; greedy top-down would strand b0.
    history = swiss.History()
    for pair in [("b0", "b1"), ("b0", "b2"), ("b1", "b3")]:
        history.record(pair)
    score = {"b0": 1.0, "b1": 1.0, "b2": 1.0, "b3": 1.0}
    pairs, _ = swiss.pair_round(["b0", "b1", "b2", "b3"], score, history)
    assert {frozenset(p) for p in pairs} == {frozenset(("b0", "b3")), frozenset(("b1", "b2"))}


@settings(max_examples=40, deadline=None)
@given(names_, st.integers(min_value=1, max_value=3))
def test_round_robin_meets_every_pair_cycles_times(names: list[str], cycles: int) -> None:
    rounds = formats.round_robin(names, 2, cycles)
    met = Counter(frozenset(t) for rnd in rounds for t in rnd)
    assert set(met) == {frozenset(p) for p in itertools.combinations(names, 2)}
    assert set(met.values()) == {cycles}
    for rnd in rounds:
        flat = [x for t in rnd for x in t]
        assert len(flat) == len(set(flat)), "a bot plays once a round"


@given(st.integers(min_value=3, max_value=7), st.sampled_from([3, 4]))
def test_tables_cover_every_group_once(n: int, size: int) -> None:
    names = [f"b{i}" for i in range(n)]
    if n < size:
        return
    rounds = formats.tables(names, size)
    got = sorted(tuple(sorted(t)) for rnd in rounds for t in rnd)
    assert got == sorted(itertools.combinations(names, size))
    for rnd in rounds:
        flat = [x for t in rnd for x in t]
        assert len(flat) == len(set(flat))


def test_gauntlet_plays_the_challenger_against_the_field_only() -> None:
    rounds = formats.gauntlet(["a", "b", "c", "d"], ["a"], 2, 2)
    tables = [t for rnd in rounds for t in rnd]
    assert len(tables) == 6 and all("a" in t for t in tables)
    assert Counter(t.index("a") for t in tables) == {0: 3, 1: 3}  # seats mirrored per cycle


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=2, max_value=33),
    st.booleans(),
    st.booleans(),
    st.integers(min_value=0, max_value=10**6),
)
def test_brackets(n: int, double: bool, reset: bool, salt: int) -> None:
    matches = knockout.build(n, double, reset)
    seen: set[str] = set()
    for m in matches:
        for slot in (m.a, m.b):
            assert slot.kind == "seed" or slot.ref in seen, "a match draws only on earlier ones"
        seen.add(m.id)
    seeds = [f"b{i:02d}" for i in range(n)]
    decided: dict[str, str] = {}
    while True:
        resolved = knockout.resolve(matches, seeds, decided)
        ready = [r for r in resolved.values() if r.ready]
        if not ready:
            break
        for r in ready:
            assert r.a and r.b
            decided[r.match.id] = r.a if (hash((r.a, r.b, salt)) % 2) else r.b
    top = knockout.champion(matches, resolved)
    assert top in seeds
    losses = Counter(r.loser for r in resolved.values() if r.loser)
    played = [r for r in resolved.values() if r.match.id in decided]
    assert all(r.a and r.b for r in played), "byes are never played"
    if not double:
        assert len(played) == n - 1
        assert set(losses) == set(seeds) - {top} and set(losses.values()) == {1}
    else:
        assert len(played) in (2 * n - 2, 2 * n - 1)
        final = resolved["GF2"] if reset and resolved["GF2"].loser else resolved["GF"]
        # Out after two losses; without a reset the winners' champion is out after one.
        assert all(c == 2 for b, c in losses.items() if b not in (top, final.loser))
        assert final.loser
        assert losses[final.loser] in ((1, 2) if not reset else (2,))
        assert losses.get(top, 0) <= 1
    places = knockout.placings(matches, resolved, seeds)
    assert places[0] == (1, top) and sorted(b for _, b in places) == sorted(seeds)


def test_seed_order_keeps_the_best_apart() -> None:
    assert knockout.seed_order(8) == [1, 8, 4, 5, 2, 7, 3, 6]


def test_the_same_results_give_the_same_event() -> None:
    spec = event(
        bots=10,
        stages=[
            {"format": "swiss", "rounds": 4},
            {"format": "knockout", "top": 4, "elimination": "double"},
        ],
        winners=["standings", "total_score", "instant_runoff", "copeland"],
    )
    state, results, _ = play(spec, {f"b{i:02d}": i / 5 for i in range(10)})
    again = run(spec, SEED, dict(reversed(list(results.items()))))
    assert [r.as_dict() for r in again.stages[-1].standings] == [
        r.as_dict() for r in state.stages[-1].standings
    ]
    assert again.winners == state.winners and state.done
    other = run(spec, bytes(32), {})
    assert [g.seed for g in other.pending] != [g.seed for g in run(spec, SEED, {}).pending]


def test_three_and_four_at_a_table() -> None:
    three = event(players=3, bots=7, stages=[{"format": "swiss", "rounds": 3}])
    state, results, _ = play(three, {f"b{i:02d}": i / 7 for i in range(7)})
    for rnd in state.stages[0].rounds:
        assert len(rnd.byes) == 1 and all(len(p.pairing.order) == 3 for p in rnd.pairings)
    assert len({b for rnd in state.stages[0].rounds for b in rnd.byes}) == 3  # each rests once
    seats = Counter((n, s) for r in results.values() for s, n in enumerate(r.seats))
    assert all(seats[n, 0] == seats[n, 1] == seats[n, 2] for n, _ in seats)
    four = event(players=4, bots=5, stages=[{"format": "round_robin"}])
    state, results, _ = play(four)
    assert len(results) == 5 * 4  # C(5, 4) tables, four rotations each
    for r in results.values():  # two sides at four: partners score alike
        assert r.points[0] == r.points[2] and r.points[1] == r.points[3]
        assert sorted({r.points[0], r.points[1]}) in ([0.0, 1.0], [0.5])


def test_rating_and_previous_seeding_and_top() -> None:
    spec = event(
        bots=6,
        stages=[
            {"format": "round_robin", "seeding": "rating", "rating_ladder": "main"},
            {"format": "knockout", "top": 4},
        ],
    )
    ratings = {"b05": 9.0, "b02": 5.0, "b00": 1.0}
    state = run(spec, SEED, {}, ratings=ratings)
    assert state.stages[0].entrants[:3] == ["b05", "b02", "b00"]
    done, _, _ = play(spec, {f"b{i:02d}": i for i in range(6)})
    first = [r.name for r in done.stages[0].standings]
    assert done.stages[1].entrants == first[:4]


def test_a_bot_that_keeps_forfeiting_is_withdrawn_from_a_swiss() -> None:
    spec = event(bots=8, forfeits={"withdraw_after": 2}, stages=[{"format": "swiss", "rounds": 4}])
    state, _, _ = play(spec, absent={"b03"})
    assert state.withdrawn == {"b03"}
    rounds = state.stages[0].rounds
    assert any("b03" in p.pairing.order for p in rounds[0].pairings)
    assert all("b03" not in p.pairing.order for r in rounds[1:] for p in r.pairings)
    row = next(r for r in state.stages[0].standings if r.name == "b03")
    assert row.withdrawn and row.rank == 8


def test_head_to_head_and_median_buchholz_break_ties() -> None:
    from kozel.tournament.games import GameResult
    from kozel.tournament.standings import PairingOutcome, outcome, standings

    def pairing(key: str, a: str, b: str, pa: float) -> PairingOutcome:
        return outcome(key, (a, b), [GameResult(key + ".g0.t0", (a, b), (pa, 1 - pa))])

    outs = [
        pairing("p1", "x", "y", 1.0),
        pairing("p2", "y", "z", 1.0),
        pairing("p3", "z", "x", 1.0),
    ]
    rows = standings(
        ["x", "y", "z", "w"], outs, {"w": 1}, score="pairings", bye_points=1.0,
        tie_breaks=["head_to_head", "median_buchholz"],
    )  # fmt: skip
    assert [r.score for r in rows] == [1.0, 1.0, 1.0, 1.0]
    assert all(r.tie_breaks["head_to_head"] == (0 if r.name == "w" else 1) for r in rows)
    assert rows[-1].name == "w"  # no opponent: head-to-head 0 (then the seed)
