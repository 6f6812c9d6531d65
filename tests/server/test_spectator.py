"""Spectators and match details over real gRPC against an in-process referee: the public
stream never shows a card before it is public (checked against the replay's full truth), the
full view shows every hand and is held back by the delay, refusals say why, a slow spectator
is dropped without slowing the match, and GetMatch describes ladder and table matches."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import grpc
import pytest

from kozel.core.clock import Clock
from kozel.core.convert import action_from_pb, ruleset_from_pb
from kozel.engine import Match
from kozel.engine.cards import codes
from kozel.engine.deal import Deal, Play
from kozel.ladder.config import LadderSpec
from kozel.ladder.store import MatchDetail, SeatDetail, Store
from kozel.sdk import HOUSE_BOTS, GreedyBot, RandomBot, play
from kozel.server.app import start_referee
from kozel.server.config import ServerConfig
from kozel.server.match_details import combine, from_store
from kozel.server.replay.archive import FolderArchive
from kozel.server.replay.file import read_replay
from kozel.server.runner import MatchRunner
from kozel.server.seats import LocalLink
from kozel.server.spectators import SpectatorHub
from kozel.v1 import game_pb2 as pb
from kozel.v1 import match_pb2 as mpb
from kozel.v1 import match_pb2_grpc
from kozel.v1 import referee_pb2 as rpb
from tests.server.rawbot import RawBot, create_table, reply, table_hello

pytestmark = pytest.mark.timeout(300)
SLOW_CLOCK = pb.TimeControl(move_ms=60_000)  # the watched bot may wait for the test


def _config(tmp_path: Path, **kw) -> ServerConfig:
    return ServerConfig(
        listen="127.0.0.1:0", replay_dir=tmp_path / "replays", data_dir=tmp_path, **kw
    )


class GatedMatch:
    """A two-seat table (house greedy + a remote bot) whose remote bot stops after a few
    decisions until ``gate`` is set, so a spectator can join mid-match."""

    def __init__(self, address: str, after: int = 4) -> None:
        self.address = address
        self.after = after
        self.gate = asyncio.Event()
        self.bot: RawBot | None = None
        self.task: asyncio.Task[None] | None = None

    async def _answer(self, bot: RawBot, req: rpb.DecisionRequest) -> list[rpb.ActionReply]:
        if len(bot.of("decision")) > self.after:
            await self.gate.wait()
        return [reply(req, bot.rng.randrange(len(req.legal_actions)))]

    async def start(self) -> str:
        """Start the match; returns its id once the bot waits at the gate."""
        table = await create_table(self.address, "classic", 2, house=["greedy"], clock=SLOW_CLOCK)
        self.bot = RawBot(
            self.address, "watched", hello=table_hello("watched", table), answer=self._answer
        )
        self.task = asyncio.create_task(self.bot.run())
        while len(self.bot.of("decision")) <= self.after:
            assert not self.task.done(), self.bot.status
            await asyncio.sleep(0.01)
        return self.bot.of("match_start")[0].match_id

    async def finished(self) -> None:
        """Wait for the bot's stream to end."""
        assert self.task is not None
        await self.task


async def _watch(
    address: str, match_id: str, full: bool = False, *, subscribed: asyncio.Event | None = None
) -> list[tuple[float, mpb.SpectatorEvent]]:
    """Every event of the stream with the wall-clock time it arrived."""
    out = []
    async with grpc.aio.insecure_channel(address) as channel:
        stub = match_pb2_grpc.MatchServiceStub(channel)
        async for resp in stub.WatchMatch(mpb.WatchMatchRequest(match_id=match_id, full=full)):
            out.append((time.time(), resp.event))
            if subscribed is not None:
                subscribed.set()
    return out


async def _get_match(address: str, match_id: str) -> mpb.GetMatchResponse:
    async with grpc.aio.insecure_channel(address) as channel:
        return await match_pb2_grpc.MatchServiceStub(channel).GetMatch(
            mpb.GetMatchRequest(match_id=match_id)
        )


async def _status(coro) -> grpc.StatusCode:
    try:
        await coro
    except grpc.aio.AioRpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


