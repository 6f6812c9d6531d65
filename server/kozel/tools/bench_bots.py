"""Benchmark bots: one process playing many raw ``Play`` streams that answer every request
with a random legal index, at once or after a random think time.

Run by the benchmarks as ``python -m kozel.tools.bench_bots CONFIG_JSON``; it speaks the JSON
lines of :mod:`kozel.tools.bench_common` (``ready`` once every stream is welcomed or refused,
then
``start``/``stop`` windows and ``quit``). Counted per window: decisions answered, messages
received, matches finished, timeouts of the bot's own seat, rejections, stream errors, and the
gap between an answer and the next request of the same match as the bots see it.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import grpc

from kozel.core.convert import dict_to_struct
from kozel.sdk.client import PROTOCOL_VERSION
from kozel.tools.bench_common import CHANNEL_OPTIONS, child_main, command_loop, emit
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc

GAP_SAMPLE = 20_000  # answer-to-next-request gaps reported per window, at most
SLACK_S = 0.005  # an answer sent this long after the think limit still counts as on time

COUNTERS = (
    "decisions",
    "messages",
    "matches",
    "forfeits",
    "timeouts",
    "timeouts_on_time",
    "timeouts_bot_late",
    "stale_answers",
    "rejections",
    "errors",
    "late_answers",
)


@dataclass
class Group:
    """Streams that queue for one ruleset and player count."""

    streams: int
    players: int
    preset: str = "classic"
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class Config:
    """What a bots process plays (given as one JSON argument)."""

    address: str
    groups: list[Group]
    think_ms: float = 0.0  # each answer waits a random 0..think_ms
    seed: int = 1
    progress_every: int = 0  # print a progress line every this many finished matches
    first: int = 0  # number of this process's first stream (names and seeds)
    skip_events: bool = False  # Hello.skip_events: play from the requests alone

    @classmethod
    def parse(cls, text: str) -> Config:
        raw = json.loads(text)
        raw["groups"] = [Group(**g) for g in raw["groups"]]
        return cls(**raw)


class Bots:
    """The streams of this process and their shared counters."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.count = dict.fromkeys(COUNTERS, 0)
        self.mark = dict(self.count)
        self.gaps: list[float] = []
        self.answer_delays: list[float] = []
        self.last_answer: dict[str, float] = {}  # match id -> when its last answer was sent
        self.welcomed = 0
        self.refused = 0  # streams that ended before their Welcome
        self.all_settled = asyncio.Event()
        self.quitting = False
        self.error_details: list[str] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.calls: list[Any] = []
        self.window_start = time.perf_counter()
        self.total = sum(g.streams for g in config.groups)

    async def main(self) -> None:
        n = self.config.first
        for group in self.config.groups:
            for _ in range(group.streams):
                self.tasks.append(asyncio.create_task(self.stream(n, group)))
                n += 1
                if n % 50 == 0:
                    await asyncio.sleep(0.02)  # do not open a thousand connections at once
        await self.all_settled.wait()
        emit("ready", streams=self.total, welcomed=self.welcomed, refused=self.refused)
        await command_loop({"start": self.start, "stop": self.stop, "quit": self.quit})

    async def start(self) -> dict[str, Any]:
        self.mark = dict(self.count)
        self.gaps.clear()
        self.answer_delays.clear()
        self.window_start = time.perf_counter()
        return {}

    async def stop(self) -> dict[str, Any]:
        seconds = time.perf_counter() - self.window_start
        window = {k: self.count[k] - self.mark[k] for k in COUNTERS}
        gaps = self.gaps if len(self.gaps) <= GAP_SAMPLE else random.sample(self.gaps, GAP_SAMPLE)
        return {
            "seconds": seconds,
            **window,
            "gaps": gaps,
            "max_answer_delay": max(self.answer_delays, default=0.0),
            "error_details": self.error_details[:5],
        }

    async def quit(self) -> dict[str, Any]:
        self.quitting = True
        for call in self.calls:
            call.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        return {**self.count, "error_details": self.error_details[:5]}

    def hello(self, n: int, group: Group) -> rpb.PlayRequest:
        ruleset = pb.Ruleset(preset=group.preset)
        if group.options:
            ruleset.options.CopyFrom(dict_to_struct(group.options))
        return rpb.PlayRequest(
            hello=rpb.Hello(
                protocol_version=PROTOCOL_VERSION,
                bot_name=f"bench-{n}",
                client="kozel-bench",
                join_queue=rpb.JoinQueue(ruleset=ruleset, players=group.players),
                skip_events=self.config.skip_events,
            )
        )

    async def stream(self, n: int, group: Group) -> None:
        """Play stream number ``n`` of ``group`` until the referee ends it or the process quits."""
        await BotStream(self, n, group).run()

    def settled(self) -> None:
        """One more stream was welcomed or refused; ready once every stream is one or other."""
        if self.welcomed + self.refused == self.total:
            self.all_settled.set()


