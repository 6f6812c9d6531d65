"""The connection to the referee: one bidirectional ``Play`` stream per bot process.

:func:`play` runs a :class:`~kozel.sdk.session.Session` (the protocol as a sans-I/O state
machine: what to send, what each message means, what to do when a stream ends) over a
:class:`Transport` (gRPC by default), and one worker per match that feeds the match's
:class:`Bot` its messages in order and sends its answers.

grpc.aio rules followed here (see the project's engineering notes): the stream has one writer,
a request iterator fed by an :class:`asyncio.Queue`; it has one reader, the ``async for`` of
:meth:`_Client._stream`; reads are never given timeouts; a ``CancelledError`` is only absorbed
when it comes from a call this client cancelled itself and the task is not being cancelled.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Required, TypedDict, Unpack

import grpc

from kozel.sdk.bot import AsyncBot, Bot
from kozel.sdk.report import BotError, Report, strict_from_env
from kozel.sdk.session import (
    CLIENT_NAME,
    PROTOCOL_VERSION,
    REDIRECT_GRACE_S,
    Cancel,
    Deliver,
    Effect,
    Ended,
    Lost,
    Options,
    Send,
    Session,
    other_reply,
    reply_for,
)
from kozel.v1 import game_pb2, referee_pb2, referee_pb2_grpc

log = logging.getLogger("kozel.sdk")

__all__ = ["CLIENT_NAME", "PROTOCOL_VERSION", "REDIRECT_GRACE_S", "play", "run_bot"]

KEEPALIVE_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
)
_CLOSE_TIMEOUT_S = 5.0  # how long to wait for the referee to close the stream after Leave

BotFactory = Callable[[], Bot]
Requests = AsyncIterator[referee_pb2.PlayRequest]


class Call(Protocol):
    """One Play stream: its responses, in order; it ends cleanly or raises AioRpcError."""

    def __aiter__(self) -> AsyncIterator[referee_pb2.PlayResponse]: ...
    def cancel(self) -> bool: ...
    def done(self) -> bool: ...


class Connection(Protocol):
    """A channel to one address."""

    def play(self, requests: Requests) -> Call: ...
    async def close(self) -> None: ...


class Transport(Protocol):
    """How the client reaches a referee (gRPC; a script in tests)."""

    def connect(self, address: str) -> Connection: ...


@dataclass
class GrpcTransport:
    """Play streams over gRPC (TLS with ``credentials``)."""

    credentials: grpc.ChannelCredentials | None = None
    options: Sequence[tuple[str, Any]] = ()

    def connect(self, address: str) -> Connection:
        opts = list({**dict(KEEPALIVE_OPTIONS), **dict(self.options)}.items())
        if self.credentials is not None:
            channel = grpc.aio.secure_channel(address, self.credentials, options=opts)
        else:
            channel = grpc.aio.insecure_channel(address, options=opts)
        return _GrpcConnection(channel)


class _GrpcConnection:
    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.channel = channel
        self.stub = referee_pb2_grpc.RefereeServiceStub(channel)

    def play(self, requests: Requests) -> Call:
        return self.stub.Play(requests)

    async def close(self) -> None:
        await self.channel.close()


@dataclass
class _Worker:
    """One match's bot and the messages waiting for it, worked through in order."""

    match_id: str
    bot: Bot
    inbox: asyncio.Queue[tuple[str, Any]] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    pending: asyncio.Task[None] | None = None  # an AsyncBot's decision being awaited