def _truth(replay) -> dict[int, tuple[list[tuple[str, ...]], Deal]]:
    """Per deal: the hands as dealt and the finished deal, re-simulated from the replay."""
    match = Match(ruleset_from_pb(replay.ruleset), replay.players, replay.seed)
    out = {}
    for d in replay.deals:
        assert not d.voided
        deal = match.deal
        dealt = [tuple(codes(h)) for h in deal.hands]
        for step in d.steps:
            match.play(step.seat, *action_from_pb(step.action))
        out[d.index] = (dealt, deal)
    return out


def _by_deal(events: list[mpb.SpectatorEvent]) -> dict[int, list[rpb.Event]]:
    out: dict[int, list[rpb.Event]] = {}
    for ev in events:
        if ev.WhichOneof("kind") == "event" and ev.event.WhichOneof("kind") != "notice":
            out.setdefault(ev.event.deal_index, []).append(ev.event)
    return out


def _each_play_comes_from_a_seat_named_to_act(events: list) -> None:
    """The stream names the seats to act (``turn``) before each answer to a lead. A lead may
    follow a sealed declaration window (at a deal's start or after a trick): its answers are
    not shown, so the seats it named stay named until the lead."""
    snap = events[0].snapshot
    expected: set[int] = set(snap.deal.to_act) if snap.HasField("deal") else set()
    answers = 0
    banks: list[int] = []
    for ev in events[1:]:
        kind = ev.WhichOneof("kind")
        if kind == "deal_start":
            assert ev.HasField("turn"), "a deal's start names its first seat to act"
        if kind == "event" and ev.event.WhichOneof("kind") == "played":
            played = ev.event.played
            if played.kind != pb.ACTION_KIND_LEAD and not played.forced:
                assert played.seat in expected, (ev, expected)
                answers += 1
        if ev.HasField("turn"):
            expected = set(ev.turn.seats)
            banks = _banks_go_down(banks, list(ev.turn.bank_ms))
        elif kind in ("deal_end", "match_end"):
            expected = set()
    assert answers >= 10
    assert len(banks) == snap.match.players


def _banks_go_down(before: list[int], now: list[int]) -> list[int]:
    """A turn's banks: one per seat, never more than they were."""
    assert now and all(b <= a for a, b in zip(before or now, now, strict=True)), (before, now)
    return now


