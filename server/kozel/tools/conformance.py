"""The conformance checker: a scripted referee that puts one bot through the situations every
bot must handle, and says for each whether the bot passed and why not.

The bot connects as it would to a real referee (``Play`` stream, ``Hello`` with
``join_table``). The checker then plays one match with it, deal by deal, each deal staging one
situation taken from real engine states: a lead, a response, a declaration window, the longest
legal action list, a refused answer that must be retried, a dropped stream that must be
resumed, and the end of the match. Every answer must be legal and come within ``move_ms``.

Then the bot is started a second time for the redirect checks, on a fresh listener: its stream
there is welcomed and redirected to a second listener, which must get the same Hello with the
ticket; that one redirects it again, to a closed port, and the bot must come back to its first
address with its first Hello (no ticket, no resume token). It then gets an empty match and exits.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import shlex
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import grpc

from kozel.core import convert, messages
from kozel.core.clock import Clock
from kozel.core.messages import PROTOCOL_VERSION, Outgoing
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
# The Hello fields a redirected bot must repeat unchanged.
HELLO_KEPT = ("protocol_version", "bot_name", "token", "max_matches", "skip_events", "client")
REDIRECT_WAIT_S = 15.0  # for the bot to reach the redirect target
FALLBACK_WAIT_S = 30.0  # for it to give up a closed target and come back to its first address
FALLBACK = "back to the first address when the redirect target is closed"


@dataclass
class Check:
    """One line of the report."""

    name: str
    passed: bool
    reason: str = ""

    def line(self) -> str:
        return f"{'PASS' if self.passed else 'FAIL'}  {self.name}" + (
            f": {self.reason}" if self.reason else ""
        )


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
                kind = {
                    Decision.LEAD: "lead",
                    Decision.RESPOND: "respond",
                    Decision.DECLARE: "declaration window",
                }[deal.decision]
                found.setdefault(kind, deal.clone())
                n = len(deal.legal_actions(SEAT))
                if longest is None or n > len(longest.legal_actions(SEAT)):
                    longest = deal.clone()
                seat = SEAT
            deal.apply(seat, rng.choice(deal.legal_actions(seat)))
        if len(found) == 3 and s > 200:
            break
    assert longest is not None and len(found) == 3
    return [Situation(k, found[k]) for k in ("lead", "respond", "declaration window")] + [
        Situation(f"longest legal list ({len(longest.legal_actions(SEAT))} actions)", longest)
    ]


class _Stream:
    """The bot's current stream, seen from the checker."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[tuple[rpb.PlayRequest, float] | None] = asyncio.Queue()
        self.outbox: asyncio.Queue[Outgoing | tuple[grpc.StatusCode, str] | None] = asyncio.Queue()


class _Servicer(referee_pb2_grpc.RefereeServiceServicer):
    def __init__(self) -> None:
        self.streams: asyncio.Queue[_Stream] = asyncio.Queue()
        self._readers: set[asyncio.Task[None]] = set()

    async def Play(
        self, request_iterator: AsyncIterator[rpb.PlayRequest], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Outgoing]:
        stream = _Stream()
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


@dataclass
class _Session:
    servicer: _Servicer
    move_ms: int
    stream: _Stream | None = None
    token: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    think_ms: list[float] = field(default_factory=list)

    async def accept(self, timeout: float) -> rpb.PlayRequest:
        self.stream = await asyncio.wait_for(self.servicer.streams.get(), timeout)
        return await self.receive(timeout)

    async def receive(self, timeout: float) -> rpb.PlayRequest:
        assert self.stream is not None
        got = await asyncio.wait_for(self.stream.inbox.get(), timeout)
        if got is None:
            raise ConnectionError("the bot closed the stream")
        return got[0]

    def send(self, msg: Outgoing) -> None:
        assert self.stream is not None
        self.stream.outbox.put_nowait(msg)

    def drop(self) -> None:
        assert self.stream is not None
        self.stream.outbox.put_nowait((grpc.StatusCode.UNAVAILABLE, "conformance: dropped"))

    async def answer(self, request_id: int, timeout: float) -> rpb.ActionReply:
        """The next answer (Leave and other messages are skipped), timing it."""
        start = time.monotonic()
        while True:
            left = timeout - (time.monotonic() - start)
            req = await self.receive(max(left, 0.001))
            if req.WhichOneof("message") == "action":
                self.think_ms.append((time.monotonic() - start) * 1000)
                return req.action