class _Client:
    """One :func:`play` call: the session, its match workers and its successive streams."""

    def __init__(
        self,
        factory: BotFactory,
        address: str,
        options: Options,
        transport: Transport,
        *,
        strict: bool | None = None,
        report: Report | None = None,
        stop: asyncio.Event | None = None,
        drop_after_requests: int | None = None,
    ) -> None:
        self.factory = factory
        self.transport = transport
        self.report = report if report is not None else Report()
        self.session = Session(options, address, on_result=self._result)
        # Strict: an exception in the bot's code ends the run (BotError); else it is logged
        # and answered with legal index 0. Off by default on ladders only (rated play).
        self.strict = strict_from_env(options.join_ladder is None) if strict is None else strict
        self.stop = stop
        self.drop_after_requests = drop_after_requests  # a test hook: cancel once after this
        self.fatal: BotError | None = None  # set when the bot's code raised (strict)
        self.workers: dict[str, _Worker] = {}
        self.tasks: set[asyncio.Task[None]] = set()  # workers, ended matches' included
        self._out: asyncio.Queue[referee_pb2.PlayRequest | None] | None = None
        self._call: Call | None = None
        self._cancelled_by_us = False
        self._answered = 0  # answers sent on the current stream
        self._dropped_once = False
        self._close_timer: asyncio.TimerHandle | None = None

    # -- the session ---------------------------------------------------------------------------

    async def run(self) -> list[referee_pb2.MatchEnd]:
        loop = asyncio.get_running_loop()
        conn: Connection | None = None
        stopper = loop.create_task(self._stop_when(self.stop)) if self.stop is not None else None
        self.report.open()
        try:
            while True:
                self._check()
                if self.session.finished:
                    return self.session.results
                conn = conn or self.transport.connect(self.session.address)
                how, error = await self._one_stream(conn)
                self._check()
                code = error.code().name if error is not None else ""
                details = (error.details() or "") if error is not None else ""
                step = self.session.ended(how, loop.time(), code, details)
                self._apply(list(step.effects))
                if step.done:
                    return self._done()
                if step.fail:
                    if error is not None:
                        raise error
                    raise ConnectionError(step.fail)
                if step.reopen:
                    await conn.close()
                    conn = None
                    self._told_restart()
                log.info(
                    "stream %s (%s); reconnecting in %.2f s",
                    how.value,
                    code or "no error",
                    step.wait,
                )
                await asyncio.sleep(step.wait)
        finally:
            if stopper is not None:
                stopper.cancel()
            if conn is not None:
                await conn.close()
            await self._stop_workers()
            problems = sum(self.report.counts.values())
            log.log(logging.WARNING if problems else logging.INFO, "%s", self.report.summary())
            self.report.close()

    async def _one_stream(self, conn: Connection) -> tuple[Ended, grpc.aio.AioRpcError | None]:
        """Run one stream; an RPC error worth another stream is returned, else raised."""
        try:
            return await self._stream(conn), None
        except grpc.aio.AioRpcError as exc:
            if self.fatal is None and not self.session.may_retry(exc.code().name):
                raise
            return Ended.DROPPED, exc

    def _check(self) -> None:
        if self.fatal is not None:
            raise self.fatal

    def _done(self) -> list[referee_pb2.MatchEnd]:
        if self.session.matches and not self.session.options.reconnect:
            log.warning(
                "the stream ended with %d matches running and %d done; not reconnecting",
                len(self.session.matches),
                len(self.session.results),
            )
        return self.session.results

    def _told_restart(self) -> None:
        s = self.session
        if s.restart_why:
            log.warning("%s; starting a new session at %r", s.restart_why, s.first_address)
            s.restart_why = ""
        elif s.redirected:
            log.info("redirected to %r", s.address)

    async def _stop_when(self, event: asyncio.Event) -> None:
        """Once ``event`` is set: no new match; the running ones finish, then run() returns."""
        await event.wait()
        log.info(
            "asked to stop: %d running matches finish, no new one starts",
            len(self.session.matches),
        )
        self._apply(self.session.stop())

    async def _stop_workers(self) -> None:
        """Let ended matches finish their hooks, then stop every worker."""
        live = {self.workers[m].task for m in self.session.matches if m in self.workers}
        ending = self.tasks - live  # ended matches still running their last hooks
        if ending:
            await asyncio.wait(ending, timeout=_CLOSE_TIMEOUT_S)
        tasks = list(self.tasks)
        for task in tasks:
            if not task.done():
                task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    # -- one stream ----------------------------------------------------------------------------

    async def _stream(self, conn: Connection) -> Ended:
        """Run one stream until it ends; returns how it ended (or raises its RPC error)."""
        out: asyncio.Queue[referee_pb2.PlayRequest | None] = asyncio.Queue()
        self._out, self._cancelled_by_us, self._answered = out, False, 0
        self._apply(self.session.open())
        call = self._call = conn.play(_requests(out))
        try:
            async for response in call:
                self._received(response)
        except asyncio.CancelledError:
            if not self._cancelled_by_us or _task_cancelling():
                raise
            return self._after_self_cancel()
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.CANCELLED and self._cancelled_by_us:
                return self._after_self_cancel()
            raise
        finally:
            self._out = self._call = None
            out.put_nowait(None)  # end the request iterator if it is still running
            self._stop_close_timer()
        return Ended.REDIRECTED if self.session.redirect is not None else Ended.CLOSED

    def _received(self, response: referee_pb2.PlayResponse) -> None:
        if response.WhichOneof("message") == "welcome":
            _log_welcome(response.welcome)
        self._apply(self.session.receive(response))
        if self.session.finished:  # the referee closes after Leave; do not hang on it
            if self._close_timer is None:
                self._close_timer = asyncio.get_running_loop().call_later(
                    _CLOSE_TIMEOUT_S, self._cancel_call, "the referee did not close after Leave"
                )
        else:  # a match started after all
            self._stop_close_timer()

    def _stop_close_timer(self) -> None:
        if self._close_timer is not None:
            self._close_timer.cancel()
            self._close_timer = None

    def _after_self_cancel(self) -> Ended:
        if self.session.redirect is not None:
            return Ended.REDIRECTED
        return Ended.CLOSED if self.session.finished else Ended.DROPPED

    def _cancel_call(self, why: str) -> None:
        if self._call is not None and not self._call.done():
            log.info("cancelling the stream: %s", why)
            self._cancelled_by_us = True
            self._call.cancel()

    # -- the session's effects -----------------------------------------------------------------

    def _apply(self, effects: list[Effect]) -> None:
        for e in effects:
            if isinstance(e, Send):
                self._send(e.request)
            elif isinstance(e, Deliver):
                self._deliver(e)
            elif isinstance(e, Lost):
                self._lose(e)
            elif isinstance(e, Cancel):
                self._cancel_call(e.why)

    def _send(self, request: referee_pb2.PlayRequest) -> None:
        kind = request.WhichOneof("message")
        if kind == "leave":
            log.info(
                "sending Leave: no new match after the %d running (%d ended)",
                len(self.session.matches),
                len(self.session.results),
            )
        if self._out is None:
            if kind == "action":
                log.debug("not connected: answer to %s kept for the resent request", request)
            return
        self._out.put_nowait(request)
        if kind == "action":
            self._count_answer()

    def _count_answer(self) -> None:
        self._answered += 1
        if (
            self.drop_after_requests is not None
            and not self._dropped_once
            and self._answered >= self.drop_after_requests
        ):
            self._dropped_once = True
            self._cancel_call(f"test hook after {self._answered} answers")

    def _deliver(self, d: Deliver) -> None:
        w = self.workers.get(d.match_id)
        if w is None or d.new:
            if d.which == "match_start":
                log.info("match %s starts: seat %d of %d", d.match_id, d.msg.seat, d.msg.players)
            else:
                log.warning("match %s: %s before MatchStart; starting a bot", d.match_id, d.which)
            w = self._new_worker(d.match_id)
        w.inbox.put_nowait((d.which, d.msg))

    def _new_worker(self, match_id: str) -> _Worker:
        w = _Worker(match_id, self.factory())
        w.task = asyncio.get_running_loop().create_task(self._work(w), name=f"match-{match_id}")
        self.tasks.add(w.task)
        w.task.add_done_callback(self.tasks.discard)
        self.workers[match_id] = w
        return w

    def _lose(self, lost: Lost) -> None:
        log.warning("match %s lost: %s", lost.match_id, lost.why)
        w = self.workers.pop(lost.match_id, None)
        if w is not None and w.task is not None:
            w.task.cancel()

    def _result(self, match_id: str, end: referee_pb2.MatchEnd, verdict: str) -> None:
        self.report.result(match_id, verdict)
        log.info(
            "match %s ended: %s (%s; %d done)",
            match_id,
            verdict,
            game_pb2.MatchEndReason.Name(end.result.reason)
            .removeprefix("MATCH_END_REASON_")
            .lower(),
            len(self.session.results),
        )

    # -- per-match worker ----------------------------------------------------------------------

    async def _work(self, w: _Worker) -> None:
        """Feed one match's messages to its bot, strictly in order."""
        try:
            while True:
                which, msg = await w.inbox.get()
                if which == "decision":
                    await self._decide(w, msg)
                elif which == "rejection":
                    self._hook(w, "on_rejection", msg)
                    await self._retry(w, msg)
                else:
                    self._hook(w, f"on_{which}", msg)
                if which == "match_end":
                    self.workers.pop(w.match_id, None)
                    return
        finally:
            if w.pending is not None:
                w.pending.cancel()

    def _decide_later(self, w: _Worker, request: referee_pb2.DecisionRequest) -> None:
        """An AsyncBot's decision runs beside the worker (the hooks go on); a newer one
        replaces it."""
        if w.pending is not None:
            w.pending.cancel()
        w.pending = asyncio.get_running_loop().create_task(self._decide(w, request, True))

    async def _decide(
        self, w: _Worker, request: referee_pb2.DecisionRequest, awaited: bool = False
    ) -> None:
        rid = request.request_id
        if not self.session.current(w.match_id, rid):
            log.info("match %s: request %d superseded before the bot saw it", w.match_id, rid)
            return
        if isinstance(w.bot, AsyncBot) and not awaited:
            self._decide_later(w, request)
            return
        try:
            if isinstance(w.bot, AsyncBot):
                choice = await w.bot.decide(request)
            else:
                choice = await asyncio.to_thread(w.bot.choose, request)
            reply = reply_for(request, choice)
        except Exception as exc:  # noqa: BLE001 - whatever the bot raised is reported
            if not self._bot_failed(w, rid, "choose", exc):
                return
            reply = referee_pb2.ActionReply(
                match_id=request.match_id, request_id=rid, legal_index=0
            )
        refused = self.session.refused_answers(w.match_id, rid)
        if refused and reply in refused and not self.strict:
            reply = other_reply(request, refused)
            log.warning(
                "match %s: the bot repeated a refused answer; sending %s instead (strict off)",
                w.match_id,
                reply.WhichOneof("choice"),
            )
        if not self.session.current(w.match_id, rid) and w.match_id in self.session.matches:
            log.warning(
                "match %s: request %d was superseded while the bot thought (timeout?)",
                w.match_id,
                rid,
            )
        self._apply(self.session.answered(reply))

    async def _retry(self, w: _Worker, rej: referee_pb2.Rejection) -> None:
        code = game_pb2.ErrorCode.Name(rej.code)
        self.report.refusal(w.match_id, rej.request_id, code, rej.message)
        log.warning(
            "match %s: answer to request %d refused (%s): %s",
            w.match_id,
            rej.request_id,
            code,
            rej.message,
        )
        request = self.session.rejected(rej)
        if request is not None:
            await self._decide(w, request)

    def _hook(self, w: _Worker, name: str, msg: Any) -> None:
        try:
            getattr(w.bot, name)(msg)
        except Exception as exc:  # noqa: BLE001 - whatever the bot raised is reported
            self._bot_failed(w, getattr(msg, "request_id", 0), name, exc)

    def _bot_failed(self, w: _Worker, request_id: int, what: str, exc: Exception) -> bool:
        """The bot's ``what`` raised: count and log it. Strict, the run stops (False);
        else the client carries on (True)."""
        problem = self.report.exception(w.match_id, request_id, what, exc)
        if not self.strict:
            log.error(
                "match %s: %s failed on request %d (strict off: carrying on%s)",
                w.match_id,
                what,
                request_id,
                ", answering legal index 0" if what == "choose" else "",
                exc_info=exc,
            )
            return True
        log.error(
            "match %s: %s failed on request %d; stopping (strict)",
            w.match_id,
            what,
            request_id,
            exc_info=exc,
        )
        if self.fatal is None:
            self.fatal = BotError(
                f"the bot's {what} raised in match {w.match_id}, request {request_id}: "
                f"{problem.line()}"
            )
            self.fatal.__cause__ = exc
            self._cancel_call(f"the bot's {what} raised")
        return False