def test_a_spectator_sees_plays_but_never_a_hidden_card(tmp_path: Path) -> None:
    async def scenario():
        ref = await start_referee(_config(tmp_path), HOUSE_BOTS)
        try:
            game = GatedMatch(ref.address)
            match_id = await game.start()
            live = await _get_match(ref.address, match_id)
            subscribed = asyncio.Event()
            watcher = asyncio.create_task(_watch(ref.address, match_id, subscribed=subscribed))
            cli = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "kozel.cli.main",
                "watch",
                match_id,
                "--server",
                ref.address,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            assert cli.stdout is not None
            first = await cli.stdout.readline()  # the CLI has its snapshot: the match waits
            await subscribed.wait()
            game.gate.set()
            events = [ev for _, ev in await watcher]
            cli_out = first + await cli.stdout.read()
            await cli.wait()
            await game.finished()
            done = await _get_match(ref.address, match_id)
        finally:
            await ref.stop()
        return match_id, live, events, cli.returncode, cli_out.decode(), done

    match_id, live, events, cli_rc, cli_out, done = asyncio.run(scenario())
    replay = read_replay(tmp_path / "replays" / f"{match_id}.kzr")
    truth = _truth(replay)

    snap = events[0].snapshot
    assert events[0].WhichOneof("kind") == "snapshot" and not snap.full and not events[0].hands
    assert [p.name for p in snap.match.seating] == ["greedy-0", "watched"]
    first_deal = snap.deal_start.deal_index
    _dealt, deal = truth[first_deal]
    assert snap.deal.hand == [] and len(snap.deal.seats) == 2
    seen = {snap.deal.trump_card}
    for t in list(snap.deal.tricks) + ([snap.deal.trick] if snap.deal.HasField("trick") else []):
        for p in t.plays:
            assert bool(p.cards) == (p.kind != pb.ACTION_KIND_DISCARD)
            seen |= set(p.cards)
    for s in snap.deal.seats:
        assert set(s.known_cards) <= {snap.deal.trump_card}  # nothing else is public in hands
    assert events[-1].WhichOneof("kind") == "match_end"
    assert events[-1].match_end.result == replay.result

    deals = _by_deal(events)
    assert sorted(deals) == list(range(first_deal, len(replay.deals)))
    for index, stream in deals.items():
        _dealt, deal = truth[index]
        plays = [e for e in deal.log if isinstance(e, Play)]  # the truth, in order
        shown = [e.played for e in stream if e.WhichOneof("kind") == "played"]
        # a spectator joining mid-deal sees the rest of it
        assert 0 < len(shown) <= len(plays) and (index > first_deal) == (len(shown) == len(plays))
        public = set(seen) if index == first_deal else {codes(1 << deal.indicator)[0]}
        for got, want in zip(shown, plays[len(plays) - len(shown) :]):
            assert (got.seat, got.kind, got.count) == (
                want.seat,
                pb.ActionKind.Value(f"ACTION_KIND_{want.kind.upper()}"),
                want.cards.bit_count(),
            )
            if want.face_up:
                assert list(got.cards) == codes(want.cards)
            else:
                assert list(got.cards) == [], "a face-down card was shown"
        for e in stream:  # no card appears before it is public
            kind = e.WhichOneof("kind")
            if kind == "played":
                public |= set(e.played.cards)
            elif kind == "declared":
                public |= set(e.declared.cards)
            elif kind == "drawn":
                assert list(e.drawn.cards) == []
            elif kind == "trick_taken":
                for p in e.trick_taken.trick.plays:
                    assert set(p.cards) <= public
                    assert bool(p.cards) == (p.kind != pb.ACTION_KIND_DISCARD)
    assert sum(1 for e in events if e.WhichOneof("kind") == "deal_end") == (
        len(replay.deals) - first_deal
    )
    _each_play_comes_from_a_seat_named_to_act(events)

    assert cli_rc == 0, cli_out
    lines = cli_out.splitlines()
    assert lines[0].startswith(f"match {match_id}: classic, 2 players")
    assert "public view" in lines[0]
    assert any(" leads " in line for line in lines)
    assert lines[-1].startswith("match over:") and match_id in lines[-1]
    assert "hands:" not in cli_out

    assert live.status == "running" and live.source == mpb.DETAILS_SOURCE_LIVE
    assert [s.bot for s in live.seats] == ["greedy-0", "watched"] and live.replay_id == ""
    assert done.status == "finished" and done.source == mpb.DETAILS_SOURCE_REPLAY
    assert done.replay_id == match_id and done.result == replay.result
    assert sorted(s.rank for s in done.seats) in ([1, 2], [1, 1])


def test_the_full_view_shows_every_hand_and_is_held_back_by_the_delay(tmp_path: Path) -> None:
    delay = 0.3

    async def scenario():
        ref = await start_referee(_config(tmp_path, spectator_delay_s=delay), HOUSE_BOTS)
        try:
            game = GatedMatch(ref.address)
            match_id = await game.start()
            watcher = asyncio.create_task(_watch(ref.address, match_id, full=True))
            hub = ref.lobby.runners[match_id].spectators
            assert hub is not None
            while not hub.subs:
                await asyncio.sleep(0.01)
            cli = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "kozel.cli.main",
                "watch",
                match_id,
                "--full",
                "--server",
                ref.address,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            assert cli.stdout is not None
            first = await cli.stdout.readline()  # both spectators are in: let the match go on
            game.gate.set()
            events = await watcher
            cli_out = (first + await cli.stdout.read()).decode()
            await game.finished()
        finally:
            await ref.stop()
        return match_id, events, cli_out

    match_id, events, cli_out = asyncio.run(scenario())
    assert cli_out.startswith(f"match {match_id}: classic")
    assert "full view, 300 ms behind" in cli_out
    assert "hands: 0 [" in cli_out and cli_out.splitlines()[-1].startswith("match over:")
    replay = read_replay(tmp_path / "replays" / f"{match_id}.kzr")
    truth = _truth(replay)
    for arrived, ev in events:  # never earlier than the delay after it happened
        happened = ev.happened_at.ToNanoseconds() / 1e9
        assert arrived >= happened + delay - 0.002, (ev.WhichOneof("kind"), arrived - happened)
    snap = events[0][1]
    assert snap.snapshot.full and snap.snapshot.delay_ms == 300
    assert len(snap.hands) == 2 and any(h.cards for h in snap.hands)
    assert [s.known_cards for s in snap.snapshot.deal.seats] == [h.cards for h in snap.hands]

    hands: list[set[str]] | None = None
    starts = 0
    for _, ev in events[1:]:
        kind = ev.WhichOneof("kind")
        if kind == "deal_start":
            dealt, _ = truth[ev.deal_start.deal_index]
            assert [tuple(h.cards) for h in ev.hands] == dealt  # the true hands as dealt
            hands = [set(h.cards) for h in ev.hands]
            starts += 1
        elif kind == "event" and hands is not None:
            e = ev.event
            after = [set(h.cards) for h in ev.hands]
            if e.WhichOneof("kind") == "played":
                assert e.played.cards, "the full view shows face-down cards too"
                assert after[e.played.seat] == hands[e.played.seat] - set(e.played.cards)
            elif e.WhichOneof("kind") == "drawn":
                assert [len(a - b) for a, b in zip(after, hands)] == list(e.drawn.counts)
            hands = after
    assert starts == len(replay.deals) - snap.snapshot.deal_start.deal_index - 1
    assert events[-1][1].WhichOneof("kind") == "match_end"