def _judge(
    deal: Deal, legal: list, reply: rpb.ActionReply, request_id: int, match_id: str
) -> str | None:
    """Why an answer is not acceptable, or None."""
    if reply.match_id != match_id or reply.request_id != request_id:
        return (
            f"answered request {reply.request_id} of match {reply.match_id!r}, expected "
            f"{request_id} of {match_id!r}"
        )
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


async def run_checks(
    address_ready: Callable[[str], None], *, move_ms: int = 2000, connect_timeout: float = 30.0
) -> list[Check]:
    """Serve on a free loopback port, call ``address_ready(address)`` (which starts or points
    the bot), and run every check; returns the report."""
    checks: list[Check] = []
    server, servicer, address = await _listen()
    try:
        address_ready(address)
        await _script(_Session(servicer, move_ms), checks, connect_timeout)
    except (TimeoutError, ConnectionError) as exc:
        checks.append(
            Check(
                "the bot stays connected", False, str(exc) or "no message within the time allowed"
            )
        )
    finally:
        await server.stop(0.5)
    first, second = await _listen(), await _listen()
    try:
        address_ready(first[2])
        await _redirect_script(_Session(first[1], move_ms), second, checks, connect_timeout)
    except (TimeoutError, ConnectionError) as exc:
        checks.append(
            Check(
                "the redirected bot stays connected",
                False,
                str(exc) or "no message within the time allowed",
            )
        )
    finally:
        await first[0].stop(0.5)
        await second[0].stop(0.5)
    return checks


async def _listen() -> tuple[grpc.aio.Server, _Servicer, str]:
    """A scripted listener on a free loopback port: (server, servicer, address)."""
    servicer = _Servicer()
    server = grpc.aio.server(options=server_options(ServerConfig()))
    add_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, servicer, f"127.0.0.1:{port}"


