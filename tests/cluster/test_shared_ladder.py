"""One ladder across three referee processes on one PostgreSQL (``referee.cluster``): bots
connected at random through a shared address are paired across referees and redirected to
their match's host; losing, restarting or killing a referee loses nothing."""

from __future__ import annotations

import itertools
import random
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import grpc
import pytest

from kozel.ladder.models import MatchSeatRow
from kozel.ladder.store import Store
from kozel.v1 import (
    ladder_pb2,
    ladder_pb2_grpc,
    match_pb2,
    match_pb2_grpc,
    referee_pb2,
    referee_pb2_grpc,
)
from tests.cluster.cluster import LADDER, Cluster, ladder_file, running
from tests.cluster.proxy import Proxy
from tests.ladder.fleet import bots, finished_in_store, stop, wait

REFEREES = ("ref-a", "ref-b", "ref-c")
CAP = 12  # meetings of one pair per hour, at most


@pytest.fixture
def cluster(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Cluster, Store, Proxy]]:
    """Three referees sharing one ladder, a proxy in front of them as the bots' one address."""
    # A busy CI machine lags every event loop: these tests are about the ladder, not about
    # admission, which would otherwise hold matches back (tests/server covers it).
    monkeypatch.setenv("KOZEL_LIMITS__ADMISSION_LAG_MS", "0")
    ladders = ladder_file(
        tmp_path / "ladders.yaml",
        ruleset={"preset": "classic", "options": {"fixed_deals": 1}},
        repeat_cap=CAP,
        repeat_cap_window_s=3600,
    )
    with running(tmp_path, pg_url, ladders, REFEREES) as started:
        yield started


def _seats(store: Store) -> dict[str, list[int]]:
    with store.transaction() as s:
        rows = s.query(MatchSeatRow.match_id, MatchSeatRow.bot_id).order_by(
            MatchSeatRow.match_id, MatchSeatRow.seat
        )
        out: dict[str, list[int]] = {}
        for match_id, bot in rows:
            out.setdefault(match_id, []).append(bot)
        return out


def _standings(address: str) -> list[tuple[str, float, int]]:
    with grpc.insecure_channel(address) as channel:
        got = ladder_pb2_grpc.LadderServiceStub(channel).GetStandings(
            ladder_pb2.GetStandingsRequest(ladder=LADDER), timeout=30
        )
    return [(s.bot, round(s.ordinal, 9), s.matches) for s in got.standings]


def _check_ladder(store: Store) -> list:
    """What every test checks: each match once, the rating chains whole, no bot in two matches
    at once (each declared one), no pair over the meeting cap."""
    assert store.check_consistency() == []
    rows = [r for r in store.matches(limit=100_000) if r.status != "running"]
    assert len({r.id for r in rows}) == len(rows)
    seats = _seats(store)
    by_bot: dict[int, list[tuple[datetime, datetime]]] = {}
    for r in rows:
        for bot in seats[r.id]:
            by_bot.setdefault(bot, []).append((_aware(r.started_at), _aware(r.ended_at)))
    for bot, spans in by_bot.items():
        spans.sort()
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start >= end, f"bot {bot} played two matches at once"
    meetings = Counter(frozenset(seats[r.id]) for r in rows)
    assert max(meetings.values()) <= CAP, meetings.most_common(3)
    return rows


def _aware(at: datetime | None) -> datetime:
    assert at is not None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


@pytest.mark.timeout(1200)  # 300 matches on a busy CI machine
def test_three_referees_play_one_ladder(cluster: tuple[Cluster, Store, Proxy]) -> None:
    c, store, proxy = cluster
    c.add_bots(store, 12, random.Random(7), address=proxy.address)
    wait(lambda: len(finished_in_store(store)) >= 300, "300 rated matches", timeout=900)
    # Every redirected bot found its seat: none forfeited (they play at once, and well).
    assert sum(x.forfeits for x in store.standings(LADDER)) == 0
    stop(c.bots.values())  # then the standings stand still while each referee is asked
    wait(lambda: not store.running_matches(), "the last matches settled", timeout=120)
    rows = _check_ladder(store)
    finished = [r for r in rows if r.status == "finished"]
    assert len(finished) >= 300
    assert {r.referee_id for r in finished} == set(REFEREES)  # every referee hosted matches
    crossed = [r for r in finished if r.redirected]
    assert len(crossed) * 3 >= len(finished), f"{len(crossed)} of {len(finished)} redirected"
    # A match assigned just before the bots stopped may still start (its seats forfeit after
    # the grace) and be rated: the referees must agree once the store stands still.
    seen: list[list[tuple[str, float, int]]] = []

    def agreed() -> bool:
        seen[:] = [_standings(c.referees[n].address) for n in REFEREES]
        return bool(seen[0]) and seen[0] == seen[1] == seen[2]

    wait(agreed, "the three referees serve the same standings", timeout=120)
    assert [bot for bot, _, _ in seen[0]] == [s.name for s in store.standings(LADDER)]
    # Any referee serves any replay, also one it did not host.
    match = finished[0]
    other = next(n for n in REFEREES if n != match.referee_id)
    with grpc.insecure_channel(c.referees[other].address) as channel:
        got = referee_pb2_grpc.RefereeServiceStub(channel).GetReplay(
            referee_pb2.GetReplayRequest(replay_id=match.id), timeout=30
        )
    assert got.replay_gz == store.replay_bytes(match.id) and got.replay_gz
    with grpc.insecure_channel(c.referees[other].address) as channel:
        chunks = ladder_pb2_grpc.LadderServiceStub(channel).DownloadReplay(
            ladder_pb2.DownloadReplayRequest(replay_id=match.id), timeout=30
        )
        assert b"".join(x.chunk for x in chunks) == got.replay_gz
        details = match_pb2_grpc.MatchServiceStub(channel).GetMatch(
            match_pb2.GetMatchRequest(match_id=match.id), timeout=30
        )
    assert details.status == "finished" and len(details.seats) == 2


