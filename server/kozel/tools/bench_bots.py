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
        count, config = self.count, self.config
        rng = random.Random(config.seed * 1_000_003 + n)
        think = config.think_ms / 1000
        seats: dict[str, int] = {}
        delays: dict[str, float] = {}  # match id -> how long the last answer took
        perf = time.perf_counter
        last_answer = self.last_answer
        welcomed = False
        answer = rpb.PlayRequest()
        action = answer.action
        async with grpc.aio.insecure_channel(config.address, options=CHANNEL_OPTIONS) as channel:
            call = referee_pb2_grpc.RefereeServiceStub(channel).Play()
            self.calls.append(call)
            try:
                await call.write(self.hello(n, group))
                while True:
                    msg = await call.read()
                    if msg is grpc.aio.EOF:
                        break
                    count["messages"] += 1
                    which = msg.WhichOneof("message")
                    if which == "decision":
                        got = perf()
                        d = msg.decision
                        mid = d.match_id
                        before = last_answer.get(mid)
                        if before is not None:
                            self.gaps.append(got - before)
                        if think:
                            await asyncio.sleep(rng.random() * think)
                        # One answer message per stream, filled anew: grpc serializes it
                        # before write() returns, and the bots' own CPU shares the machine
                        # with the referee they measure.
                        action.match_id = mid
                        action.request_id = d.request_id
                        action.legal_index = rng.randrange(len(d.legal_actions))
                        await call.write(answer)
                        sent = perf()
                        last_answer[mid] = sent
                        delays[mid] = sent - got
                        if think:
                            self.answer_delays.append(sent - got)
                            if sent - got > think + SLACK_S:
                                count["late_answers"] += 1
                        count["decisions"] += 1
                    elif which == "event":
                        if msg.event.WhichOneof("kind") == "notice":
                            self.notice(msg.event, seats, delays, think)
                    elif which == "match_start":
                        seats[msg.match_start.match_id] = msg.match_start.seat
                    elif which == "match_end":
                        self.match_end(msg.match_end, seats, delays)
                    elif which == "rejection":
                        if msg.rejection.code == pb.ERROR_CODE_UNKNOWN_REQUEST:
                            count["stale_answers"] += 1  # answered after a timeout
                        else:
                            count["rejections"] += 1
                            self.error_details.append(f"rejected: {msg.rejection.message}")
                    elif which == "welcome":
                        welcomed = True
                        self.welcomed += 1
                        self.settled()
                if not self.quitting:
                    count["errors"] += 1
                    self.error_details.append(f"stream {n} ended by the referee")
            except grpc.aio.AioRpcError as exc:
                if not self.quitting:
                    count["errors"] += 1
                    self.error_details.append(f"stream {n}: {exc.code().name} {exc.details()}")
            except asyncio.CancelledError:
                if not self.quitting:
                    raise
            finally:
                if not welcomed:
                    self.refused += 1
                    self.settled()

    def settled(self) -> None:
        """One more stream was welcomed or refused; ready once every stream is one or other."""
        if self.welcomed + self.refused == self.total:
            self.all_settled.set()

    def notice(
        self, event: rpb.Event, seats: dict[str, int], delays: dict[str, float], think: float
    ) -> None:
        notice = event.notice
        if notice.seat != seats.get(event.match_id, -1):
            return  # about another seat: counted by that seat's bot
        if notice.kind == rpb.NOTICE_KIND_TIMEOUT:
            self.count["timeouts"] += 1
            on_time = delays.get(event.match_id, 0.0) <= think + SLACK_S
            self.count["timeouts_on_time" if on_time else "timeouts_bot_late"] += 1
        elif notice.kind == rpb.NOTICE_KIND_FORFEIT:
            self.count["forfeits"] += 1

    def match_end(self, end: rpb.MatchEnd, seats: dict[str, int], delays: dict[str, float]) -> None:
        seat = seats.pop(end.match_id, -1)
        delays.pop(end.match_id, None)
        self.last_answer.pop(end.match_id, None)
        if seat != 0:
            return  # each match is counted once, by its seat 0
        self.count["matches"] += 1
        every = self.config.progress_every
        if every and self.count["matches"] % every == 0:
            emit("progress", matches=self.count["matches"])


def main() -> None:
    config = Config.parse(sys.argv[1])
    child_main(lambda: Bots(config).main())


if __name__ == "__main__":
    main()