class BotStream:
    """One stream of :class:`Bots`: it answers each request with a random legal index after a
    random think time, and counts what it sees in the process's shared counters."""

    def __init__(self, bots: Bots, n: int, group: Group) -> None:
        self.bots = bots
        self.n = n
        self.group = group
        self.count = bots.count
        self.rng = random.Random(bots.config.seed * 1_000_003 + n)
        self.think = bots.config.think_ms / 1000
        self.seats: dict[str, int] = {}  # match id -> this stream's seat
        self.delays: dict[str, float] = {}  # match id -> how long the last answer took
        self.welcomed = False
        # One answer message per stream, filled anew: grpc serializes it before write()
        # returns, and the bots' own CPU shares the machine with the referee they measure.
        self.answer = rpb.PlayRequest()

    async def run(self) -> None:
        """Say Hello and handle every message until the stream ends; an end the process did
        not ask for is counted as an error, a stream never welcomed as refused."""
        bots, count = self.bots, self.count
        address = bots.config.address
        async with grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS) as channel:
            call = referee_pb2_grpc.RefereeServiceStub(channel).Play()
            bots.calls.append(call)
            try:
                await call.write(bots.hello(self.n, self.group))
                while (msg := await call.read()) is not grpc.aio.EOF:
                    count["messages"] += 1
                    which = msg.WhichOneof("message")
                    if which == "decision":
                        await self.decide(call, msg.decision)
                    else:
                        self.handle(which, msg)
                if not bots.quitting:
                    count["errors"] += 1
                    bots.error_details.append(f"stream {self.n} ended by the referee")
            except grpc.aio.AioRpcError as exc:
                if not bots.quitting:
                    count["errors"] += 1
                    bots.error_details.append(f"stream {self.n}: {exc.code().name} {exc.details()}")
            except asyncio.CancelledError:
                if not bots.quitting:
                    raise
            finally:
                if not self.welcomed:
                    bots.refused += 1
                    bots.settled()

    def handle(self, which: str | None, msg: rpb.PlayResponse) -> None:
        """Count or note a message of the referee other than a request (``which`` kind)."""
        if which == "event":
            if msg.event.WhichOneof("kind") == "notice":
                self.notice(msg.event)
        elif which == "match_start":
            self.seats[msg.match_start.match_id] = msg.match_start.seat
        elif which == "match_end":
            self.match_end(msg.match_end)
        elif which == "rejection":
            if msg.rejection.code == pb.ERROR_CODE_UNKNOWN_REQUEST:
                self.count["stale_answers"] += 1  # answered after a timeout
            else:
                self.count["rejections"] += 1
                self.bots.error_details.append(f"rejected: {msg.rejection.message}")
        elif which == "welcome":
            self.welcomed = True
            self.bots.welcomed += 1
            self.bots.settled()

    async def decide(self, call: Any, d: rpb.DecisionRequest) -> None:
        """Answer a request with a random legal index after a random think time, timing the
        gap since this match's last answer and how long this answer took."""
        bots, count = self.bots, self.count
        perf = time.perf_counter
        got = perf()
        mid = d.match_id
        before = bots.last_answer.get(mid)
        if before is not None:
            bots.gaps.append(got - before)
        think = self.think
        if think:
            await asyncio.sleep(self.rng.random() * think)
        action = self.answer.action
        action.match_id = mid
        action.request_id = d.request_id
        action.legal_index = self.rng.randrange(len(d.legal_actions))
        await call.write(self.answer)
        sent = perf()
        bots.last_answer[mid] = sent
        self.delays[mid] = sent - got
        if think:
            bots.answer_delays.append(sent - got)
            if sent - got > think + SLACK_S:
                count["late_answers"] += 1
        count["decisions"] += 1

    def notice(self, event: rpb.Event) -> None:
        """Count a timeout (on time or late by this bot's own clock) or forfeit of this seat."""
        notice = event.notice
        if notice.seat != self.seats.get(event.match_id, -1):
            return  # about another seat: counted by that seat's bot
        count = self.count
        if notice.kind == rpb.NOTICE_KIND_TIMEOUT:
            count["timeouts"] += 1
            on_time = self.delays.get(event.match_id, 0.0) <= self.think + SLACK_S
            count["timeouts_on_time" if on_time else "timeouts_bot_late"] += 1
        elif notice.kind == rpb.NOTICE_KIND_FORFEIT:
            count["forfeits"] += 1

    def match_end(self, end: rpb.MatchEnd) -> None:
        """Forget the match; count it once (by its seat 0), with a progress line if asked."""
        seat = self.seats.pop(end.match_id, -1)
        self.delays.pop(end.match_id, None)
        self.bots.last_answer.pop(end.match_id, None)
        if seat != 0:
            return  # each match is counted once, by its seat 0
        count = self.count
        count["matches"] += 1
        every = self.bots.config.progress_every
        if every and count["matches"] % every == 0:
            emit("progress", matches=count["matches"])


def main() -> None:
    config = Config.parse(sys.argv[1])
    child_main(lambda: Bots(config).main())


if __name__ == "__main__":
    main()