async def _requests(
    out: asyncio.Queue[referee_pb2.PlayRequest | None],
) -> Requests:
    """The stream's only writer: whatever is queued, until ``None``."""
    while (msg := await out.get()) is not None:
        yield msg


def _log_welcome(msg: referee_pb2.Welcome) -> None:
    if msg.protocol_version and msg.protocol_version != PROTOCOL_VERSION:
        log.warning(
            "the referee speaks protocol %d, this client %d", msg.protocol_version, PROTOCOL_VERSION
        )
    log.info(
        "welcome: session %s%s (referee %s)",
        msg.session_id,
        ", resumed" if msg.resumed else "",
        msg.server_version,
    )


def _task_cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class PlayArgs(TypedDict, total=False):
    """The keyword arguments of :func:`play` and :func:`run_bot` (written once)."""

    name: Required[str]
    join_table: str | None
    join_queue: tuple[str | game_pb2.Ruleset, int] | None
    join_ladder: str | None
    token: str
    max_matches: int
    matches: int | None
    reconnect: bool
    grace_s: float
    redirect_grace_s: float
    skip_events: bool
    channel_options: Sequence[tuple[str, Any]] | None
    credentials: grpc.ChannelCredentials | None
    drop_after_requests: int | None
    strict: bool | None
    report: Report | None
    transport: Transport | None


