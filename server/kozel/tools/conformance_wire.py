"""The conformance checker's scripted referee: listeners on loopback that hand each bot stream
to the script, the script's view of a stream (send, drop, receive and time answers), the
messages and engine states it stages, and the report of its checks."""

from __future__ import annotations

import asyncio
import random
import secrets
import socket
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import grpc

from kozel.core import convert, messages
from kozel.core.clock import Clock
from kozel.core.messages import Outgoing
from kozel.engine import Decision, IllegalAction, Match, Ruleset, observe
from kozel.engine.deal import Deal
from kozel.engine.shuffle import commitment
from kozel.server.app import server_options
from kozel.server.config import ServerConfig
from kozel.server.service import add_to_server
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc

TABLE = "conformance"
SEAT = 0
KIND_NAMES = {Decision.LEAD: "lead", Decision.RESPOND: "respond", Decision.DECLARE: "declaration"}
SITUATIONS = ("lead", "respond", "declaration window", "longest legal list")


@dataclass
class Check:
    """One line of the report: PASS, FAIL or SKIP, and why."""

    name: str
    status: str
    reason: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "PASS"

    def line(self) -> str:
        return f"{self.status}  {self.name}" + (f": {self.reason}" if self.reason else "")


class Results:
    """The checks run so far, by name."""

    def __init__(self) -> None:
        self.done: dict[str, Check] = {}
        self.stopped = "the script stopped"  # why the checks not run were not

    def add(self, name: str, why: str | None, note: str = "") -> None:
        """PASS (with ``note``) when ``why`` is empty, else FAIL because of ``why``."""
        self.done[name] = Check(name, "FAIL", why) if why else Check(name, "PASS", note)

    def skip(self, name: str, why: str) -> None:
        self.done[name] = Check(name, "SKIP", why)

    def report(self, names: tuple[str, ...], stopped: str) -> list[Check]:
        """Every check of ``names`` in order; those not run are skipped because ``stopped``."""
        return [self.done.get(n) or Check(n, "SKIP", f"not run: {stopped}") for n in names]


class Stream:
    """The bot's current stream, seen from the checker."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[tuple[rpb.PlayRequest, float] | None] = asyncio.Queue()
        self.outbox: asyncio.Queue[Outgoing | tuple[grpc.StatusCode, str] | None] = asyncio.Queue()


class Servicer(referee_pb2_grpc.RefereeServiceServicer):
    def __init__(self) -> None:
        self.streams: asyncio.Queue[Stream] = asyncio.Queue()
        self._readers: set[asyncio.Task[None]] = set()

    async def Play(
        self, request_iterator: AsyncIterator[rpb.PlayRequest], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Outgoing]:
        stream = Stream()
        loop = asyncio.get_running_loop()

        async def read() -> None:
            try:
                async for req in request_iterator:
                    stream.inbox.put_nowait((req, loop.time()))
            except Exception:  # noqa: BLE001 (the bot went away, however its stream ended)
                pass
            finally:
                stream.inbox.put_nowait(None)

        reader = loop.create_task(read())
        self._readers.add(reader)
        reader.add_done_callback(self._readers.discard)
        self.streams.put_nowait(stream)
        while True:
            item = await stream.outbox.get()
            if item is None:  # end the stream normally
                return
            if isinstance(item, tuple):
                await context.abort(*item)
            yield item


def no_reason() -> str | None:
    return None


@dataclass
class Session:
    """The script's side of one bot: its current stream and the time of each answer.
    ``gone()`` says why the bot cannot come back (its process ended), or None."""

    servicer: Servicer
    move_ms: int
    stream: Stream | None = None
    token: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    think_ms: list[float] = field(default_factory=list)
    gone: Callable[[], str | None] = no_reason

    async def accept(self, timeout: float) -> rpb.PlayRequest:
        """The first message of the next stream the bot opens."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.stream = await asyncio.wait_for(self.servicer.streams.get(), 0.25)
                return await self.receive(timeout)
            except TimeoutError:
                if why := self.gone():
                    raise ConnectionError(f"the bot did not connect: {why}") from None
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the bot did not connect within {timeout:g} s") from None

    async def receive(self, timeout: float) -> rpb.PlayRequest:
        assert self.stream is not None
        got = await asyncio.wait_for(self.stream.inbox.get(), timeout)
        if got is None:
            why = await self.why_gone()
            raise ConnectionError("the bot closed its stream" + (f": {why}" if why else ""))
        return got[0]

    async def why_gone(self, wait_s: float = 2.0) -> str | None:
        """Why the bot went away, once its process has ended (it may take a moment)."""
        deadline = time.monotonic() + wait_s
        while (why := self.gone()) is None and time.monotonic() < deadline:  # noqa: ASYNC110 - a process, not an event
            await asyncio.sleep(0.05)
        return why

    def send(self, msg: Outgoing) -> None:
        assert self.stream is not None
        self.stream.outbox.put_nowait(msg)

    def drop(self) -> None:
        assert self.stream is not None
        self.stream.outbox.put_nowait((grpc.StatusCode.UNAVAILABLE, "conformance: dropped"))

    async def answer(self, match_id: str, request_id: int, timeout: float) -> rpb.ActionReply:
        """The answer to ``request_id``, timed from now (Leave, other messages and late
        answers to earlier requests are skipped); TimeoutError after ``timeout`` s."""
        start = time.monotonic()
        while True:
            left = timeout - (time.monotonic() - start)
            if left <= 0:
                raise TimeoutError(f"no answer to request {request_id} within {timeout:g} s")
            try:
                req = await self.receive(left)
            except TimeoutError:
                continue
            if req.WhichOneof("message") != "action":
                continue
            reply = req.action
            if reply.match_id == match_id and reply.request_id < request_id:
                continue  # a late answer to a request already settled
            self.think_ms.append((time.monotonic() - start) * 1000)
            return reply


