"""Hostile bots over real sockets against a real ``kozel serve`` process.

Every case gets a clear status or a closed stream, the referee's memory stays bounded, and an
honest match played at the same time finishes normally with a replay that ``kozel replay
verify`` accepts and nothing missing from what its bots received. (Garbage on the bare port, a
stream without Hello, bad Hellos, stale request ids and illegal actions are in
``test_referee.py``; this suite goes further.)
"""

from __future__ import annotations

import asyncio
import random
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import grpc
import pytest
from google.protobuf.message import Message

from kozel.server.replay.file import read_replay
from kozel.server.replay.verify import verify_replay
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb

from .conftest import (
    RefereeProcess,
    start_ladder_referee,
    start_referee_process,
    stop_referee_process,
)
from .rawbot import RawBot, create_table, reply, table_hello, wait_table
from .tamper import TamperProxy

PLAY = "/kozel.v1.RefereeService/Play"
HELLO_TIMEOUT_S = 1.0
# Hostile seats lose quickly: short moves, no bank to speak of, one strike, short grace.
TIGHT = pb.TimeControl(move_ms=300, bank_ms=100, max_strikes=1, grace_ms=300)
MEMORY_BOUND_MB = 50
SHORT = {"limit": 4}  # whole hostile matches: a few deals are enough
T = TypeVar("T")


@pytest.fixture(scope="module")
def referee(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefereeProcess]:
    """A referee with a calm default clock (honest matches must not time out on a busy
    machine) and a one-second Hello timeout."""
    ref = start_referee_process(
        tmp_path_factory.mktemp("replays"),
        "--move-ms",
        "5000",
        "--bank-ms",
        "10000",
        "--hello-timeout",
        str(HELLO_TIMEOUT_S),
    )
    yield ref
    stop_referee_process(ref)


def rss_mb(pid: int) -> float:
    """Resident memory of a process, in MB."""
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmRSS:\s+(\d+) kB", status)
    assert found is not None, status
    return int(found.group(1)) / 1024


# -- an honest match next to the hostile traffic ---------------------------------------------


@dataclass
class HonestMatch:
    """One three-seat classic match of two remote random bots and a house bot."""

    bots: list[RawBot]
    result: rpb.WaitTableResponse


async def honest_match(address: str, n: int) -> HonestMatch:
    table = await create_table(address, "classic", 3, house=["greedy"])
    bots = [
        RawBot(
            address,
            f"honest-{n}-{i}",
            hello=table_hello(f"honest-{n}-{i}", table),
            seed=n * 2 + i,
            one_match=False,
        )
        for i in range(2)
    ]
    runs = [asyncio.create_task(b.run(stop_after=leave_once)) for b in bots]
    result = await wait_table(address, table, timeout=120)
    await asyncio.wait_for(asyncio.gather(*runs), 30)
    return HonestMatch(bots, result)


def leave_once(bot: RawBot, msg: rpb.PlayResponse) -> bool:
    """A ``stop_after`` hook for ``one_match=False`` bots: Leave once, when the match starts
    (RawBot's own one_match sends a second Leave at MatchEnd, which may race the closing
    stream and turn its OK status into a client-side INTERNAL)."""
    if msg.WhichOneof("message") == "match_start":
        bot.send(rpb.PlayRequest(leave=rpb.Leave()))
    return False