_OPTION_KEYS = set(Options.__dataclass_fields__)


async def play(
    factory: BotFactory,
    address: str,
    *,
    stop: asyncio.Event | None = None,
    **args: Unpack[PlayArgs],
) -> list[referee_pb2.MatchEnd]:
    """Connect to the referee at ``address`` and play until done; returns the MatchEnds.

    ``factory()`` makes one :class:`Bot` per match (a Bot subclass itself will do).
    Join a named table (``join_table``), a queue (``join_queue=(preset or Ruleset,
    players)``) or a ladder (``join_ladder`` and ``token``). ``max_matches`` matches run at
    once on the stream. With ``matches`` the client sends Leave once that many are started or
    done and returns after that many MatchEnds; without it, a table bot plays its table's one
    match and a queue bot plays until the referee closes the stream. A dropped stream
    (UNAVAILABLE, or an early end) is resumed with the last Welcome's resume_token for up to
    ``grace_s`` seconds when ``reconnect`` is on (default). ``drop_after_requests`` is a test
    hook: cancel the stream once after that many answers, to exercise resuming.
    ``credentials`` (``grpc.ssl_channel_credentials``) connect over TLS, with a client
    certificate for mutual TLS; ``channel_options`` are gRPC channel arguments; ``transport``
    replaces gRPC altogether (tests script one). ``skip_events`` asks the referee for no Event
    messages (``Bot.on_event`` is then never called; every request still carries the whole
    observation). A ``Redirect`` is followed: the same Hello goes to its address with
    ``redirect_ticket`` set; if that referee cannot be reached for ``redirect_grace_s``
    seconds (3), refuses the ticket, or loses the stream for good, the client returns to
    ``address`` with its first Hello.

    When a resume is refused (``NOT_FOUND``: the referee restarted, or a shared address sent
    the bot to another referee) the client starts a new session at ``address`` with its first
    Hello; so does a queue or ladder bot whose referee stays unreachable past ``grace_s``, and
    it then keeps trying (backoff up to 5 s, with jitter) until a referee answers. Matches
    of the lost session are over for the bot. Errors that cannot pass (a bad token, an unknown
    table or ladder, a protocol refusal) end the run with their gRPC status.

    ``strict`` (default: on, except on a ladder; ``KOZEL_STRICT=1``/``0`` overrides the
    default): an exception raised by the bot (``choose`` or a hook), or an answer that is not
    a legal index, ends the run with :class:`BotError` after logging it; a refused answer
    repeated is sent as it is (the referee then decides). With ``strict=False`` the client
    logs the exception, answers legal index 0 and replaces a repeated refused answer with
    another legal one. Either way each problem is counted in ``report`` (a
    :class:`~kozel.sdk.report.Report`, filled in place) and, with ``KOZEL_REPORT`` set,
    written to that file. ``stop``: once set, no new match starts; the running ones finish
    and the call returns.
    """
    options = Options(**{k: v for k, v in args.items() if k in _OPTION_KEYS})  # type: ignore[arg-type]
    transport = args.get("transport") or GrpcTransport(
        args.get("credentials"), tuple(args.get("channel_options") or ())
    )
    client = _Client(
        factory,
        address,
        options,
        transport,
        strict=args.get("strict"),
        report=args.get("report"),
        stop=stop,
        drop_after_requests=args.get("drop_after_requests"),
    )
    return await client.run()


def run_bot(
    factory: BotFactory, address: str, **args: Unpack[PlayArgs]
) -> list[referee_pb2.MatchEnd]:
    """:func:`play` for scripts: the same arguments (but ``stop``), in its own event loop."""
    return asyncio.run(play(factory, address, **args))
