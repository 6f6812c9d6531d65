"""A small scripted referee for client tests: plays two-player classic engine matches in which
the connected bot holds seat 0 and a random player seat 1. It keeps sessions across streams
(resume with the Welcome's token resends MatchStart, DealStart and the pending request with
``resent``), honours Leave and max_matches, refuses illegal answers with a retry, and can
redirect its first Hellos to another address (Welcome, then Redirect with a fresh ticket, then
the end of the stream, as a referee of a shared ladder does)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import secrets
import socket
from collections import Counter
from collections.abc import AsyncIterator

import grpc

from kozel.core.convert import (
    DECISION_TO_PB,
    ERROR_TO_PB,
    KIND_TO_PB,
    action_from_pb,
    action_to_pb,
    observation_to_pb,
    ruleset_to_pb,
)
from kozel.engine import ErrorCode, IllegalAction, Match, Ruleset, observe
from kozel.engine.cards import codes
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc

CLOSE = object()


class FakeSession:
    def __init__(self, ref: FakeReferee, hello: rpb.Hello) -> None:
        self.ref = ref
        self.hello = hello
        self.token = secrets.token_hex(8)
        self.max_matches = max(1, hello.max_matches)
        self.stream: asyncio.Queue[object] | None = None
        self.matches: dict[str, FakeMatch] = {}
        self.leaving = False
        self.started = 0

    def send(self, msg: rpb.PlayResponse) -> None:
        if self.stream is not None:
            self.stream.put_nowait(msg)

    def attach(self, stream: asyncio.Queue[object], resumed: bool) -> None:
        if self.stream is not None:
            self.stream.put_nowait(CLOSE)
        self.stream = stream
        self.send(
            rpb.PlayResponse(
                welcome=rpb.Welcome(
                    session_id=self.token[:6],
                    resume_token=self.token,
                    protocol_version=1,
                    server_version="fake",
                    resumed=resumed,
                )
            )
        )
        if resumed and self.ref.forget_on_resume:  # as if the matches ended meanwhile
            for m in list(self.matches.values()):
                assert m.task is not None
                m.task.cancel()
                del self.matches[m.match_id]
        if resumed:
            for m in self.matches.values():
                for msg in m.resync():
                    self.send(msg)
        self.fill()

    def fill(self) -> None:
        """Start matches while slots are free."""
        while (
            self.stream is not None
            and not self.leaving
            and len(self.matches) < self.max_matches
            and self.started < self.ref.max_total
        ):
            self.started += 1
            match_id = f"{self.ref.name}-m{self.ref.next_id()}"  # unique across fakes
            m = FakeMatch(self, match_id, seed=self.ref.seed_base + self.started)
            self.matches[m.match_id] = m
            m.task = asyncio.get_running_loop().create_task(m.run())
            self.ref.tasks.add(m.task)

    def match_over(self, m: FakeMatch) -> None:
        del self.matches[m.match_id]
        if self.leaving and not self.matches:
            self.send(CLOSE)  # type: ignore[arg-type]
        else:
            self.fill()

    def leave(self) -> None:
        self.leaving = True
        if not self.matches:
            self.send(CLOSE)  # type: ignore[arg-type]


class FakeMatch:
    def __init__(self, session: FakeSession, match_id: str, seed: int) -> None:
        self.session = session
        self.match_id = match_id
        self.rules = Ruleset.preset("classic")
        self.match = Match(self.rules, 2, seed)
        self.rng = random.Random(seed)
        self.replies: asyncio.Queue[rpb.ActionReply] = asyncio.Queue()
        self.pending: rpb.PlayResponse | None = None
        self.task: asyncio.Task[None] | None = None

    def start_msg(self) -> rpb.PlayResponse:
        return rpb.PlayResponse(
            match_start=rpb.MatchStart(
                match_id=self.match_id,
                seat=0,
                players=2,
                ruleset=ruleset_to_pb(self.rules),
                seating=[
                    rpb.Player(seat=0, name=self.session.hello.bot_name, side=0),
                    rpb.Player(seat=1, name="fake-random", side=1),
                ],
            )
        )

    def deal_msg(self) -> rpb.PlayResponse:
        deal = self.match.deal
        obs = observe(deal, 0)
        return rpb.PlayResponse(
            deal_start=rpb.DealStart(
                match_id=self.match_id,
                deal_index=self.match.deal_index,
                dealer=deal.dealer,
                trump=obs.trump,
                trump_card=obs.trump_card,
                hand=obs.hand,
                active_seats=[0, 1],
            )
        )

    def resync(self) -> list[rpb.PlayResponse]:
        msgs = [self.start_msg(), self.deal_msg()]
        if self.pending is not None:
            again = rpb.PlayResponse()
            again.CopyFrom(self.pending)
            again.decision.resent = True
            msgs.append(again)
        return msgs

    async def run(self) -> None:
        s = self.session
        s.send(self.start_msg())
        s.send(self.deal_msg())
        rid = 0
        match = self.match
        while not match.over:
            deal, deals_before = match.deal, len(match.records)
            seat = deal.to_act[0]
            legal = deal.legal_actions(seat)
            if seat == 1:
                action = self.rng.choice(legal)
                match.apply(seat, action)
            else:
                rid += 1
                self.pending = rpb.PlayResponse(
                    decision=rpb.DecisionRequest(
                        match_id=self.match_id,
                        request_id=rid,
                        kind=DECISION_TO_PB[deal.decision],
                        move_ms=2000,
                        observation=observation_to_pb(observe(deal, 0)),
                        legal_actions=[action_to_pb(a) for a in legal],
                    )
                )
                s.send(self.pending)
                action = await self._answer(rid, legal)
                self.pending = None
            s.send(
                rpb.PlayResponse(
                    event=rpb.Event(
                        match_id=self.match_id,
                        deal_index=deals_before,
                        played=pb.Play(
                            seat=seat,
                            kind=KIND_TO_PB[action.kind],
                            count=action.cards.bit_count(),
                            cards=codes(action.cards)
                            if seat == 0 or action.kind != "discard"
                            else [],
                        ),
                    )
                )
            )
            if len(match.records) > deals_before:
                self.session.ref.deals += 1
                s.send(
                    rpb.PlayResponse(
                        deal_end=rpb.DealEnd(match_id=self.match_id, deal_index=deals_before)
                    )
                )
                if not match.over:
                    s.send(self.deal_msg())
            await asyncio.sleep(0)
        winner = match.winner
        s.send(
            rpb.PlayResponse(
                match_end=rpb.MatchEnd(
                    match_id=self.match_id,
                    replay_id=self.match_id,
                    seed=match.seed,
                    result=pb.MatchResult(
                        reason=pb.MATCH_END_REASON_LIMIT,
                        draw=winner is None,
                        winner_side=winner or 0,
                        penalty_totals=match.board.totals,
                        deals=len(match.records),
                    ),
                )
            )
        )
        s.match_over(self)

    async def _answer(self, rid: int, legal):
        while True:
            reply = await self.replies.get()
            self.session.ref.answers[(self.match_id, reply.request_id)] += 1
            if reply.request_id != rid:
                self._reject(reply.request_id, pb.ERROR_CODE_UNKNOWN_REQUEST, "not pending")
                continue
            try:
                if reply.WhichOneof("choice") == "legal_index":
                    if reply.legal_index >= len(legal):
                        raise IllegalAction(ErrorCode.MALFORMED, "index out of range")
                    action = legal[reply.legal_index]
                    self.match.apply(0, action)
                    return action
                kind, cards, combo = action_from_pb(reply.action)
                return self.match.play(0, kind, cards, combo)
            except IllegalAction as exc:
                self.session.ref.rejections += 1
                self._reject(rid, ERROR_TO_PB[exc.code], str(exc))

    def _reject(self, rid: int, code: int, why: str) -> None:
        self.session.send(
            rpb.PlayResponse(
                rejection=rpb.Rejection(
                    match_id=self.match_id,
                    request_id=rid,
                    code=pb.ErrorCode.Name(code),
                    message=why,
                    retry_allowed=True,
                    retries_left=2,
                )
            )
        )


class FakeReferee(referee_pb2_grpc.RefereeServiceServicer):
    def __init__(
        self,
        *,
        max_total: int = 10,
        redirect_to: str | None = None,
        redirects: int = 1,
        seed_base: int = 0,
        forget_on_resume: bool = False,
        refuse_resume: bool = False,
    ) -> None:
        self.forget_on_resume = forget_on_resume
        self.refuse_resume = refuse_resume  # as a referee that never knew the session
        self.sessions: dict[str, FakeSession] = {}
        self.max_total = max_total
        self.redirect_to = redirect_to
        self.redirects_left = redirects if redirect_to else 0
        self.tickets: list[str] = []  # issued, in order
        self.answered = asyncio.Event()  # set on every answer (tests clear it)
        self.seed_base = seed_base
        self.hellos: list[rpb.Hello] = []
        self.answers: Counter[tuple[str, int]] = Counter()
        self.rejections = 0
        self.deals = 0
        self.tasks: set[asyncio.Task[None]] = set()
        self._ids = itertools.count()
        self.name = secrets.token_hex(3)

    def next_id(self) -> int:
        return next(self._ids)

    async def Play(
        self, request_iterator: AsyncIterator[rpb.PlayRequest], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[rpb.PlayResponse]:
        out: asyncio.Queue[object] = asyncio.Queue()
        reader = asyncio.get_running_loop().create_task(self._read(request_iterator, out))
        self.tasks.add(reader)
        try:
            while (msg := await out.get()) is not CLOSE:
                if isinstance(msg, tuple):  # (status, details): end the stream with it
                    await context.abort(*msg)
                yield msg  # type: ignore[misc]
        finally:
            for s in self.sessions.values():
                if s.stream is out:
                    s.stream = None

    async def _read(
        self, requests: AsyncIterator[rpb.PlayRequest], out: asyncio.Queue[object]
    ) -> None:
        session: FakeSession | None = None
        with contextlib.suppress(Exception):
            async for req in requests:
                which = req.WhichOneof("message")
                if which == "hello":
                    hello = req.hello
                    self.hellos.append(hello)
                    if self.redirects_left and not hello.resume_token:
                        self.redirect(hello, out)
                        return
                    if hello.resume_token and self.refuse_resume:
                        out.put_nowait(
                            (grpc.StatusCode.NOT_FOUND, "unknown or expired resume_token")
                        )
                        return
                    if hello.resume_token:
                        session = self.sessions[hello.resume_token]
                        session.attach(out, resumed=True)
                    else:
                        session = FakeSession(self, hello)
                        self.sessions[session.token] = session
                        session.attach(out, resumed=False)
                elif which == "action" and session is not None:
                    m = session.matches.get(req.action.match_id)
                    if m is not None:
                        m.replies.put_nowait(req.action)
                    self.answered.set()
                elif which == "leave" and session is not None:
                    session.leave()

    def redirect(self, hello: rpb.Hello, out: asyncio.Queue[object]) -> None:
        """Welcome the stream, send it elsewhere with a new ticket, and end it."""
        assert self.redirect_to is not None
        self.redirects_left -= 1
        ticket = f"ticket-{secrets.token_hex(4)}"
        self.tickets.append(ticket)
        out.put_nowait(
            rpb.PlayResponse(
                welcome=rpb.Welcome(
                    session_id="r", resume_token=secrets.token_hex(8), protocol_version=1
                )
            )
        )
        out.put_nowait(
            rpb.PlayResponse(redirect=rpb.Redirect(address=self.redirect_to, ticket=ticket))
        )
        out.put_nowait(CLOSE)


def dead_address() -> str:
    """A loopback port nobody listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def assert_same_hello(hello: rpb.Hello, first: rpb.Hello) -> None:
    """``hello`` repeats ``first`` (name, token, ladder, max_matches, skip_events, client)."""
    for field in ("protocol_version", "bot_name", "token", "max_matches", "skip_events", "client"):
        assert getattr(hello, field) == getattr(first, field), field
    assert hello.join_ladder.ladder == first.join_ladder.ladder != ""


async def start_fake(**kwargs: object) -> tuple[grpc.aio.Server, FakeReferee, str]:
    """A running fake referee on a free local port: (server, servicer, address)."""
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    ref = FakeReferee(**kwargs)  # type: ignore[arg-type]
    referee_pb2_grpc.add_RefereeServiceServicer_to_server(ref, server)
    port = server.add_insecure_port("127.0.0.1:0")
    assert port
    await server.start()
    return server, ref, f"127.0.0.1:{port}"


async def stop_fake(server: grpc.aio.Server, ref: FakeReferee) -> None:
    await server.stop(None)
    for t in ref.tasks:
        t.cancel()
    await asyncio.gather(*ref.tasks, return_exceptions=True)
