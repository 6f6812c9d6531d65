"""Ratings depend only on results and the order matches ended, never on the order results
reached the store: late commits, resets between results and voided matches, on SQLite and
PostgreSQL."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from kozel.ladder.ratings import RatedMatch, Rating, Reset, Standing, rate, replay
from kozel.ladder.store import SeatResult, Store, StoreError

LADDER = "classic-2p"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Result:
    """A finished 2-player match: who sat where, who won, when it ended."""

    id: str
    bots: tuple[int, int]  # bot index by seat
    winner: int  # seat
    ended: datetime
    timeouts: int = 0


def _results(rng: random.Random, count: int, bots: int) -> list[Result]:
    out = []
    for i in range(count):
        a, b = rng.sample(range(bots), 2)
        out.append(
            Result(
                f"m{i:03d}",
                (a, b),
                rng.randrange(2),
                T0 + timedelta(seconds=i, microseconds=rng.randrange(1000)),
                rng.randrange(3),
            )
        )
    return out


def _commit(store: Store, r: Result, ids: list[int]) -> dict[int, Rating]:
    bots = [ids[x] for x in r.bots]
    store.start_match(r.id, LADDER, 2, [(0, 0, bots[0]), (1, 1, bots[1])])
    return store.finish_match(
        r.id,
        reason="MATCH_END_REASON_LIMIT",
        replay_path=f"/r/{r.id}.kzr",
        result={"winner_side": r.winner, "draw": False},
        ended_at=r.ended,
        seats=[
            SeatResult(
                seat,
                seat,
                bots[seat],
                1 if seat == r.winner else 2,
                3 * seat,
                seat == r.winner,
                r.timeouts if seat == 0 else 0,
                False,
            )
            for seat in (0, 1)
        ],
    )


def _bots(store: Store, n: int) -> list[int]:
    ids = []
    for i in range(n):
        bot = store.authenticate(store.register_bot(f"bot-{i}"))
        assert bot is not None
        store.ensure_rating(LADDER, bot.id)
        ids.append(bot.id)
    return ids


def _table(store: Store) -> list[tuple]:
    """Every figure of the standings, exactly (no rounding)."""
    return sorted(
        (s.name, s.mu, s.sigma, s.matches, s.wins, s.avg_penalty, s.timeouts, s.forfeits)
        for s in store.standings(LADDER)
    )


def _pure(results: list[Result], ids: list[int]) -> dict[int, Standing]:
    events = [
        RatedMatch(
            r.id, ((ids[r.bots[0]],), (ids[r.bots[1]],)), (1, 2) if r.winner == 0 else (2, 1)
        )
        for r in sorted(results, key=lambda r: (r.ended, r.id))
    ]
    return replay({}, events)[1]


@pytest.mark.parametrize("seed", range(4))
def test_any_commit_order_gives_the_ratings_of_the_end_order(store_url: str, seed: int) -> None:
    rng = random.Random(seed)
    results = _results(rng, 24, 5)
    shuffled = results[:]
    rng.shuffle(shuffled)
    store = Store(store_url)
    store.migrate()
    ids = _bots(store, 5)
    for r in shuffled:
        _commit(store, r, ids)
    assert store.check_consistency() == []
    expected = _pure(results, ids)
    for s in store.standings(LADDER):
        bot = ids[int(s.name.split("-")[1])]
        assert (s.mu, s.sigma) == (expected[bot].rating.mu, expected[bot].rating.sigma)
    # ... and the seat rows tell each match's change in end order, rating_seq 1, 2, 3 ...
    ordered = sorted(results, key=lambda r: (r.ended, r.id))
    detail = store.match_detail(ordered[-1].id)
    assert detail is not None and detail.ended_at is not None
    assert detail.ended_at.replace(tzinfo=UTC) == ordered[-1].ended
    store.close()


def test_a_late_result_is_rated_in_its_place_and_the_later_ones_again(tmp_path) -> None:
    results = _results(random.Random(7), 12, 3)
    in_order, late = (
        Store(f"sqlite:///{tmp_path / 'a.db'}"),
        Store(f"sqlite:///{tmp_path / 'b.db'}"),
    )
    for s in (in_order, late):
        s.migrate()
    ids_a, ids_b = _bots(in_order, 3), _bots(late, 3)
    for r in results:
        _commit(in_order, r, ids_a)
    for r in results[1:]:  # the first match's result arrives last (a store outage)
        _commit(late, r, ids_b)
    before = _table(late)
    new = _commit(late, results[0], ids_b)
    assert _table(late) == _table(in_order) != before
    assert set(new) == {ids_b[x] for x in results[0].bots}
    # the first match is rated from the starting ratings: it ended first
    first = late.match_detail(results[0].id)
    assert first is not None and all(x.mu_before == Rating().mu for x in first.seats)
    assert late.check_consistency() == []


def test_a_voided_match_leaves_the_ratings_of_a_ladder_without_it(store_url: str, tmp_path) -> None:
    results = _results(random.Random(3), 10, 3)
    store = Store(store_url)
    store.migrate()
    ids = _bots(store, 3)
    for r in results:
        _commit(store, r, ids)
    void = results[4]
    names = store.void_match(void.id, by="ops@example", reason="the host's clock jumped")
    assert sorted(names) == sorted(f"bot-{x}" for x in void.bots)
    assert store.void_match(void.id, by="ops", reason="again") == names  # idempotent
    without = Store(f"sqlite:///{tmp_path / 'without.db'}")
    without.migrate()
    ids_w = _bots(without, 3)
    for r in results:
        if r is not void:
            _commit(without, r, ids_w)
    assert _table(store) == _table(without)
    detail = store.match_detail(void.id)
    assert detail is not None and detail.status == "aborted" and detail.reason == "voided"
    assert all(x.mu_after is None for x in detail.seats)
    assert store.check_consistency() == []
    assert store.settled_ids([void.id]) == {void.id}  # recovery never commits it again
    with pytest.raises(StoreError, match="not running"):
        _commit(store, void, ids)
    with pytest.raises(StoreError, match="no match"):
        store.void_match("nope", by="ops", reason="x")
    store.close()
    without.close()


def test_a_reset_is_an_event_in_end_order(tmp_path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'k.db'}")
    store.migrate()
    ids = _bots(store, 2)
    now = datetime.now(UTC)
    early = Result("early", (0, 1), 0, now - timedelta(hours=1))
    later = Result("later", (0, 1), 0, now + timedelta(hours=1))
    _commit(store, later, ids)
    store.reset_rating(LADDER, "bot-0", by="ops")
    # bot-0 played "later" after the reset: it starts from the default rating there
    detail = store.match_detail("later")
    assert detail is not None and detail.seats[0].mu_before == Rating().mu
    _commit(store, early, ids)  # ended before the reset: rated before it, then wiped by it
    a = rate([[Rating()], [Rating()]], [1, 2])
    b = rate([[Rating()], [a[1][0]]], [1, 2])  # bot-1 carries "early" into "later"
    top = {s.name: (s.mu, s.sigma) for s in store.standings(LADDER)}
    assert top["bot-0"] == (b[0][0].mu, b[0][0].sigma)
    assert top["bot-1"] == (b[1][0].mu, b[1][0].sigma)
    assert store.check_consistency() == []
    store.close()


def test_replay_of_events_is_the_incremental_rating() -> None:
    a, b, c = 1, 2, 3
    events: list[RatedMatch | Reset] = [
        RatedMatch("x", ((a,), (b,)), (1, 2)),
        Reset(a),
        RatedMatch("y", ((a,), (c,)), (2, 1)),
    ]
    changes, final = replay({b: Standing(Rating(30.0, 5.0), 4)}, events)
    x = rate([[Rating()], [Rating(30.0, 5.0)]], [1, 2])
    y = rate([[Rating()], [Rating()]], [2, 1])
    assert changes["x"][b].seq == 5 and changes["x"][b].after == x[1][0]
    assert changes["y"][a].before == Rating() and changes["y"][a].seq == 2
    assert final[a] == Standing(y[0][0], 2) and final[c] == Standing(y[1][0], 1)
