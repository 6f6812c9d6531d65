"""Referee internals driven in-process (same code paths, no sockets) for cases that are hard
to stage over the network: sealed-window timeouts, replay write failures, table turnover."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import random
import threading
import time
import weakref
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from kozel.core.clock import Clock
from kozel.core.messages import EncodedRequest, Outgoing
from kozel.engine import Decision, Match, Ruleset
from kozel.server.app import start_referee
from kozel.server.config import ServerConfig
from kozel.server.errors import Refused
from kozel.server.lobby import Lobby
from kozel.server.replay.archive import FolderArchive
from kozel.server.runner import MatchRunner
from kozel.server.running import MatchStart
from kozel.server.seats import LocalLink
from kozel.server.tables import TableRequest
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc


class Recorder:
    """A bot that records every message; it answers randomly, except that it never answers a
    declaration window when ``silent_in_windows``."""

    def __init__(self, seed: int = 0, silent_in_windows: bool = False) -> None:
        self.rng = random.Random(seed)
        self.silent = silent_in_windows
        self.seen: list[rpb.PlayResponse] = []

    def choose(self, req: rpb.DecisionRequest) -> int:
        return self.rng.randrange(len(req.legal_actions))


class RecordingLink(LocalLink):
    bot: Recorder

    def send(self, msg: Outgoing) -> None:
        self.bot.seen.append(msg.message if isinstance(msg, EncodedRequest) else msg)
        if (
            msg.WhichOneof("message") == "decision"
            and self.bot.silent
            and msg.decision.kind == pb.DECISION_KIND_DECLARE
        ):
            return  # sits the window out
        super().send(msg)


def _seed_with_first_window(rules: Ruleset, players: int) -> tuple[int, int]:
    for seed in range(10_000):
        deal = Match(rules, players, seed).deal
        if deal.decision is Decision.DECLARE and len(deal.to_act) == 1:
            return seed, deal.to_act[0]
    raise AssertionError("no seed opens a window at once")


def test_a_timeout_in_a_sealed_window_is_told_only_to_its_seat(tmp_path: Path) -> None:
    rules = Ruleset.preset("classic")
    seed, holder = _seed_with_first_window(rules, 2)

    async def scenario():
        bots = [Recorder(s, silent_in_windows=(s == holder)) for s in range(2)]
        links = [RecordingLink(f"b{s}", bots[s]) for s in range(2)]
        runner = MatchRunner(
            rules=rules,
            players=2,
            seed=seed.to_bytes(32, "big"),
            clock=Clock(move_ms=20, bank_ms=0, max_strikes=1000),
            links=links,
            replays=FolderArchive(tmp_path),
        )
        await runner.run()
        return bots

    bots = asyncio.run(scenario())
    other = bots[1 - holder]

    def timeouts(bot: Recorder) -> list[int]:
        return [
            m.event.notice.seat
            for m in bot.seen
            if m.WhichOneof("message") == "event"
            and m.event.WhichOneof("kind") == "notice"
            and m.event.notice.kind == rpb.NOTICE_KIND_TIMEOUT
        ]

    assert timeouts(bots[holder]).count(holder) >= 1
    assert holder not in timeouts(other)
    ids = [m.decision.request_id for m in other.seen if m.WhichOneof("message") == "decision"]
    assert ids == list(range(1, len(ids) + 1)), "request ids must not reveal other seats' requests"


def test_a_replay_that_cannot_be_written_still_ends_the_match(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")

    async def scenario():
        bots = [Recorder(s) for s in range(2)]
        links = [RecordingLink(f"b{s}", bots[s]) for s in range(2)]
        runner = MatchRunner(
            rules=Ruleset.preset("classic"),
            players=2,
            seed=b"\1" * 32,
            clock=Clock(),
            links=links,
            replays=FolderArchive(blocker / "replays"),
        )
        outcome = await runner.run()
        return bots, outcome

    bots, outcome = asyncio.run(scenario())
    ends = [m.match_end for m in bots[0].seen if m.WhichOneof("message") == "match_end"]
    assert len(ends) == 1 and ends[0].replay_id == "" and outcome.replay_id == ""
    assert outcome.result.reason == pb.MATCH_END_REASON_LIMIT


def test_finished_tables_do_not_count_against_the_limit(tmp_path: Path) -> None:
    async def scenario():
        lobby = Lobby(ServerConfig(replay_dir=tmp_path, max_tables=2), {"r": Recorder})
        rules = Ruleset.preset("classic")
        for _ in range(3):  # six tables in all through a limit of two
            tables = [
                lobby.create_table(TableRequest("", rules, 2, Clock(), None, ("r", "r")))
                for _ in range(2)
            ]
            for t in tables:
                outcome = await lobby.wait_table(t.id)
                assert outcome.result.reason == pb.MATCH_END_REASON_LIMIT
        return len(list(tmp_path.glob("*.kzr")))  # noqa: ASYNC240 - once, at the end

    assert asyncio.run(scenario()) == 6


def test_the_referee_seats_only_the_house_bots_it_is_handed(tmp_path: Path) -> None:
    """House bots come from whoever builds the referee (``kozel serve``: the SDK's); the web
    pages too, and asking for them without handing them in is an error before anything
    binds."""

    async def scenario() -> tuple[str, int]:
        config = ServerConfig(replay_dir=tmp_path)
        with pytest.raises(Refused, match=r"at most 2 of \[\]"):
            Lobby(config).create_table(
                TableRequest("", Ruleset.preset("classic"), 2, Clock(), None, ("r",))
            )
        with pytest.raises(ValueError, match="start_web"):
            await start_referee(
                ServerConfig(listen="127.0.0.1:0", replay_dir=tmp_path, web_listen="127.0.0.1:0")
            )
        lobby = Lobby(config, {"r": Recorder})
        table = lobby.create_table(
            TableRequest("", Ruleset.preset("classic"), 2, Clock(), None, ("r", "r"))
        )
        outcome = await lobby.wait_table(table.id)
        house = table.house_at[0]
        assert isinstance(house, LocalLink)
        return type(house.bot).__name__, outcome.result.reason

    assert asyncio.run(scenario()) == ("Recorder", pb.MATCH_END_REASON_LIMIT)


def test_a_finished_match_is_freed_without_the_cycle_collector(tmp_path: Path) -> None:
    """A finished match (runner, engine state, replay steps) must be freed by reference
    counting: left to the cyclic collector, a loaded referee's dead matches piled up into
    full collections that stopped the event loop for a quarter of a second."""

    async def scenario() -> tuple[weakref.ref, int]:
        lobby = Lobby(ServerConfig(replay_dir=tmp_path))
        links = [LocalLink(f"b{s}", Recorder(s)) for s in range(2)]
        runner = lobby.start(MatchStart(links, Ruleset.preset("classic"), 2, Clock(), b"\2" * 32))
        task = lobby.matches[runner.match_id]
        # The engine's Match may be a compiled class, which takes no weak reference: it is
        # looked for among the objects the collector tracks, by identity, at the end.
        refs = weakref.ref(runner), id(runner.match)
        await task
        await asyncio.sleep(0)  # the done callbacks run
        assert not lobby.matches and not lobby.runners
        return refs

    gc.collect()
    gc.disable()
    try:
        runner, match_id = asyncio.run(scenario())
        assert runner() is None
        assert not [o for o in gc.get_objects() if id(o) == match_id and type(o) is Match]
    finally:
        gc.enable()


class StalledLink(LocalLink):
    """Its first request stalls the event loop from 50 ms to 250 ms after it is sent (like a
    long garbage collection), and is answered 80 ms after it was sent, from another thread
    (``during``: the answer is queued while the loop is stalled), or 5 ms after the stall
    ends (the answer was still on its way through the reader); later requests at once."""

    def __init__(self, name: str, seed: int, during: bool) -> None:
        super().__init__(name, Recorder(seed))
        self.first, self.during = True, during

    def send(self, msg: Outgoing) -> None:
        if not (self.first and msg.WhichOneof("message") == "decision"):
            super().send(msg)
            return
        self.first = False
        loop, req = self._loop, msg.decision
        reply = rpb.ActionReply(match_id=req.match_id, request_id=req.request_id, legal_index=0)

        def answer() -> None:
            self.offer(reply, loop.time())

        def stall() -> None:
            time.sleep(0.2)
            if not self.during:
                loop.call_later(0.005, answer)

        if self.during:
            threading.Timer(0.08, loop.call_soon_threadsafe, (answer,)).start()
        loop.call_later(0.05, stall)


def _stalled_match(tmp_path: Path, during: bool) -> tuple:
    async def scenario():
        links = [StalledLink(f"b{s}", s, during) for s in range(2)]
        runner = MatchRunner(
            rules=Ruleset.preset("classic"),
            players=2,
            seed=b"\3" * 32,
            clock=Clock(move_ms=100, bank_ms=0),
            links=links,
            replays=FolderArchive(tmp_path),
        )
        return await runner.run(), runner

    return asyncio.run(scenario())


@pytest.mark.parametrize("during", [True, False], ids=["queued-in-the-stall", "after-it"])
def test_a_stalled_referee_does_not_time_out_answers_that_came_in_meanwhile(
    tmp_path: Path, during: bool
) -> None:
    outcome, runner = _stalled_match(tmp_path, during)
    assert list(outcome.result.timeouts) == [0, 0]
    assert outcome.result.reason == pb.MATCH_END_REASON_LIMIT
    first_steps = runner.steps[0][:2]
    assert all(not s.timeout and s.think_ms <= 100 for s in first_steps)


def test_without_the_stall_grace_the_answer_after_the_stall_times_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control for the case above: the grace, not luck, let the late answer in."""
    import kozel.core.clock as clock_module

    monkeypatch.setattr(clock_module, "MAX_STALL_GRACE_S", 0.0)
    outcome, _ = _stalled_match(tmp_path, during=False)
    assert sum(outcome.result.timeouts) >= 1


def test_spectators_hear_the_end_of_a_match_cancelled_while_it_finishes(tmp_path: Path) -> None:
    """Regression: cancelling run() while the shielded finish writes the replay must not drop
    the spectator hub before it has announced the end."""

    async def scenario() -> bool:
        lobby = Lobby(ServerConfig(replay_dir=tmp_path))
        links = [LocalLink(f"b{s}", Recorder(s)) for s in range(2)]
        runner = lobby.start(MatchStart(links, Ruleset.preset("classic"), 2, Clock(), b"\4" * 32))
        hub = runner.spectators
        assert hub is not None
        sub = hub.subscribe(False)
        task = lobby.matches[runner.match_id]
        finishing = runner._finish

        async def slow_finish(aborted: bool):  # noqa: ANN202
            await asyncio.sleep(0.05)  # the replay write in progress when the cancel comes
            return await finishing(aborted)

        runner._finish = slow_finish  # type: ignore[method-assign]
        while not runner.match.over:
            await asyncio.sleep(0)
        await asyncio.sleep(0.01)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        while (event := await asyncio.wait_for(sub.get(), 5)) is not None:
            last = event
        return last.WhichOneof("kind") == "match_end"

    assert asyncio.run(scenario())


def test_play_streams_are_capped_and_an_ended_stream_gives_its_slot_back(tmp_path: Path) -> None:
    """``limits.max_streams``: a stream past the cap is refused at once; when a stream ends,
    however it ends, its slot is free again."""

    async def probe(stub: referee_pb2_grpc.RefereeServiceStub) -> tuple[grpc.StatusCode, str]:
        hello = rpb.PlayRequest(hello=rpb.Hello(protocol_version=99, bot_name="probe"))
        try:
            async for _ in stub.Play(iter([hello])):
                pass
        except grpc.aio.AioRpcError as exc:
            return exc.code(), exc.details() or ""
        return grpc.StatusCode.OK, ""

    async def scenario() -> tuple[list[tuple[grpc.StatusCode, str]], tuple[grpc.StatusCode, str]]:
        config = ServerConfig(
            listen="127.0.0.1:0", replay_dir=tmp_path, max_streams=2, hello_timeout_s=120
        )
        ref = await start_referee(config)
        try:
            async with grpc.aio.insecure_channel(ref.address) as channel:
                stub = referee_pb2_grpc.RefereeServiceStub(channel)
                quiet = asyncio.Event()

                async def wait_in_queue(i: int) -> AsyncIterator[rpb.PlayRequest]:
                    ruleset = pb.Ruleset(preset="classic")
                    yield rpb.PlayRequest(
                        hello=rpb.Hello(
                            protocol_version=1,
                            bot_name=f"holder-{i}",
                            join_queue=rpb.JoinQueue(ruleset=ruleset, players=3),
                        )
                    )
                    await quiet.wait()  # two of three: they wait in the queue

                holders = [stub.Play(wait_in_queue(i)) for i in range(2)]
                for holder in holders:  # welcomed: both streams are open and counted
                    assert (await holder.read()).HasField("welcome")
                codes = []
                deadline = time.monotonic() + 30
                codes.append(await probe(stub))
                holders[0].cancel()
                while (code := await probe(stub))[0] == grpc.StatusCode.RESOURCE_EXHAUSTED:
                    assert time.monotonic() < deadline, "the ended stream kept its slot"
                    await asyncio.sleep(0.05)
                codes.append(code)
                holders[1].cancel()
                return codes, await probe(stub)
        finally:
            await ref.stop(0)

    codes, last = asyncio.run(scenario())
    assert codes[0] == (
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "the referee serves 2 streams already (limits.max_streams); retry later",
    )
    assert codes[1][0] == grpc.StatusCode.FAILED_PRECONDITION  # admitted: the Hello is read
    assert "protocol version 99 is not supported" in codes[1][1]
    assert last[0] == grpc.StatusCode.FAILED_PRECONDITION