def check_honest(match: HonestMatch, cli: bool) -> None:
    """Finished normally, nothing lost, and the replay verifies (with ``kozel replay verify``
    when ``cli``)."""
    result = match.result
    res = result.result
    assert res.reason == pb.MATCH_END_REASON_LIMIT, res
    assert not res.forfeits and not any(res.timeouts) and not any(res.rejections), res
    replay = read_replay(result.replay_path)
    assert verify_replay(replay) == []
    for bot in match.bots:
        assert bot.status is None, (bot.status, bot.details)
        assert not bot.of("rejection")
        assert len(bot.of("deal_start")) == len(bot.of("deal_end")) == res.deals
        ends = bot.of("match_end")
        assert len(ends) == 1 and ends[0].result == res
        ids = [d.request_id for d in bot.of("decision")]
        steps = [s.request_id for d in replay.deals for s in d.steps if s.seat == bot.seat]
        assert ids == steps == list(range(1, len(ids) + 1))  # every request answered once
    if cli:
        verify = subprocess.run(
            [sys.executable, "-m", "kozel.cli.main", "replay", "verify", result.replay_path],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert verify.returncode == 0, verify.stdout + verify.stderr
        assert "replay OK" in verify.stdout


def alongside(address: str, hostile: Callable[[], Awaitable[T]]) -> T:
    """Run ``hostile()`` while honest matches play one after another (the last one finishes
    after it); check every honest match and return what ``hostile`` returned."""

    async def scenario() -> tuple[T, list[HonestMatch]]:
        done = asyncio.Event()

        async def keep_playing() -> list[HonestMatch]:
            played: list[HonestMatch] = []
            while not done.is_set():
                played.append(await honest_match(address, len(played)))
            return played

        honest = asyncio.create_task(keep_playing())
        await asyncio.sleep(0.1)  # the first honest match is under way
        try:
            got = await hostile()
        finally:
            done.set()
        return got, await honest

    got, played = asyncio.run(scenario())
    assert played
    for i, match in enumerate(played):
        check_honest(match, cli=i == 0)
    return got


# -- a stream of arbitrary bytes -------------------------------------------------------------


@dataclass
class Wire:
    """One Play stream whose requests may be any bytes. ``react`` answers each message the
    referee sends; with ``close`` the bot half-closes once its first messages are out."""

    address: str
    react: Callable[[rpb.PlayResponse], list[bytes | Message]] = lambda m: []
    received: list[rpb.PlayResponse] = field(default_factory=list)
    status: grpc.StatusCode | None = None
    details: str = ""

    def of(self, kind: str) -> list:
        return [getattr(m, kind) for m in self.received if m.WhichOneof("message") == kind]

    async def run(self, first: list[bytes | Message], *, close: bool = False) -> None:
        out: asyncio.Queue[bytes | None] = asyncio.Queue()
        for m in first:
            out.put_nowait(_encode(m))
        if close:
            out.put_nowait(None)

        async def requests() -> AsyncIterator[bytes]:
            while (m := await out.get()) is not None:
                yield m

        async with grpc.aio.insecure_channel(self.address) as channel:
            call = channel.stream_stream(
                PLAY,
                request_serializer=lambda b: b,
                response_deserializer=rpb.PlayResponse.FromString,
            )(requests())
            try:
                async for msg in call:
                    self.received.append(msg)
                    for m in self.react(msg):
                        out.put_nowait(_encode(m))
                self.status = await call.code()
            except grpc.aio.AioRpcError as exc:
                self.status, self.details = exc.code(), exc.details() or ""
            finally:
                out.put_nowait(None)


def _encode(m: bytes | Message) -> bytes:
    return m if isinstance(m, bytes) else m.SerializeToString()


def hello_request(name: str, table: str) -> rpb.PlayRequest:
    return rpb.PlayRequest(hello=table_hello(name, table))


Custom = Callable[[int, rpb.DecisionRequest], Sequence[bytes | Message] | None]


def answer_randomly(
    seed: int = 0, *, then: Custom | None = None
) -> Callable[[rpb.PlayResponse], list[bytes | Message]]:
    """A ``react`` that answers the n-th request randomly, unless ``then(n, req)`` says
    otherwise."""
    rng = random.Random(seed)
    count = 0

    def react(msg: rpb.PlayResponse) -> list[bytes | Message]:
        nonlocal count
        if msg.WhichOneof("message") != "decision":
            return []
        count += 1
        req = msg.decision
        custom = then(count, req) if then else None
        if custom is not None:
            return list(custom)
        return [rpb.PlayRequest(action=reply(req, rng.randrange(len(req.legal_actions))))]

    return react


def grpc_status(trailers: dict[str, str] | None) -> tuple[grpc.StatusCode, str] | None:
    """The status and message in trailers the proxy saw."""
    if trailers is None or "grpc-status" not in trailers:
        return None
    code = next(c for c in grpc.StatusCode if str(c.value[0]) == trailers["grpc-status"])
    return code, trailers.get("grpc-message", "")


def assert_forfeited(result: rpb.WaitTableResponse, seat: int, *reasons: int) -> None:
    """The hostile seat, and only it, forfeited, for one of ``reasons``."""
    assert [f.seat for f in result.result.forfeits] == [seat], result.result
    assert result.result.forfeits[0].reason in reasons, result.result


# -- the cases -------------------------------------------------------------------------------


def test_random_bytes_get_invalid_argument(referee: RefereeProcess) -> None:
    rng = random.Random(7)
    payloads = [rng.randbytes(n) for n in (1, 7, 100, 4000)] + [b"\xff" * 10, b"\x0a\xff\xff"]

    async def hostile():
        before = [Wire(referee.address) for _ in payloads]
        await asyncio.gather(*(w.run([p]) for w, p in zip(before, payloads)))
        # Mid-match: the third answer is random bytes.
        table = await create_table(referee.address, "classic", 2, house=["random"], clock=TIGHT)
        garbage = rng.randbytes(64)
        late = Wire(
            referee.address,
            answer_randomly(then=lambda n, req: [b"\xff" + garbage] if n == 3 else None),
        )
        await late.run([hello_request("garbler", table)])
        return before, late, await wait_table(referee.address, table)

    before, late, result = alongside(referee.address, hostile)
    for wire in before:  # not a PlayRequest, or one that is not a Hello
        assert wire.status == grpc.StatusCode.INVALID_ARGUMENT, (wire.status, wire.details)
        assert "PlayRequest" in wire.details or "Hello" in wire.details
    assert late.status == grpc.StatusCode.INVALID_ARGUMENT
    assert late.details == "protocol error: a message is not a valid kozel.v1.PlayRequest"
    assert len(late.of("decision")) == 3 and late.of("welcome")
    assert_forfeited(
        result,
        late.of("match_start")[0].seat,
        pb.FORFEIT_REASON_DISCONNECTED,
        pb.FORFEIT_REASON_STRIKES,
    )


def test_truncated_messages(referee: RefereeProcess) -> None:
    hello = rpb.PlayRequest(hello=rpb.Hello(protocol_version=1, bot_name="cut"))

    async def hostile():
        # A protobuf cut short inside a complete gRPC message.
        cut = Wire(referee.address)
        await cut.run([hello.SerializeToString()[:-3]])
        async with TamperProxy(referee.address, inflate=(1, 40)) as proxy:
            # A gRPC length prefix 40 bytes longer than the Hello that follows, stream kept open:
            # the referee waits for the rest until the Hello timeout.
            waiting = Wire(proxy.address)
            started = time.monotonic()
            await waiting.run([hello])
            waited = time.monotonic() - started
            # The same, then the bot closes its side: the partial message is dropped.
            closed = Wire(proxy.address)
            await closed.run([hello], close=True)
        # Mid-match: the second answer claims 10 more bytes than it has, so the next answer's
        # gRPC prefix is read as its tail, which is not protobuf.
        table = await create_table(referee.address, "classic", 2, house=["random"], clock=TIGHT)
        async with TamperProxy(referee.address, inflate=(3, 10)) as proxy:
            late = Wire(proxy.address, answer_randomly())
            await late.run([hello_request("cutter", table)])
        return cut, waiting, waited, closed, late, await wait_table(referee.address, table)

    cut, waiting, waited, closed, late, result = alongside(referee.address, hostile)
    assert cut.status == grpc.StatusCode.INVALID_ARGUMENT and "PlayRequest" in cut.details
    assert waiting.status == grpc.StatusCode.DEADLINE_EXCEEDED and "Hello" in waiting.details
    assert waited >= HELLO_TIMEOUT_S * 0.9
    assert closed.status == grpc.StatusCode.CANCELLED and "before Hello" in closed.details
    assert late.status == grpc.StatusCode.INVALID_ARGUMENT and "PlayRequest" in late.details
    assert_forfeited(
        result,
        late.of("match_start")[0].seat,
        pb.FORFEIT_REASON_DISCONNECTED,
        pb.FORFEIT_REASON_STRIKES,
    )


def test_oversized_messages_are_refused(referee: RefereeProcess) -> None:
    big_hello = rpb.PlayRequest(
        hello=rpb.Hello(protocol_version=1, bot_name="big", client="x" * 70_000)
    )

    def bloated(n: int, req: rpb.DecisionRequest) -> list[Message] | None:
        if n != 2:
            return None
        fat = rpb.ActionReply(match_id=req.match_id, request_id=req.request_id)
        fat.action.CopyFrom(pb.Action(kind=pb.ACTION_KIND_LEAD, cards=["AS"] * 40_000))
        return [rpb.PlayRequest(action=fat)]

    async def hostile():
        first = Wire(referee.address)
        await first.run([big_hello])
        table = await create_table(referee.address, "classic", 2, house=["random"], clock=TIGHT)
        late = Wire(referee.address, answer_randomly(then=bloated))
        await late.run([hello_request("bloated", table)])
        return first, late, await wait_table(referee.address, table)

    first, late, result = alongside(referee.address, hostile)
    for wire in (first, late):
        assert wire.status == grpc.StatusCode.RESOURCE_EXHAUSTED, (wire.status, wire.details)
        assert "larger than max" in wire.details
    assert len(late.of("decision")) == 2
    assert_forfeited(
        result,
        late.of("match_start")[0].seat,
        pb.FORFEIT_REASON_DISCONNECTED,
        pb.FORFEIT_REASON_STRIKES,
    )
    assert referee.proc.poll() is None


FLOOD = 100_000


def test_a_flood_of_answers_is_cut_off_and_memory_stays_bounded(referee: RefereeProcess) -> None:
    """Both flooders go through a proxy, which shows the status the referee ended the stream
    with: the bot's own grpc client may report INTERNAL instead, as its next write races the
    closing stream."""
    pid = referee.proc.pid
    cut = (grpc.StatusCode.RESOURCE_EXHAUSTED, "257 answers in a row named no pending request")

    def flood(n: int, req: rpb.DecisionRequest) -> list[Message]:
        return [
            rpb.PlayRequest(
                action=rpb.ActionReply(
                    match_id=req.match_id, request_id=req.request_id + 1000, legal_index=0
                )
            )
        ] * FLOOD

    async def hostile():
        before = rss_mb(pid)
        # A flooder that reads: every forged answer is refused, then the stream is cut.
        table = await create_table(referee.address, "classic", 2, house=["random"], clock=TIGHT)
        async with TamperProxy(referee.address) as proxy:
            reader = Wire(proxy.address, answer_randomly(then=flood))
            await reader.run([hello_request("flooder", table)])
            read_trailers = await _trailers(proxy)
        read_result = await wait_table(referee.address, table)
        # A flooder that never reads: the referee stops reading it and ends the stream anyway.
        table = await create_table(referee.address, "classic", 2, house=["random"], clock=TIGHT)
        async with TamperProxy(referee.address) as proxy:
            unsent = await _deaf_flood(proxy.address, table)
            deaf_trailers = await _trailers(proxy)
        deaf_result = await wait_table(referee.address, table)
        return (
            before,
            rss_mb(pid),
            reader,
            read_trailers,
            read_result,
            unsent,
            deaf_trailers,
            deaf_result,
        )

    (before, after, reader, read_trailers, read_result, unsent, deaf_trailers, deaf_result) = (
        alongside(referee.address, hostile)
    )
    assert after - before < MEMORY_BOUND_MB, (before, after)
    assert grpc_status(read_trailers) == cut
    assert reader.status in (cut[0], grpc.StatusCode.INTERNAL), reader.details
    refused = reader.of("rejection")
    assert 0 < len(refused) <= 257
    assert {r.code for r in refused} == {pb.ERROR_CODE_UNKNOWN_REQUEST}
    assert_forfeited(
        read_result,
        reader.of("match_start")[0].seat,
        pb.FORFEIT_REASON_DISCONNECTED,
        pb.FORFEIT_REASON_STRIKES,
    )
    assert grpc_status(deaf_trailers) == cut
    assert unsent > FLOOD // 2, "the referee should stop reading a stream it has cut off"
    assert len(deaf_result.result.forfeits) == 1


async def _trailers(proxy: TamperProxy, timeout: float = 15) -> dict[str, str] | None:
    """The trailers of the proxy's first stream, once the server has sent them."""
    deadline = time.monotonic() + timeout
    while proxy.trailers() is None and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return proxy.trailers()


async def _deaf_flood(address: str, table: str) -> int:
    """Join ``table``, read up to the first request, then send forged answers and never read
    again. Returns how many were still unsent after a while."""
    async with grpc.aio.insecure_channel(address) as channel:
        out: asyncio.Queue[rpb.PlayRequest | None] = asyncio.Queue()
        out.put_nowait(hello_request("deaf", table))

        async def requests() -> AsyncIterator[rpb.PlayRequest]:
            while (m := await out.get()) is not None:
                yield m

        call = channel.stream_stream(
            PLAY,
            request_serializer=rpb.PlayRequest.SerializeToString,
            response_deserializer=rpb.PlayResponse.FromString,
        )(requests())
        while True:
            msg = await call.read()
            assert isinstance(msg, rpb.PlayResponse), msg
            if msg.WhichOneof("message") == "decision":
                break
        forged = rpb.PlayRequest(
            action=rpb.ActionReply(match_id=msg.decision.match_id, request_id=999, legal_index=0)
        )
        for _ in range(FLOOD):
            out.put_nowait(forged)
        await asyncio.sleep(2)
        unsent = out.qsize()
        out.put_nowait(None)
        call.cancel()
        return unsent


def test_answers_for_someone_elses_request_are_refused(referee: RefereeProcess) -> None:
    async def hostile():
        # The victims play their own match; the thief sits at another table with a house bot
        # and, for each of its requests, first answers the victims' pending request (their
        # match id and request id, as if it had learnt them) and its table mate's.
        victims = await create_table(referee.address, "classic", 2, options=SHORT)
        vbots = [
            RawBot(
                referee.address,
                f"victim-{i}",
                hello=table_hello(f"victim-{i}", victims),
                seed=10 + i,
            )
            for i in range(2)
        ]
        vruns = [asyncio.create_task(b.run()) for b in vbots]
        table = await create_table(referee.address, "classic", 3, house=["random"], options=SHORT)
        mate = RawBot(referee.address, "mate", hello=table_hello("mate", table), seed=3)
        forged: list[rpb.ActionReply] = []

        async def thief(bot: RawBot, req: rpb.DecisionRequest) -> list[rpb.ActionReply]:
            out = []
            for other in [*vbots, mate]:
                if other.of("decision"):
                    last = other.of("decision")[-1]
                    out.append(reply(last, 0))
            forged.extend(out)
            return out + [reply(req, bot.rng.randrange(len(req.legal_actions)))]

        def forge_for_mate(bot: RawBot, msg: rpb.PlayResponse) -> bool:
            if msg.WhichOneof("message") == "event" and mate.of("decision"):
                forged.append(reply(mate.of("decision")[-1], 0))  # maybe pending right now
                bot.send(rpb.PlayRequest(action=forged[-1]))
            return False

        tbot = RawBot(referee.address, "thief", hello=table_hello("thief", table), answer=thief)
        runs = [
            asyncio.create_task(mate.run()),
            asyncio.create_task(tbot.run(stop_after=forge_for_mate)),
        ]
        result = await wait_table(referee.address, table)
        vresult = await wait_table(referee.address, victims)
        await asyncio.gather(*runs, *vruns)
        return vbots, vresult, mate, tbot, result, forged

    vbots, vresult, mate, tbot, result, forged = alongside(referee.address, hostile)
    assert forged
    refused = tbot.of("rejection")
    assert refused and {r.code for r in refused} == {pb.ERROR_CODE_UNKNOWN_REQUEST}
    assert any("no running match" in r.message for r in refused)
    assert any("not pending" in r.message for r in refused)
    for res, bots in ((vresult, vbots), (result, [mate])):
        assert not res.result.forfeits and not any(res.result.rejections)
        replay = read_replay(res.replay_path)
        for bot in bots:  # every action of the seat is the bot's own answer
            assert not bot.of("rejection")
            _assert_steps_are_own_answers(bot, replay)


def _assert_steps_are_own_answers(bot: RawBot, replay) -> None:
    chosen = {}
    for d in bot.of("decision"):
        chosen[d.request_id] = d
    steps = [s for deal in replay.deals for s in deal.steps if s.seat == bot.seat]
    assert [s.request_id for s in steps] == sorted(chosen)
    for step in steps:
        assert step.action in chosen[step.request_id].legal_actions


def test_replayed_and_duplicated_answers_are_applied_once(referee: RefereeProcess) -> None:
    async def hostile():
        table = await create_table(referee.address, "classic", 2, house=["random"], options=SHORT)
        sent: list[rpb.ActionReply] = []

        async def replayer(bot: RawBot, req: rpb.DecisionRequest) -> list[rpb.ActionReply]:
            answer = reply(req, bot.rng.randrange(len(req.legal_actions)))
            old = sent[-20:]
            sent.append(answer)
            return [answer] * 5 + old  # the answer five times, then the last twenty again

        bot = RawBot(
            referee.address,
            "replayer",
            hello=table_hello("replayer", table),
            answer=replayer,
            one_match=False,
        )
        await bot.run(stop_after=leave_once)
        return bot, await wait_table(referee.address, table)

    bot, result = alongside(referee.address, hostile)
    assert bot.status is None and result.result.reason == pb.MATCH_END_REASON_LIMIT
    assert not result.result.forfeits and not any(result.result.rejections)
    refused = bot.of("rejection")
    assert len(refused) >= 20 and {r.code for r in refused} == {pb.ERROR_CODE_UNKNOWN_REQUEST}
    replay = read_replay(result.replay_path)
    _assert_steps_are_own_answers(bot, replay)  # one step per request: no answer applied twice


def test_answers_after_match_end_are_refused_and_leave_closes(referee: RefereeProcess) -> None:
    async def hostile():
        table = await create_table(referee.address, "classic", 2, house=["random"], options=SHORT)
        answers: list[rpb.ActionReply] = []

        async def remember(bot: RawBot, req: rpb.DecisionRequest) -> list[rpb.ActionReply]:
            answers.append(reply(req, bot.rng.randrange(len(req.legal_actions))))
            return answers[-1:]

        bot = RawBot(referee.address, "late", hello=table_hello("late", table), answer=remember)
        bot.one_match = False

        def after_end(b: RawBot, msg: rpb.PlayResponse) -> bool:
            if msg.WhichOneof("message") == "match_end":
                for a in answers[-10:]:
                    b.send(rpb.PlayRequest(action=a))
                b.send(rpb.PlayRequest(action=reply(b.of("decision")[-1], 0)))
                b.send(rpb.PlayRequest(leave=rpb.Leave()))
            return False

        await asyncio.wait_for(bot.run(stop_after=after_end), 60)
        return bot, await wait_table(referee.address, table)

    bot, result = alongside(referee.address, hostile)
    assert bot.status is None  # Leave closed the stream cleanly
    assert not result.result.forfeits
    kinds = [m.WhichOneof("message") for m in bot.received]
    tail = kinds[kinds.index("match_end") + 1 :]
    assert tail == ["rejection"] * 11
    assert all(
        r.code == pb.ERROR_CODE_UNKNOWN_REQUEST and "no running match" in r.message
        for r in bot.of("rejection")
    )


def test_silent_connections_and_streams_are_dropped(referee: RefereeProcess) -> None:
    host, port = referee.address.rsplit(":", 1)
    pid = referee.proc.pid

    async def silent_socket() -> float:
        """A TCP connection that never sends a byte: seconds until the referee closes it."""
        reader, writer = await asyncio.open_connection(host, int(port))
        started = time.monotonic()
        try:
            while await asyncio.wait_for(reader.read(4096), 10):
                pass
            return time.monotonic() - started
        finally:
            writer.close()

    async def hostile():
        before = rss_mb(pid)
        mutes = [Wire(referee.address) for _ in range(50)]
        closed_after = await asyncio.gather(
            *(silent_socket() for _ in range(50)), *(w.run([]) for w in mutes)
        )
        return before, rss_mb(pid), closed_after[:50], mutes

    before, after, closed_after, mutes = alongside(referee.address, hostile)
    assert max(closed_after) < HELLO_TIMEOUT_S + 5, closed_after
    for wire in mutes:
        assert wire.status == grpc.StatusCode.DEADLINE_EXCEEDED and "Hello" in wire.details
    assert after - before < MEMORY_BOUND_MB


def test_half_open_peers_are_dropped(referee: RefereeProcess) -> None:
    async def hostile():
        # Before Hello: the connection goes dead (nothing moves either way, sockets stay open).
        async with TamperProxy(referee.address) as proxy:
            mute = Wire(proxy.address)
            run = asyncio.create_task(mute.run([]))
            while not proxy.streams_opened:  # the referee has seen the stream open
                await asyncio.sleep(0.01)
            proxy.blackhole()
            before_hello = await _trailers(proxy)
        await asyncio.wait_for(run, 10)
        # Mid-match: after two answers the bot's side goes dead.
        table = await create_table(referee.address, "classic", 2, house=["random"], clock=TIGHT)
        async with TamperProxy(referee.address) as proxy:

            def freeze(n: int, req: rpb.DecisionRequest) -> list[Message] | None:
                if n == 3:
                    proxy.blackhole()
                return None

            frozen = Wire(proxy.address, answer_randomly(then=freeze))
            run = asyncio.create_task(frozen.run([hello_request("frozen", table)]))
            result = await wait_table(referee.address, table)
        await asyncio.wait_for(run, 10)
        return before_hello, frozen, result

    before_hello, frozen, result = alongside(referee.address, hostile)
    assert grpc_status(before_hello) == (
        grpc.StatusCode.DEADLINE_EXCEEDED,
        f"no Hello within {HELLO_TIMEOUT_S:g} s",
    )
    seat = frozen.of("match_start")[0].seat
    assert_forfeited(result, seat, pb.FORFEIT_REASON_STRIKES)
    assert_struck_out(result, seat, TIGHT.max_strikes)


def assert_struck_out(result: rpb.WaitTableResponse, seat: int, max_strikes: int) -> None:
    """``seat`` forfeited on the timeout that took its public strikes past ``max_strikes``.

    A timeout inside a sealed declaration window is held out of the public count until its
    deal ends (docs/referee.md), so the held ones of the deal the forfeit voided come on top.
    """
    timeouts = result.result.timeouts[seat]
    replay = read_replay(result.replay_path)
    timed = [s for d in replay.deals for s in d.steps if s.seat == seat and s.timeout]
    # the timeout that struck the seat out is not applied: no step (0 when it came at a deal's end)
    assert timeouts - len(timed) in (0, 1), (timeouts, timed)
    held = [
        s
        for s in replay.deals[-1].steps
        if s.seat == seat and s.timeout and s.action.kind == pb.ACTION_KIND_PASS
    ]
    assert timeouts - len(held) == max_strikes + 1, (timeouts, timed)


LADDER = {
    "ladders": [
        {
            "name": "classic-2p",
            "players": 2,
            "ruleset": {"preset": "classic", "options": SHORT},
            "time_control": {"move_ms": 5000, "bank_ms": 10000},
        }
    ]
}


@pytest.mark.slow
def test_many_bad_tokens_are_refused_slowed_and_good_bots_still_play(tmp_path: Path) -> None:
    ref, store, tokens = start_ladder_referee(tmp_path, LADDER, [f"good-{i}" for i in range(2)])

    def ladder_hello(name: str, token: str) -> rpb.Hello:
        return rpb.Hello(
            protocol_version=1,
            bot_name=name,
            token=token,
            join_ladder=rpb.JoinLadder(ladder="classic-2p"),
        )

    async def intruder(i: int) -> tuple[RawBot, float]:
        bot = RawBot(ref.address, f"intruder-{i}", hello=ladder_hello(f"intruder-{i}", f"bad{i}"))
        started = time.monotonic()
        await asyncio.wait_for(bot.run(), 30)
        return bot, time.monotonic() - started

    async def scenario():
        before = rss_mb(ref.proc.pid)
        one_by_one = [await intruder(i) for i in range(6)]
        good = [
            RawBot(ref.address, f"good-{i}", hello=ladder_hello(f"good-{i}", tokens[i]), seed=i)
            for i in range(2)
        ]
        crowd = [intruder(i) for i in range(6, 66)]
        results = await asyncio.gather(*crowd, *(b.run() for b in good))
        return one_by_one, results[:60], good, before, rss_mb(ref.proc.pid)

    try:
        one_by_one, crowd, good, before, after = asyncio.run(scenario())
    finally:
        stop_referee_process(ref)
    for bot, _ in one_by_one:
        assert bot.status == grpc.StatusCode.UNAUTHENTICATED and "token" in bot.details
    # A crowd from one address: a few wait out their delay, the rest are cut short at once
    # (each waiting refusal holds a stream slot).
    statuses = [bot.status for bot, _ in crowd]
    assert set(statuses) == {grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.RESOURCE_EXHAUSTED}
    assert statuses.count(grpc.StatusCode.UNAUTHENTICATED) <= 8, statuses
    assert max(t for bot, t in crowd if bot.status == grpc.StatusCode.RESOURCE_EXHAUSTED) < 3.0
    assert not any(bot.of("welcome") for bot, _ in one_by_one + crowd)
    waits = [t for _, t in one_by_one]  # refused after 0.05, 0.1, 0.2, 0.4, 0.8, 1.6 s (the
    assert waits[5] > max(waits[1:3]) + 1.0 and waits[5] > waits[3], waits  # first opens the db)
    assert after - before < MEMORY_BOUND_MB
    ends = [b.of("match_end") for b in good]
    assert all(len(e) == 1 for e in ends) and ends[0][0].replay_id == ends[1][0].replay_id
    end = ends[0][0]
    assert end.result.reason == pb.MATCH_END_REASON_LIMIT and not end.result.forfeits
    assert not any(b.of("rejection") for b in good)
    replay_path = tmp_path / "replays" / f"{end.replay_id}.kzr"
    verify = subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", "replay", "verify", str(replay_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert store.match_counts("classic-2p").get("finished") == 1
    store.close()
