"""The tournaments' SQL on SQLite and on a real PostgreSQL, without a referee: an event's
definition cannot change once stored, ratings are read once for rating seeding, a game's life
(assigned, running, finished once, given back, taken from a lost host) and its replay sealed
until its seed is over, one scheduler per event, and an event played through the store alone
ends as the same event played without one."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from kozel.ladder import tournament_store as ts
from kozel.ladder.store import SeatResult, Store, StoreError
from kozel.server import tournaments
from kozel.tournament.spec import TournamentSpec
from tests.tournament import sim

LEASE_S = 60.0


def _spec(**fields: object) -> TournamentSpec:
    body: dict[str, object] = {
        "bots": 4,
        "ruleset": {"preset": "classic", "options": {"fixed_deals": 1}},
        "stages": [{"format": "round_robin"}],
    }
    return sim.event(**{**body, **fields})


def _finish(store: Store, spec: TournamentSpec, a: ts.GameAssignment, match_id: str = "") -> bool:
    seats = tuple(p.name for p in a.seats)
    r = sim.result(spec, a.key, seats, {"b00": 1.0, "b01": 0.5})
    body = ts.result_json(r.points, r.forfeited, r.penalties, "limit")
    return ts.finish(store, a.tournament, a.key, match_id or a.match_id, body, f"/r/{a.key}.kzr")


def _poll(store: Store, referee: str) -> ts.Polled:
    return ts.poll(store, referee, "t", [], schedule=None)


def test_a_stored_definition_cannot_change(store: Store) -> None:
    spec = _spec()
    first = ts.register(store, spec, sim.SEED, spec.names, {})
    again = ts.register(store, spec, bytes(32), spec.names, {})
    assert again.seed == first.seed == sim.SEED, "the first registration's seed is kept"
    changed = _spec(stages=[{"format": "round_robin", "cycles": 2}])
    with pytest.raises(StoreError, match=r"stages\.0\.cycles: 1 then, 2 now"):
        ts.register(store, changed, sim.SEED, changed.names, {})
    assert ts.names(store) == ["t"]


def test_rating_seeding_reads_the_ladder_once(store: Store) -> None:
    ids = {}
    for name in ("top", "low"):
        bot = store.authenticate(store.register_bot(name))
        assert bot is not None
        ids[name] = bot.id
    store.start_match("m1", "main", 2, [(0, 0, ids["top"]), (1, 1, ids["low"])])
    store.finish_match(
        "m1",
        reason="limit",
        replay_path="/r/m1.kzr",
        result={},
        seats=[
            SeatResult(0, 0, ids["top"], 1, 0, True, 0, False),
            SeatResult(1, 1, ids["low"], 2, 12, False, 0, False),
        ],
    )
    bots = [{"name": "house", "house": "greedy"}, {"name": "low"}, {"name": "top"}]
    stage = {"format": "round_robin", "seeding": "rating", "rating_ladder": "main"}
    spec = _spec(bots=bots, stages=[stage])
    stored = tournaments.register(store, spec)
    assert set(stored.ratings) == {"top", "low"}, "only bots rated on the ladder"
    assert stored.ratings["top"] > stored.ratings["low"]
    view = ts.view(store, "t")
    assert view is not None
    assert view.state.stages[0].entrants == ["top", "low", "house"], "unrated bots last"


def test_a_game_is_finished_once_and_sealed_until_its_seed_is_over(store: Store) -> None:
    spec = _spec()
    ts.register(store, spec, sim.SEED, spec.names, {})
    store.register_referee("r1", [], LEASE_S)
    polled = _poll(store, "r1")
    store.register_referee("r2", [], LEASE_S)
    assert polled.scheduled and not polled.done
    assert len(polled.assignments) == 4, "round one: two pairings, both rotations of one seed"
    assert all(
        a.host_id == "r1" and {p.kind for p in a.seats} == {"house"} for a in polled.assignments
    )
    assert not _poll(store, "r2").scheduled, "one scheduler: r1's lease is live"
    by_seed: dict[bytes, list[ts.GameAssignment]] = {}
    for a in polled.assignments:
        ts.start(store, a.match_id, "r1")
        by_seed.setdefault(a.seed, []).append(a)
    (first, twin), (other, _) = by_seed.values()
    assert _finish(store, spec, first)
    assert not _finish(store, spec, first), "a result is committed once"
    assert not _finish(store, spec, twin, match_id=first.match_id), "one match, one game"
    assert first.match_id not in _poll(store, "r1").public, "sealed: its twin still plays"
    assert _finish(store, spec, twin)
    assert set(_poll(store, "r1").public) == {first.match_id, twin.match_id}
    assert ts.replays_of(store, "t") == sorted(
        [(first.key, first.match_id, f"/r/{first.key}.kzr"),
         (twin.key, twin.match_id, f"/r/{twin.key}.kzr")]
    )  # fmt: skip
    ts.give_back(store, other.match_id)
    _poll(store, "r1")  # schedules it again, on the least loaded referee
    again = {a.key: a for a in _poll(store, "r2").assignments}
    assert again[other.key].match_id != other.match_id and again[other.key].seed == other.seed


def test_games_spread_over_referees_and_a_lost_hosts_go_to_the_others(store: Store) -> None:
    spec = _spec()
    ts.register(store, spec, sim.SEED, spec.names, {})
    store.register_referee("r1", [], LEASE_S)
    store.register_referee("r2", [], LEASE_S)
    mine = _poll(store, "r1").assignments
    for a in mine:
        ts.start(store, a.match_id, "r1")
    theirs = _poll(store, "r2").assignments
    assert len(mine) == len(theirs) == 2, "the least loaded referee hosts each game"
    assert {k for _, k, _ in ts.hosted(store, "r1")} == {a.key for a in mine}
    store.release_referee("r1")  # its lease is over: as after a crash, once it lapsed
    polled = _poll(store, "r2")
    assert polled.scheduled and len(polled.assignments) == 4
    assert all(a.host_id == "r2" for a in polled.assignments)
    view = ts.view(store, "t")
    assert view is not None
    assert {k for k, g in view.games.items() if g.attempts == 1} == {a.key for a in mine}


def _split_pair(store: Store) -> tuple[dict[str, list[ts.Ticket]], list[ts.GameAssignment], str]:
    """Bots x and y wait at r2 and r3 (two slots each) and r1 schedules their pairing: the
    tickets, the games as their host reads them, and the other referee (which redirects)."""
    spec = _spec(bots=[{"name": "x"}, {"name": "y"}])
    for name in ("x", "y"):
        store.register_bot(name)
    tickets = {
        r: [ts.Ticket(f"s{n}", b.id, 2)]
        for r, n in (("r2", "x"), ("r3", "y"))
        if (b := store.bot(n)) is not None
    }
    ts.register(store, spec, sim.SEED, spec.names, {})
    for referee in ("r1", "r2", "r3"):
        store.register_referee(referee, [], LEASE_S)
    for referee, mine in tickets.items():
        ts.poll(store, referee, "t", mine, schedule=False)
    assert ts.poll(store, "r1", "t", [], schedule=True).scheduled
    host = ts.poll(store, "r2", "t", tickets["r2"], schedule=False).assignments
    other = "r3"
    if not host:
        host, other = ts.poll(store, "r3", "t", tickets["r3"], schedule=False).assignments, "r2"
    assert host
    return tickets, host, other


def test_a_redirect_is_read_even_after_its_host_started_the_game(store: Store) -> None:
    """The host starts the game (waiting for the other referee's bot) before the other polls:
    that one still reads where to send its bot. (Only assigned games were read, and the bot
    forfeited at the start timeout.)"""
    tickets, host, other = _split_pair(store)
    for a in host:
        ts.start(store, a.match_id, a.host_id)
    seen = ts.poll(store, other, "t", tickets[other], schedule=False).assignments
    assert {a.match_id for a in seen} == {a.match_id for a in host}
    plans = [p for a in seen for p in a.seats if p.referee == other]
    assert plans and all(p.ticket == tickets[other][0].id and p.ticket_pass for p in plans)


def test_a_redirected_ticket_gets_no_second_game_elsewhere(store: Store) -> None:
    """Its referee publishes the ticket again (with its slots) before it has sent the bot
    away: the ticket stays spent until that game is over, so the pairing's other game is
    not given to a bot that will be gone."""
    tickets, host, other = _split_pair(store)
    assert len(host) == 1, "one game per redirected ticket in a round"
    for _ in range(2):
        ts.poll(store, other, "t", tickets[other], schedule=False)
        ts.poll(store, "r1", "t", [], schedule=True)
    view = ts.view(store, "t")
    assert view is not None
    assert sum(g.status == "assigned" for g in view.games.values()) == 1


def test_one_scheduler_lock_per_event(store: Store) -> None:
    one, two = ts.SchedulerLock(store, "t"), ts.SchedulerLock(store, "t")
    if store.engine.dialect.name != "postgresql":
        assert one.hold() is None, "on SQLite the event's row decides"
        return
    try:
        assert one.hold() is True and two.hold() is False
        assert one.hold() is True, "held while its connection lives"
        one.release()
        assert two.hold() is True and ts.SchedulerLock(store, "other").hold() is True
    finally:
        one.release()
        two.release()


def test_an_event_played_through_the_store_ends_as_without_it(store: Store) -> None:
    spec = _spec(bots=5, stages=[{"format": "swiss", "rounds": 3}], winners=["standings"])
    strength: Mapping[str, float] = {"b00": 1.0, "b01": 0.5}
    ts.register(store, spec, sim.SEED, spec.names, {})
    store.register_referee("r1", [], LEASE_S)
    for _ in range(100):
        polled = _poll(store, "r1")
        if polled.done:
            break
        for a in polled.assignments:
            seats = tuple(p.name for p in a.seats)
            r = sim.result(spec, a.key, seats, strength)
            body = ts.result_json(r.points, r.forfeited, r.penalties, "limit")
            ts.start(store, a.match_id, "r1")
            assert ts.finish(store, "t", a.key, a.match_id, body, "")
    view = ts.view(store, "t")
    assert view is not None and view.state.done and view.stored.state == "finished"
    alone, _, _ = sim.play(spec, strength)
    assert [r.name for r in view.state.stages[0].standings] == [
        r.name for r in alone.stages[0].standings
    ]
    assert view.state.winners == alone.winners
