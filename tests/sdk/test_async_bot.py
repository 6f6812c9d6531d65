"""An AsyncBot (a person's seat, a remote service) against a real referee: its decisions are
awaited on the event loop, the hooks keep coming meanwhile, and a decision the referee moved on
from (a timeout) is cancelled so the next one is asked."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import grpc

from kozel.sdk import AsyncBot, GreedyBot, play
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc
from tests.server.conftest import start_referee_process, stop_referee_process


class Slow(AsyncBot):
    """Never answers its first decision; answers the others as greedy does, after a pause."""

    def __init__(self) -> None:
        self.inner = GreedyBot()
        self.asked: list[int] = []
        self.cancelled: list[int] = []
        self.while_waiting: list[str] = []  # hooks that ran while a decision was awaited
        self.waiting = False
        self.threads: set[str] = set()

    def on_match_start(self, msg: rpb.MatchStart) -> None:
        self.inner.on_match_start(msg)

    def on_event(self, msg: rpb.Event) -> None:
        if self.waiting:
            self.while_waiting.append(msg.WhichOneof("kind") or "")

    async def decide(self, request: rpb.DecisionRequest) -> int:
        self.asked.append(request.request_id)
        self.threads.add(threading.current_thread().name)
        self.waiting = True
        try:
            if len(self.asked) == 1:
                await asyncio.Event().wait()  # a person who walked away
            await asyncio.sleep(0.001)
            choice = self.inner.choose(request)
            assert isinstance(choice, int)
            return choice
        except asyncio.CancelledError:
            self.cancelled.append(request.request_id)
            raise
        finally:
            self.waiting = False


def test_an_async_bot_is_awaited_and_a_superseded_decision_is_cancelled(tmp_path: Path) -> None:
    ref = start_referee_process(tmp_path / "replays")
    bots: list[Slow] = []

    def factory() -> Slow:
        bots.append(Slow())
        return bots[-1]

    async def main() -> list[rpb.MatchEnd]:
        ruleset = pb.Ruleset(preset="classic")
        ruleset.options.update({"fixed_deals": 1})
        clock = pb.TimeControl(move_ms=300, bank_ms=0, max_strikes=5)
        async with grpc.aio.insecure_channel(ref.address) as channel:
            table = await referee_pb2_grpc.RefereeServiceStub(channel).CreateTable(
                rpb.CreateTableRequest(
                    ruleset=ruleset, players=2, house_bots=["", "greedy"], time_control=clock
                )
            )
        return await asyncio.wait_for(
            play(factory, ref.address, name="slow", join_table=table.table_id), 60
        )

    try:
        results = asyncio.run(main())
    finally:
        stop_referee_process(ref)
    assert len(results) == 1 and results[0].result.deals == 1
    bot = bots[0]
    assert bot.cancelled == bot.asked[:1]  # the first was given up when the referee moved on
    assert len(bot.asked) > 2  # and the next ones were asked and answered
    assert "notice" in bot.while_waiting  # the timeout's notice came while it waited
    assert bot.threads == {"MainThread"}  # on the event loop, no worker thread
    assert results[0].result.timeouts[0] == 1