def _closed_address() -> str:
    """A loopback port that was just free (nothing listens on it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def _hello_problems(got: rpb.PlayRequest, first: rpb.Hello, ticket: str) -> list[str]:
    """How a Hello after a redirect (``ticket``) or a fallback (no ticket) differs from what
    it must be: the first Hello, with only ``redirect_ticket`` set to ``ticket``."""
    if got.WhichOneof("message") != "hello":
        return ["the first message is not Hello"]
    hello = got.hello
    problems = [f"{f} changed" for f in HELLO_KEPT if getattr(hello, f) != getattr(first, f)]
    if hello.WhichOneof("want") != first.WhichOneof("want") or getattr(
        hello, hello.WhichOneof("want") or "join_table"
    ) != getattr(first, first.WhichOneof("want") or "join_table"):
        problems.append("it wants another table, queue or ladder")
    if hello.resume_token:
        problems.append("it carries a resume_token")
    if hello.redirect_ticket != ticket:
        problems.append(
            f"redirect_ticket is {hello.redirect_ticket!r}, not the Redirect's ticket"
            if ticket
            else "it still carries a redirect_ticket"
        )
    return problems


async def _next_stream(
    servicers: dict[str, _Servicer], timeout: float
) -> tuple[str, _Stream] | None:
    """The next stream opened on any of the named listeners, or None after ``timeout``."""
    getters = {asyncio.ensure_future(sv.streams.get()): name for name, sv in servicers.items()}
    done, pending = await asyncio.wait(getters, timeout=timeout, return_when="FIRST_COMPLETED")
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    if not done:
        return None
    first, *others = done
    for task in others:  # two at once: the other waits for the next call
        servicers[getters[task]].streams.put_nowait(task.result())
    return getters[first], first.result()


async def _redirect_script(
    session: _Session,
    target: tuple[grpc.aio.Server, _Servicer, str],
    checks: list[Check],
    connect_timeout: float,
) -> None:
    """Redirect the bot to ``target``, check its Hello there, redirect it again to a closed
    port, and check that it comes back to its first address with its first Hello."""
    hello_req = await session.accept(connect_timeout)
    first = hello_req.hello
    ticket = secrets.token_urlsafe(16)
    session.send(messages.welcome("redirect", secrets.token_urlsafe(16), "conformance"))
    session.send(messages.redirect(target[2], ticket))
    assert session.stream is not None
    session.stream.outbox.put_nowait(None)  # the referee ends the stream after a Redirect

    listeners = {"target": target[1], "first": session.servicer}
    got = await _next_stream(listeners, REDIRECT_WAIT_S)
    why = ""
    if got is None:
        why = f"no stream at the Redirect's address within {REDIRECT_WAIT_S:g} s"
    elif got[0] == "first":
        why = "the bot came back to its first address instead of following the Redirect"
    else:
        there = _Session(target[1], session.move_ms, stream=got[1])
        hello = await there.receive(session.move_ms / 1000 + REDIRECT_WAIT_S)
        why = "; ".join(_hello_problems(hello, first, ticket))
        # Redirected again, to a closed port: the bot must go back to its FIRST address.
        there.send(messages.welcome("redirected", secrets.token_urlsafe(16), "conformance"))
        there.send(messages.redirect(_closed_address(), secrets.token_urlsafe(16)))
        there.stream.outbox.put_nowait(None)  # type: ignore[union-attr]
    checks.append(Check("follows a redirect with its ticket", not why, why))

    if got is None:
        checks.append(Check(FALLBACK, False, "not checked: the Redirect was not followed"))
        return
    back = got if got[0] == "first" else await _next_stream(listeners, FALLBACK_WAIT_S)
    why = ""
    if back is None:
        why = f"the bot did not come back to its first address within {FALLBACK_WAIT_S:g} s"
    elif back[0] == "target":
        why = "the bot went back to the redirecting referee, not to its first address"
    session.stream = back[1] if back is not None else None
    if back is not None and back[0] == "first":
        why = "; ".join(_hello_problems(await session.receive(FALLBACK_WAIT_S), first, ""))
    checks.append(Check(FALLBACK, not why, why))
    if session.stream is None:
        return
    # An empty match, so that a table bot has played its match and exits.
    match_id = secrets.token_hex(8)
    session.send(messages.welcome("back", session.token, "conformance"))
    session.send(_match_start(match_id, first.bot_name, session.move_ms))
    await _end_match(session, match_id)


def _match_start(match_id: str, bot_name: str, move_ms: int) -> rpb.PlayResponse:
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


async def _end_match(session: _Session, match_id: str) -> None:
    """MatchEnd, then the end of the stream, as the referee does after Leave."""
    session.send(
        messages.match_end(
            match_id, pb.MatchResult(reason=pb.MATCH_END_REASON_ABORTED, draw=True), "", b"\0" * 32
        )
    )
    await asyncio.sleep(0.2)
    assert session.stream is not None
    session.stream.outbox.put_nowait(None)


async def _script(session: _Session, checks: list[Check], connect_timeout: float) -> None:
    move_s = session.move_ms / 1000
    hello_req = await session.accept(connect_timeout)
    hello = hello_req.hello
    problems = []
    if hello_req.WhichOneof("message") != "hello":
        problems.append("the first message is not Hello")
    if hello.protocol_version != PROTOCOL_VERSION:
        problems.append(f"protocol_version is {hello.protocol_version}, not {PROTOCOL_VERSION}")
    if not 1 <= len(hello.bot_name) <= 64:
        problems.append("bot_name must be 1 to 64 characters")
    if hello.WhichOneof("want") != "join_table" or hello.join_table.table_id != TABLE:
        problems.append(f"Hello does not join table {TABLE!r}")
    checks.append(Check("hello", not problems, "; ".join(problems)))
    if problems and hello_req.WhichOneof("message") != "hello":
        return
    match_id = secrets.token_hex(8)
    session.send(messages.welcome("conformance", session.token, "conformance"))
    start = _match_start(match_id, hello.bot_name, session.move_ms)
    session.send(start)
    staged = situations()
    request_id = 0
    for index, sit in enumerate(staged):
        request_id += 1
        deal, msgs = _stage(match_id, index, sit.deal, request_id, session.move_ms)
        for m in msgs:
            session.send(m)
        try:
            reply = await session.answer(request_id, move_s)
            why = _judge(deal, list(deal.legal_actions(SEAT)), reply, request_id, match_id)
        except TimeoutError:
            why = f"no answer within move_ms ({session.move_ms} ms)"
        checks.append(Check(sit.name, why is None, why or ""))

    # A refused answer must be retried, for the same request, before the deadline.
    index = len(staged)
    request_id += 1
    deal, msgs = _stage(match_id, index, staged[0].deal, request_id, session.move_ms)
    for m in msgs:
        session.send(m)
    why = None
    try:
        await session.answer(request_id, move_s)
        session.send(
            messages.rejection(
                match_id,
                request_id,
                pb.ERROR_CODE_DOES_NOT_BEAT,
                "conformance: refused on purpose; answer again",
                retries_left=1,
            )
        )
        retry = await session.answer(request_id, move_s)
        why = _judge(deal, list(deal.legal_actions(SEAT)), retry, request_id, match_id)
    except TimeoutError:
        why = "no second answer after a Rejection with retry_allowed"
    checks.append(Check("rejection and retry", why is None, why or ""))

    # A dropped stream must be resumed with the resume token, and the resent request answered.
    index += 1
    request_id += 1
    deal, msgs = _stage(match_id, index, staged[1].deal, request_id, session.move_ms)
    for m in msgs:
        session.send(m)
    session.drop()
    why = None
    try:
        resumed = await session.accept(15.0)
        if resumed.WhichOneof("message") != "hello" or resumed.hello.resume_token != session.token:
            why = "the bot came back without Hello.resume_token from the Welcome"
        else:
            session.send(
                messages.welcome(
                    "conformance",
                    session.token,
                    "conformance",
                    resumed=True,
                    running_match_ids=[match_id],
                )
            )
            session.send(start)
            for m in msgs:
                session.send(messages.resent(m) if isinstance(m, messages.EncodedRequest) else m)
            reply = await session.answer(request_id, move_s)
            why = _judge(deal, list(deal.legal_actions(SEAT)), reply, request_id, match_id)
    except TimeoutError:
        why = "the bot did not resume within 15 s after its stream was dropped"
    checks.append(Check("resume after a dropped stream", why is None, why or ""))

    slow = [t for t in session.think_ms if t > session.move_ms]
    checks.append(
        Check(
            "deadline",
            not slow and bool(session.think_ms),
            f"slowest answer {max(session.think_ms, default=0):.0f} ms of {session.move_ms} ms"
            if slow or not session.think_ms
            else f"slowest answer {max(session.think_ms):.0f} ms",
        )
    )

    await _end_match(session, match_id)


def _stage(
    match_id: str, index: int, deal: Deal, request_id: int, move_ms: int
) -> tuple[Deal, list[Outgoing]]:
    obs = observe(deal, SEAT)
    legal = deal.legal_actions(SEAT)
    request = messages.encoded_decision(
        match_id,
        request_id,
        deal.decision,
        legal,
        move_ms=move_ms,
        bank_ms=0,
        retries_left=1,
        observation=convert.observation_to_pb(obs).SerializeToString(),
    )
    return deal, [
        rpb.PlayResponse(deal_start=messages.deal_start(match_id, index, deal, obs, totals=[0, 0])),
        request,
    ]


def check_command(
    command: str, *, move_ms: int = 2000, connect_timeout: float = 60.0
) -> tuple[list[Check], str]:
    """Start ``command`` as the bot (``{server}`` and ``{table}`` are filled in, or
    ``--server ADDR --table conformance`` appended), once for the match and once for the
    redirect checks, and check it; returns the report and the bots' output."""
    procs: list[subprocess.Popen[str]] = []

    def start(address: str) -> None:
        if "{server}" in command:
            cmd = command.format(server=address, table=TABLE)
            args = shlex.split(cmd)
        else:
            args = shlex.split(command) + ["--server", address, "--table", TABLE]
        procs.append(
            subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        )

    checks = asyncio.run(run_checks(start, move_ms=move_ms, connect_timeout=connect_timeout))
    outputs, why = [], []
    for run, proc in enumerate(procs, 1):
        try:
            out, _ = proc.communicate(timeout=15)
            if proc.returncode:
                why.append(f"run {run}: exit status {proc.returncode}")
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            why.append(f"run {run}: still running 15 s after MatchEnd and the end of its stream")
        outputs.append(f"--- run {run} ---\n{out}" if len(procs) > 1 else out)
    if procs:
        checks.append(Check("the bot exits after its match", not why, "; ".join(why)))
    return checks, "".join(outputs)