def test_refusals_name_the_reason(tmp_path: Path) -> None:
    async def scenario():
        ref = await start_referee(_config(tmp_path, max_spectators_per_match=1), HOUSE_BOTS)
        try:
            game = GatedMatch(ref.address)
            match_id = await game.start()
            async with grpc.aio.insecure_channel(ref.address) as channel:
                stub = match_pb2_grpc.MatchServiceStub(channel)
                first = stub.WatchMatch(mpb.WatchMatchRequest(match_id=match_id))
                assert (await first.read()).event.WhichOneof("kind") == "snapshot"
                codes_ = {
                    "full": await _status(
                        stub.WatchMatch(mpb.WatchMatchRequest(match_id=match_id, full=True)).read()
                    ),
                    "second": await _status(
                        stub.WatchMatch(mpb.WatchMatchRequest(match_id=match_id)).read()
                    ),
                    "unknown": await _status(
                        stub.WatchMatch(mpb.WatchMatchRequest(match_id="0123456789abcdef")).read()
                    ),
                    "details": await _status(
                        stub.GetMatch(mpb.GetMatchRequest(match_id="0123456789abcdef"))
                    ),
                    "bad id": await _status(
                        stub.GetMatch(mpb.GetMatchRequest(match_id="../etc/passwd"))
                    ),
                }
                first.cancel()
            game.gate.set()
            await game.finished()
            codes_["ended"] = await _status(_watch(ref.address, match_id))
        finally:
            await ref.stop()
        return codes_

    got = asyncio.run(scenario())
    assert got == {
        "full": grpc.StatusCode.FAILED_PRECONDITION,
        "second": grpc.StatusCode.RESOURCE_EXHAUSTED,
        "unknown": grpc.StatusCode.NOT_FOUND,
        "details": grpc.StatusCode.NOT_FOUND,
        "bad id": grpc.StatusCode.INVALID_ARGUMENT,
        "ended": grpc.StatusCode.NOT_FOUND,
    }


def test_a_slow_spectator_is_dropped_and_the_match_goes_on(tmp_path: Path) -> None:
    async def scenario():
        links = [LocalLink(f"r{s}", RandomBot(s)) for s in range(2)]
        runner = MatchRunner(
            rules=ruleset_from_pb(pb.Ruleset(preset="classic")),
            players=2,
            seed=b"\7" * 32,
            clock=Clock(),
            links=links,
            replays=FolderArchive(tmp_path),
        )
        runner.spectators = hub = SpectatorHub(runner, max_spectators=4, delay_s=0, queue_limit=8)
        slow = hub.subscribe(full=False)  # never read
        fast = hub.subscribe(full=False)
        got: list[mpb.SpectatorEvent] = []

        async def read() -> None:
            while (ev := await fast.get()) is not None:
                got.append(ev)

        reader = asyncio.create_task(read())
        outcome = await runner.run()
        await reader
        return outcome, slow, got

    outcome, slow, got = asyncio.run(scenario())
    assert outcome.result.reason == pb.MATCH_END_REASON_LIMIT
    assert "behind" in slow.dropped and not slow.queue
    kinds = [ev.WhichOneof("kind") for ev in got]
    assert kinds[0] == "snapshot" and kinds[-1] == "match_end"
    assert kinds.count("deal_end") == outcome.result.deals