def test_two_logins_of_one_bot_on_two_referees_are_one_bot(
    cluster: tuple[Cluster, Store, Proxy],
) -> None:
    c, store, _ = cluster
    token = store.register_bot("random-twice")
    double = [
        *bots(c.referees["ref-a"].address, LADDER, {"random-twice": token}),
        *bots(c.referees["ref-b"].address, LADDER, {"random-twice": token}),
    ]
    c.bots.update({"twice-a": double[0], "twice-b": double[1]})
    c.add_bots(store, 3, random.Random(2))
    twice = store.bot_ids(["random-twice"])["random-twice"]

    def played() -> int:
        return sum(twice in bots for bots in _seats(store).values())

    wait(lambda: played() >= 15, "15 matches of the bot logged in twice", timeout=600)
    _check_ladder(store)  # its matches never overlap: it declared one at a time


def test_a_killed_referee_loses_nothing(cluster: tuple[Cluster, Store, Proxy]) -> None:
    c, store, proxy = cluster
    c.add_bots(store, 9, random.Random(3), address=proxy.address)
    wait(lambda: len(finished_in_store(store)) >= 20, "20 rated matches", timeout=300)
    victim = max(REFEREES, key=lambda n: _running_on(store, n))
    c.referees[victim].proc.send_signal(signal.SIGKILL)
    c.referees[victim].proc.wait(30)
    proxy.backends.remove(c.referees[victim].address)
    killed = time.monotonic()
    before = len(finished_in_store(store))
    # Its bots come back through the shared address and play on the others.
    took = wait(
        lambda: len(finished_in_store(store)) >= before + 20, "20 more matches", timeout=300
    )
    assert took < 120
    # Its orphans are settled (committed from a replay the store has, or aborted).
    wait(lambda: _running_on(store, victim) == 0, "the orphans settled", timeout=120)
    assert time.monotonic() - killed < 180
    _check_ladder(store)


def test_rolling_restart_keeps_the_ladder_playing(
    cluster: tuple[Cluster, Store, Proxy],
) -> None:
    c, store, proxy = cluster
    c.add_bots(store, 9, random.Random(5), address=proxy.address)
    wait(lambda: len(finished_in_store(store)) >= 10, "10 rated matches", timeout=300)
    for name in REFEREES:
        ref = c.referees[name]
        port = int(ref.address.rsplit(":", 1)[1])
        ref.proc.send_signal(signal.SIGTERM)  # drain, then a clean stop
        assert ref.proc.wait(120) == 0
        c.start(name, port=port)  # the same referee again, on the same port
        more = len(finished_in_store(store)) + 5
        wait(_at_least(store, more), "5 more matches", timeout=300)
    rows = _check_ladder(store)
    starts = sorted(_aware(r.started_at) for r in rows)
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(starts)]
    assert max(gaps) < c.lease_s + 15, f"the ladder stopped for {max(gaps):.1f} s"
    stop(c.bots.values())  # bots still play: their last matches settle, none is left running
    wait(lambda: not store.running_matches(), "the last matches settled", timeout=120)


def test_the_schedulers_referee_is_killed_and_another_takes_over(
    cluster: tuple[Cluster, Store, Proxy],
) -> None:
    c, store, proxy = cluster
    c.add_bots(store, 6, random.Random(9), address=proxy.address)
    wait(lambda: len(finished_in_store(store)) >= 10, "10 rated matches", timeout=300)
    scheduler = store.ladder_hosts()[LADDER]
    c.referees[scheduler].proc.send_signal(signal.SIGKILL)
    c.referees[scheduler].proc.wait(30)
    proxy.backends.remove(c.referees[scheduler].address)
    wait(
        lambda: store.ladder_hosts().get(LADDER) not in (None, scheduler),
        "another referee schedules the ladder",
        timeout=60,
    )
    before = len(finished_in_store(store))
    wait(lambda: len(finished_in_store(store)) >= before + 10, "pairing resumed", timeout=300)
    _check_ladder(store)


def _at_least(store: Store, n: int) -> Callable[[], bool]:
    return lambda: len(finished_in_store(store)) >= n


def _running_on(store: Store, referee: str) -> int:
    return len(store.running_matches(referee))