async def listen() -> tuple[grpc.aio.Server, Servicer, str]:
    """A scripted listener on a free loopback port: (server, servicer, address)."""
    servicer = Servicer()
    server = grpc.aio.server(options=server_options(ServerConfig()))
    add_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, servicer, f"127.0.0.1:{port}"


def closed_address() -> str:
    """A loopback port that was just free (nothing listens on it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@dataclass
class Situation:
    """A deal staged at the moment seat 0 must decide."""

    name: str
    deal: Deal


def situations(seed: int = 7) -> list[Situation]:
    """Real engine states for seat 0 of a two-player classic table: a lead, a response, a
    declaration window, and the longest legal list found in random play."""
    rules = Ruleset.preset("classic")
    rng = random.Random(seed)
    found: dict[str, Deal] = {}
    longest: Deal | None = None
    for s in range(5000):
        match = Match(rules, 2, s)
        deal = match.deal
        for _ in range(60):
            if deal.over:
                break
            seat = deal.to_act[0]
            if SEAT in deal.to_act:
                found.setdefault(KIND_NAMES[deal.decision], deal.clone())
                n = len(deal.legal_actions(SEAT))
                if longest is None or n > len(longest.legal_actions(SEAT)):
                    longest = deal.clone()
                seat = SEAT
            deal.apply(seat, rng.choice(deal.legal_actions(seat)))
        if len(found) == 3 and s > 200:
            break
    assert longest is not None and len(found) == 3
    deals = [found["lead"], found["respond"], found["declaration"], longest]
    return [Situation(name, deal) for name, deal in zip(SITUATIONS, deals, strict=True)]


def judge(deal: Deal, reply: rpb.ActionReply, request_id: int, match_id: str) -> str | None:
    """Why an answer for seat 0 in ``deal`` is not acceptable, or None."""
    if reply.match_id != match_id or reply.request_id != request_id:
        return (
            f"answered request {reply.request_id} of match {reply.match_id!r}, expected "
            f"{request_id} of {match_id!r}"
        )
    legal = deal.legal_actions(SEAT)
    which = reply.WhichOneof("choice")
    if which == "legal_index":
        if reply.legal_index >= len(legal):
            return f"legal_index {reply.legal_index} is outside the {len(legal)} legal actions"
        return None
    if which == "action":
        try:
            kind, cards, combo = convert.action_from_pb(reply.action)
            deal.clone().play(SEAT, kind, cards, combo)
        except IllegalAction as exc:
            return f"the action is refused: {exc.code}: {exc.message}"
        return None
    return "the answer has neither legal_index nor action"


def deal_start(match_id: str, index: int, deal: Deal, totals: list[int]) -> rpb.PlayResponse:
    """``deal`` as seat 0 sees it at its start, as deal ``index`` of the match."""
    obs = observe(deal, SEAT)
    return rpb.PlayResponse(
        deal_start=messages.deal_start(match_id, index, deal, obs, totals=totals)
    )


def decision(match_id: str, deal: Deal, request_id: int, move_ms: int) -> Outgoing:
    """Seat 0's request in ``deal`` as it stands."""
    return messages.encoded_decision(
        match_id,
        request_id,
        deal.decision,
        deal.legal_actions(SEAT),
        move_ms=move_ms,
        bank_ms=0,
        retries_left=1,
        observation=convert.observation_to_pb(observe(deal, SEAT)).SerializeToString(),
    )


def stage(match_id: str, index: int, deal: Deal, request_id: int, move_ms: int) -> list[Outgoing]:
    """A DealStart of ``deal`` as deal ``index`` of the match, and seat 0's request in it."""
    return [
        deal_start(match_id, index, deal, [0, 0]),
        decision(match_id, deal, request_id, move_ms),
    ]


def match_start(match_id: str, bot_name: str, move_ms: int) -> rpb.PlayResponse:
    """The checker's two-player classic match, the bot in seat 0."""
    return rpb.PlayResponse(
        match_start=messages.match_start(
            match_id,
            seat=SEAT,
            players=2,
            ruleset=convert.ruleset_to_pb(Ruleset.preset("classic")),
            time_control=Clock(move_ms=move_ms).to_pb(),
            table_id=TABLE,
            seating=[
                rpb.Player(seat=0, name=bot_name, side=0),
                rpb.Player(seat=1, name="checker", side=1),
            ],
            seed_commitment=commitment(b"\0" * 32),
        )
    )


async def end_match(session: Session, match_id: str) -> None:
    """MatchEnd, then the end of the stream, as the referee does after Leave."""
    session.send(
        messages.match_end(
            match_id, pb.MatchResult(reason=pb.MATCH_END_REASON_ABORTED, draw=True), "", b"\0" * 32
        )
    )
    await asyncio.sleep(0.2)
    assert session.stream is not None
    session.stream.outbox.put_nowait(None)