def test_get_match_describes_a_rated_ladder_match(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kozel.db'}"
    store = Store(url)
    store.migrate()
    tokens = {name: store.register_bot(name) for name in ("greedy-l", "random-l")}
    spec = LadderSpec(name="spec-2p", players=2)

    async def scenario():
        ref = await start_referee(_config(tmp_path, ladders=(spec,), database_url=url), HOUSE_BOTS)
        try:
            ends = await asyncio.gather(
                *(
                    play(
                        GreedyBot if name.startswith("greedy") else RandomBot,
                        ref.address,
                        name=name,
                        token=token,
                        join_ladder="spec-2p",
                        matches=1,
                    )
                    for name, token in tokens.items()
                )
            )
            match_id = ends[0][0].match_id
            while store.match_counts("spec-2p").get("finished", 0) < 1:
                await asyncio.sleep(0.05)
            details = await _get_match(ref.address, match_id)
            cli = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "kozel.cli.main",
                "ladder",
                "--db",
                url,
                "match",
                match_id,
                "--referee",
                ref.address,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            remote_out = (await cli.communicate())[0].decode()
        finally:
            await ref.stop()
        return match_id, details, remote_out

    match_id, details, remote_out = asyncio.run(scenario())
    row = store.match_detail(match_id)
    assert row is not None and row.status == "finished" and row.ladder == "spec-2p"
    assert details.source == mpb.DETAILS_SOURCE_STORE and details.ladder == "spec-2p"
    assert details.status == "finished" and details.replay_id == match_id
    assert details.ruleset.preset == "classic" and details.time_control.move_ms == 2000
    assert row.replay_path is not None
    replay = read_replay(row.replay_path)
    assert details.result == replay.result
    assert [(s.seat, s.bot, s.side) for s in details.seats] == [
        (x.seat, x.bot, x.side) for x in row.seats
    ]
    assert {s.bot for s in details.seats} == {"greedy-l", "random-l"}
    for seat, x in zip(details.seats, row.seats):
        assert seat.rank == x.rank and seat.penalty == x.penalty
        assert seat.rating.mu_before == x.mu_before and seat.rating.mu_after == x.mu_after
        assert seat.timeouts == replay.result.timeouts[seat.seat]
    winner = next(s for s in details.seats if s.rank == 1)
    assert winner.rating.mu_after > winner.rating.mu_before
    assert not replay.result.draw and winner.side == replay.result.winner_side

    local = _run_cli(
        "ladder", "--db", url, "match", match_id, "--replay-dir", str(tmp_path / "replays")
    )
    for out in (remote_out, local):
        assert f"match {match_id} (ladder spec-2p): finished" in out
        assert "greedy-l" in out and "random-l" in out and "->" in out
    assert "no match" in _run_cli("ladder", "--db", url, "match", "0123456789abcdef")


def _run_cli(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "160"},
    )
    return proc.stdout + proc.stderr


def test_store_details_are_completed_by_the_running_match() -> None:
    seats = (
        SeatDetail(0, 0, "a", None, None, None, None, None),
        SeatDetail(1, 1, "b", None, None, None, None, None),
    )
    running = MatchDetail(
        "ab12cd34", "l", "running", 2, datetime.now(UTC), None, None, None, None, seats
    )
    live = mpb.GetMatchResponse(
        match_id="ab12cd34",
        status="running",
        table_id="",
        players=2,
        ruleset=pb.Ruleset(preset="classic"),
        time_control=pb.TimeControl(move_ms=500),
        result=pb.MatchResult(penalty_totals=[2, 4], timeouts=[0, 3]),
        seats=[mpb.MatchSeat(seat=0, timeouts=0), mpb.MatchSeat(seat=1, timeouts=3)],
    )
    got = combine(from_store(running, None), live)
    assert got.source == mpb.DETAILS_SOURCE_STORE and got.status == "running"
    assert got.ladder == "l" and got.ruleset.preset == "classic"
    assert got.time_control.move_ms == 500 and list(got.result.penalty_totals) == [2, 4]
    assert [(s.bot, s.timeouts, s.rank, s.HasField("rating")) for s in got.seats] == [
        ("a", 0, 0, False),
        ("b", 3, 0, False),
    ]

    aborted = MatchDetail(
        "ab12cd34",
        "l",
        "aborted",
        2,
        datetime.now(UTC),
        datetime.now(UTC),
        "referee restarted",
        None,
        None,
        seats,
    )
    assert from_store(aborted, None).result.reason == pb.MATCH_END_REASON_ABORTED
