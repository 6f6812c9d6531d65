"""The connection to the referee: one bidirectional ``Play`` stream per bot process.

:func:`play` opens the stream, sends ``Hello``, routes every message to the :class:`Bot` of
its match (one object per match, made by a factory), answers each ``DecisionRequest`` and, when
the stream drops, resumes the session with the ``resume_token`` of the last ``Welcome``.
A ``Redirect`` (a ladder shared by several referees) is followed with the same ``Hello`` plus
``redirect_ticket``; when the redirected referee cannot be reached, or its stream is lost and
cannot be resumed, the client goes back to its first address with its first ``Hello``.

grpc.aio rules followed here (see the project's engineering notes): the stream has one writer,
a request iterator fed by an :class:`asyncio.Queue`; it has one reader, the ``async for`` of
:meth:`_Client._stream`; reads are never given timeouts; a ``CancelledError`` is only absorbed
when it comes from a call this client cancelled itself and the task is not being cancelled.
"""

from __future__ import annotations

import asyncio
import logging
import operator
import random
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import grpc

from kozel.sdk.bot import Bot
from kozel.sdk.report import BotError, Report, strict_from_env
from kozel.v1 import game_pb2, referee_pb2, referee_pb2_grpc

log = logging.getLogger("kozel.sdk")

PROTOCOL_VERSION = 1
CLIENT_NAME = "kozel-python-sdk/0.1"
KEEPALIVE_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
)
# Statuses after which the session may still be resumed: the network dropped (UNAVAILABLE, or
# INTERNAL/UNKNOWN when a send races with the stream dying), or the referee cut a stream that
# read too slowly. If the session is gone, the resume itself is refused with NOT_FOUND.
_RESUMABLE = (
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNKNOWN,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
)
_BACKOFF_START_S = 0.05
_BACKOFF_MAX_S = 2.0
_ADRIFT_BACKOFF_MAX_S = 5.0  # between tries while no referee answers after losing one
REDIRECT_GRACE_S = 3.0  # how long a redirected address is retried before the first one again
_CLOSE_TIMEOUT_S = 5.0  # how long to wait for the referee to close the stream after Leave
_ANSWERS_KEPT = 8  # answers remembered per match, to answer resent requests again

BotFactory = Callable[[], Bot]
Message = Any  # one of the referee_pb2 messages inside a PlayResponse

# How one stream ended.
_CLOSED = "closed"  # the referee ended it cleanly
_DROPPED = "dropped"  # it broke, or this client cancelled it (test hook, close timeout)
_REDIRECTED = "redirected"  # the referee sent a Redirect


class _Match:
    """Client-side state of one match: its bot, an inbox worked through in order, and the
    answers already given (to answer a resent request again)."""

    def __init__(self, match_id: str, bot: Bot) -> None:
        self.match_id = match_id
        self.bot = bot
        self.inbox: asyncio.Queue[tuple[str, Message]] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None
        self.deal_index = -1  # the last DealStart delivered
        self.start: referee_pb2.MatchStart | None = None
        self.request: referee_pb2.DecisionRequest | None = None  # the latest request
        self.asked: set[int] = set()  # request ids queued for the bot
        self.answers: dict[int, referee_pb2.ActionReply] = {}
        self.refused: dict[int, list[referee_pb2.ActionReply]] = {}

    def post(self, which: str, msg: Message) -> None:
        self.inbox.put_nowait((which, msg))


class _Client:
    """One :func:`play` call: the session, its matches and its successive streams."""

    def __init__(
        self,
        factory: BotFactory,
        address: str,
        *,
        name: str,
        join_table: str | None,
        join_queue: tuple[str | game_pb2.Ruleset, int] | None,
        token: str,
        max_matches: int,
        matches: int | None,
        reconnect: bool,
        grace_s: float,
        channel_options: Sequence[tuple[str, Any]] | None,
        drop_after_requests: int | None,
        join_ladder: str | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        skip_events: bool = False,
        redirect_grace_s: float = REDIRECT_GRACE_S,
        strict: bool | None = None,
        report: Report | None = None,
        stop: asyncio.Event | None = None,
    ) -> None:
        if sum(x is not None for x in (join_table, join_queue, join_ladder)) != 1:
            raise ValueError("give exactly one of join_table, join_queue and join_ladder")
        self.join_ladder = join_ladder
        self.credentials = credentials
        self.skip_events = skip_events
        self.factory = factory
        self.first_address = address  # kept through redirects, to fall back to
        self.address = address
        self.ticket = ""  # Redirect.ticket, sent in the next Hello until a Welcome
        self.redirect_grace_s = redirect_grace_s
        self.redirects = 0  # redirects followed (for tests and logs)
        self.fallbacks = 0  # returns to the first address
        self.name = name
        self.join_table = join_table
        self.join_queue = join_queue
        self.token = token
        self.max_matches = max_matches
        # A table holds one match, so a table bot stops after it unless told otherwise.
        self.target = matches if matches is not None else (1 if join_table is not None else None)
        self.reconnect = reconnect
        self.grace_s = grace_s
        options = dict(KEEPALIVE_OPTIONS)
        options.update(dict(channel_options or ()))
        self.options = list(options.items())
        self.drop_after_requests = drop_after_requests
        # Strict: an exception in the bot's code ends the run (BotError); else it is logged
        # and answered with legal index 0. Off by default on ladders only (rated play).
        self.strict = strict_from_env(join_ladder is None) if strict is None else strict
        self.report = report if report is not None else Report()
        self.stop = stop
        self.fatal: BotError | None = None  # set when the bot's code raised (strict)
        self.ever_welcomed = False  # a referee welcomed this bot once
        self.adrift = False  # the referee was lost: retried without end, fresh sessions
        self.restarts = 0  # new sessions at the first address (for tests and logs)

        self.matches: dict[str, _Match] = {}  # running matches
        self.done_ids: set[str] = set()  # ended or lost matches (late duplicates are ignored)
        self.tasks: set[asyncio.Task[None]] = set()  # workers, ended matches' included
        self.results: list[referee_pb2.MatchEnd] = []
        self.resume_token = ""
        self.welcomed = False  # a Welcome arrived on the current stream
        self.redirect: referee_pb2.Redirect | None = None
        self.leave_sent = False
        self.lost = 0  # matches given up without a MatchEnd
        self.progress = False  # a match message arrived on the current stream
        self._unconfirmed: set[str] = set()  # running matches not yet announced after a resume
        self.drops = 0  # streams lost and resumed (for tests and logs)
        self._resuming = False
        self._dropped_once = False
        self._out: asyncio.Queue[referee_pb2.PlayRequest | None] | None = None
        self._call: Any = None
        self._cancelled_by_us = False
        self._answered = 0  # answers sent on the current stream

    # -- the session ---------------------------------------------------------------------------

    async def run(self) -> list[referee_pb2.MatchEnd]:
        loop = asyncio.get_running_loop()
        channel: grpc.aio.Channel | None = None
        down_since: float | None = None
        delay = _BACKOFF_START_S
        stopper = loop.create_task(self._stop_when(self.stop)) if self.stop is not None else None
        self.report.open()
        try:
            while True:
                if self.fatal is not None:
                    raise self.fatal
                if self._finished():
                    return self.results
                if channel is None:
                    channel = self._channel()
                    stub = referee_pb2_grpc.RefereeServiceStub(channel)
                error: grpc.aio.AioRpcError | None = None
                try:
                    outcome = await self._stream(stub)
                except grpc.aio.AioRpcError as exc:
                    if self.fatal is None and not self._may_retry(exc):
                        raise
                    error, outcome = exc, _DROPPED
                if self.fatal is not None:
                    raise self.fatal
                if outcome == _CLOSED:
                    # The referee ended the stream on purpose: matches it did not announce
                    # again after a resume are over (their MatchEnd was lost meanwhile).
                    for match_id in self._unconfirmed & set(self.matches):
                        self._lose(self.matches[match_id], "not resumed by the referee")
                if self._finished():
                    return self.results
                running = list(self.matches.values())
                fall_back = self._redirected and (
                    # a refused ticket or resume there, or a clean close with nothing left to
                    # play there (the ladder goes on at the first address)
                    (error is not None and error.code() not in _RESUMABLE)
                    or (outcome == _CLOSED and not running and not self.leave_sent)
                )
                refused = error is not None and self._resume_refused(error)
                if outcome == _REDIRECTED or fall_back or refused:
                    await channel.close()
                    channel = None
                    if outcome == _REDIRECTED:
                        self._follow_redirect()
                    elif fall_back:
                        self._fall_back(error)
                    else:
                        assert error is not None
                        self._restart(f"the referee refused to resume the session: {_why(error)}")
                    down_since, delay = None, _BACKOFF_START_S
                    continue
                if outcome == _CLOSED and self.target is None and not running:
                    return self.results  # the referee is done with us
                if not self.reconnect:
                    log.warning(
                        "the stream ended with %d matches running and %d of %s done; "
                        "not reconnecting",
                        len(running),
                        len(self.results),
                        self.target if self.target is not None else "any",
                    )
                    return self.results
                now = loop.time()
                # A welcomed stream restarts the grace period, unless the referee closed it
                # without a word about any match (that would loop forever).
                fruitless = outcome == _CLOSED and not self.progress
                if (self.welcomed and not fruitless) or down_since is None:
                    down_since, delay = now, _BACKOFF_START_S
                if self.welcomed:
                    self.drops += 1
                self.welcomed = False
                grace = self.redirect_grace_s if self._redirected else self.grace_s
                left = down_since + grace - now
                if left <= 0 and (self._redirected or self._keeps_trying()):
                    await channel.close()
                    channel = None
                    if self._redirected:
                        self._fall_back(error)
                        down_since, delay = None, _BACKOFF_START_S
                        continue
                    if self.resume_token or self.matches:
                        self._restart(f"no referee answered at {self.address} for {grace:g} s")
                    self.adrift = True  # from now on, retried until a referee answers
                elif left <= 0:
                    if error is not None:
                        raise error
                    raise ConnectionError(
                        f"the stream to {self.address} ended and could not be resumed within "
                        f"{self.grace_s:g} s"
                    )
                cap = _ADRIFT_BACKOFF_MAX_S if self.adrift else _BACKOFF_MAX_S
                wait = min(delay, cap) * random.uniform(0.75, 1.25)
                if not self.adrift:
                    wait = min(left, wait)
                log.info(
                    "stream %s (%s); reconnecting in %.2f s",
                    outcome,
                    error.code().name if error is not None else "no error",
                    wait,
                )
                await asyncio.sleep(wait)
                delay = min(delay * 2, cap)
        finally:
            if stopper is not None:
                stopper.cancel()
            if channel is not None:
                await channel.close()
            await self._stop_workers()
            problems = sum(self.report.counts.values())
            log.log(logging.WARNING if problems else logging.INFO, "%s", self.report.summary())
            self.report.close()

    def _channel(self) -> grpc.aio.Channel:
        if self.credentials is not None:
            return grpc.aio.secure_channel(self.address, self.credentials, options=self.options)
        return grpc.aio.insecure_channel(self.address, options=self.options)

    def _may_retry(self, exc: grpc.aio.AioRpcError) -> bool:
        """Whether a stream that failed with ``exc`` is worth another one."""
        return self.reconnect and (
            exc.code() in _RESUMABLE or self._redirected or self._resume_refused(exc)
        )

    def _resume_refused(self, exc: grpc.aio.AioRpcError) -> bool:
        """The referee does not know the session we tried to resume: it ended there (its
        referee restarted), or a shared address sent the Hello to another referee."""
        return self._resuming and exc.code() == grpc.StatusCode.NOT_FOUND

    def _keeps_trying(self) -> bool:
        """Whether a lost referee is waited for without end: a queue or ladder bot that has
        been welcomed once (a table lives and dies with its referee; an address that never
        answered is a mistake to report)."""
        return self.adrift or (self.ever_welcomed and self.join_table is None)

    async def _stop_when(self, event: asyncio.Event) -> None:
        """Once ``event`` is set: no new match; the running ones finish, then run() returns."""
        await event.wait()
        self.target = len(self.results) + self.lost + len(self.matches)
        log.info("asked to stop: %d running matches finish, no new one starts", len(self.matches))
        if self.matches:
            self._send_leave()
        else:
            self._cancel_call("asked to stop with no match running")

    def _finished(self) -> bool:
        """All wanted matches have ended and none is running."""
        return (
            self.target is not None
            and len(self.results) + self.lost >= self.target
            and not self.matches
        )

    @property
    def _redirected(self) -> bool:
        """The current address came from a Redirect."""
        return self.address != self.first_address or bool(self.ticket)

    def _follow_redirect(self) -> None:
        """Point the next stream at the Redirect's address, with its ticket."""
        assert self.redirect is not None
        for m in list(self.matches.values()):  # a Redirect comes to idle streams only
            self._lose(m, "redirected to another referee")
        address, ticket = self.redirect.address, self.redirect.ticket
        self.redirect, self.resume_token, self.leave_sent = None, "", False
        if not address or not ticket:
            self._fall_back(None, "a Redirect without an address or ticket")
            return
        self.redirects += 1
        log.info("redirected to %r", address)
        self.address, self.ticket = address, ticket

    def _fall_back(self, error: grpc.aio.AioRpcError | None, why: str = "") -> None:
        """Back to the first address with the first Hello (no ticket, no resume token)."""
        self.fallbacks += 1
        why = why or (_why(error) if error is not None else "it closed")
        self._restart(f"redirected referee {self.address!r} lost ({why})")

    def _restart(self, why: str) -> None:
        """A new session at the first address with the first Hello: the old one is gone, and
        with it the matches it ran (its referee finished or aborted them)."""
        for m in list(self.matches.values()):
            self._lose(m, "its session ended with its referee")
        log.warning("%s; starting a new session at %r", why, self.first_address)
        self.restarts += 1
        self.address, self.ticket, self.resume_token = self.first_address, "", ""
        self.leave_sent = False  # a new session: Leave again once enough matches run

    async def _stop_workers(self) -> None:
        """Let ended matches finish their hooks, then stop every worker."""
        live = {m.task for m in self.matches.values()}
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

    def _hello(self) -> referee_pb2.PlayRequest:
        hello = referee_pb2.Hello(
            protocol_version=PROTOCOL_VERSION,
            bot_name=self.name,
            token=self.token,
            resume_token=self.resume_token,
            redirect_ticket="" if self.resume_token else self.ticket,
            max_matches=self.max_matches,
            client=CLIENT_NAME,
            skip_events=self.skip_events,
        )
        if self.join_table is not None:
            hello.join_table.table_id = self.join_table
        elif self.join_ladder is not None:
            hello.join_ladder.ladder = self.join_ladder
        else:
            assert self.join_queue is not None
            ruleset, players = self.join_queue
            if isinstance(ruleset, str):
                ruleset = game_pb2.Ruleset(preset=ruleset)
            hello.join_queue.ruleset.CopyFrom(ruleset)
            hello.join_queue.players = players
        return referee_pb2.PlayRequest(hello=hello)

    async def _stream(self, stub: referee_pb2_grpc.RefereeServiceStub) -> str:
        """Run one stream until it ends; returns how it ended (or raises its RPC error)."""
        out: asyncio.Queue[referee_pb2.PlayRequest | None] = asyncio.Queue()
        self._resuming = bool(self.resume_token)
        self.progress = False
        out.put_nowait(self._hello())
        if self.leave_sent:
            out.put_nowait(referee_pb2.PlayRequest(leave=referee_pb2.Leave()))
        call = stub.Play(_requests(out))
        self._out, self._call, self._cancelled_by_us, self._answered = out, call, False, 0
        loop = asyncio.get_running_loop()
        close_timer: asyncio.TimerHandle | None = None
        try:
            async for response in call:
                self._dispatch(response)
                if self.redirect is not None:
                    self._cancel_call("following a Redirect")
                elif self._finished():
                    self._send_leave()
                    if close_timer is None:  # the referee closes after Leave; do not hang
                        close_timer = loop.call_later(
                            _CLOSE_TIMEOUT_S,
                            self._cancel_call,
                            "the referee did not close after Leave",
                        )
                elif close_timer is not None:  # a match started after all
                    close_timer.cancel()
                    close_timer = None
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
            if close_timer is not None:
                close_timer.cancel()
        return _REDIRECTED if self.redirect is not None else _CLOSED

    def _after_self_cancel(self) -> str:
        if self.redirect is not None:
            return _REDIRECTED
        return _CLOSED if self._finished() else _DROPPED

    def _cancel_call(self, why: str) -> None:
        if self._call is not None and not self._call.done():
            log.info("cancelling the stream: %s", why)
            self._cancelled_by_us = True
            self._call.cancel()

    def _send(self, msg: referee_pb2.PlayRequest) -> bool:
        if self._out is None:
            return False
        self._out.put_nowait(msg)
        return True

    def _send_leave(self) -> None:
        if not self.leave_sent:
            self.leave_sent = True
            log.info(
                "sending Leave: no new match after the %d running (%d ended)",
                len(self.matches),
                len(self.results),
            )
            self._send(referee_pb2.PlayRequest(leave=referee_pb2.Leave()))

    def _send_reply(self, reply: referee_pb2.ActionReply) -> None:
        if not self._send(referee_pb2.PlayRequest(action=reply)):
            log.debug(
                "not connected: answer to %s/%d kept for the resent request",
                reply.match_id,
                reply.request_id,
            )
            return
        self._answered += 1
        if (
            self.drop_after_requests is not None
            and not self._dropped_once
            and self._answered >= self.drop_after_requests
        ):
            self._dropped_once = True
            self._cancel_call(f"test hook after {self._answered} answers")

    # -- routing -------------------------------------------------------------------------------

    def _dispatch(self, response: referee_pb2.PlayResponse) -> None:
        which = response.WhichOneof("message")
        if which is None:
            log.debug("ignoring an empty or unknown message")
            return
        msg = getattr(response, which)
        if which == "welcome":
            self._on_welcome(msg)
        elif which == "redirect":
            self.redirect = msg
        else:
            self._route(which, msg)

    def _on_welcome(self, msg: referee_pb2.Welcome) -> None:
        self.welcomed = self.ever_welcomed = True
        self.adrift = False
        if msg.protocol_version and msg.protocol_version != PROTOCOL_VERSION:
            log.warning(
                "the referee speaks protocol %d, this client %d",
                msg.protocol_version,
                PROTOCOL_VERSION,
            )
        if self._resuming and not msg.resumed:
            for m in list(self.matches.values()):
                self._lose(m, "the referee did not resume the session")
        self._unconfirmed = set(self.matches) if msg.resumed else set()
        self.resume_token = msg.resume_token
        self.ticket = ""  # used: a later drop here resumes with the resume token
        log.info(
            "welcome: session %s%s (referee %s)",
            msg.session_id,
            ", resumed" if msg.resumed else "",
            msg.server_version,
        )

    def _hook(self, m: _Match, name: str, msg: Message) -> None:
        try:
            getattr(m.bot, name)(msg)
        except Exception as exc:  # noqa: BLE001 - whatever the bot raised is reported
            self._bot_failed(m, getattr(msg, "request_id", 0), name, exc)

    def _bot_failed(self, m: _Match, request_id: int, what: str, exc: Exception) -> bool:
        """The bot's ``what`` raised: count and log it. Strict, the run stops (False);
        else the client carries on (True)."""
        problem = self.report.exception(m.match_id, request_id, what, exc)
        if not self.strict:
            log.error(
                "match %s: %s failed on request %d (strict off: carrying on%s)",
                m.match_id,
                what,
                request_id,
                ", answering legal index 0" if what == "choose" else "",
                exc_info=exc,
            )
            return True
        log.error(
            "match %s: %s failed on request %d; stopping (strict)",
            m.match_id,
            what,
            request_id,
            exc_info=exc,
        )
        if self.fatal is None:
            self.fatal = BotError(
                f"the bot's {what} raised in match {m.match_id}, request {request_id}: "
                f"{problem.line()}"
            )
            self.fatal.__cause__ = exc
            self._cancel_call(f"the bot's {what} raised")
        return False

    def _lose(self, m: _Match, why: str) -> None:
        log.warning("match %s lost: %s", m.match_id, why)
        del self.matches[m.match_id]
        self.done_ids.add(m.match_id)
        self.lost += 1
        assert m.task is not None
        m.task.cancel()

    def _new_match(self, match_id: str) -> _Match:
        m = _Match(match_id, self.factory())
        m.task = asyncio.get_running_loop().create_task(self._work(m), name=f"match-{match_id}")
        self.tasks.add(m.task)
        m.task.add_done_callback(self.tasks.discard)
        self.matches[match_id] = m
        return m

    def _route(self, which: str, msg: Message) -> None:
        match_id = msg.match_id
        self.progress = True
        self._unconfirmed.discard(match_id)
        if match_id in self.done_ids:
            return  # late duplicates of an ended match
        m = self.matches.get(match_id)
        if which == "match_start":
            if m is not None:
                log.debug("match %s: MatchStart again (resumed)", match_id)
                return
            log.info("match %s starts: seat %d of %d", match_id, msg.seat, msg.players)
            m = self._new_match(match_id)
            m.start = msg
            m.post(which, msg)
            self._want_leave()
            return
        if m is None:
            if which == "match_end":
                log.warning("MatchEnd for unknown match %s", match_id)
                self.results.append(msg)
                return
            log.warning("match %s: %s before MatchStart; starting a bot", match_id, which)
            m = self._new_match(match_id)
        if which == "deal_start":
            if msg.deal_index <= m.deal_index:
                return  # resent after a resume
            m.deal_index = msg.deal_index
        elif which == "decision":
            rid = msg.request_id
            m.request = msg
            if rid in m.answers:
                log.debug("match %s: request %d again; same answer", match_id, rid)
                self._send_reply(m.answers[rid])
                return
            if rid in m.asked:
                return  # the bot is on it; the answer goes out when ready
            m.asked.add(rid)
        elif which == "match_end":
            del self.matches[match_id]
            self.done_ids.add(match_id)
            self.results.append(msg)
            verdict = _verdict(m.start, msg.result)
            self.report.result(match_id, verdict)
            log.info(
                "match %s ended: %s (%s; %d done)",
                match_id,
                verdict,
                game_pb2.MatchEndReason.Name(msg.result.reason)
                .removeprefix("MATCH_END_REASON_")
                .lower(),
                len(self.results),
            )
        m.post(which, msg)

    def _want_leave(self) -> None:
        """Send Leave once the running matches cover the wanted number."""
        if self.target is None:
            return
        if len(self.results) + self.lost + len(self.matches) >= self.target:
            self._send_leave()

    # -- per-match worker ----------------------------------------------------------------------

    async def _work(self, m: _Match) -> None:
        """Feed one match's messages to its bot, strictly in order."""
        while True:
            which, msg = await m.inbox.get()
            if which == "decision":
                await self._decide(m, msg)
            elif which == "rejection":
                self._hook(m, "on_rejection", msg)
                await self._retry(m, msg)
            else:
                self._hook(m, f"on_{which}", msg)
            if which == "match_end":
                m.answers.clear()
                m.refused.clear()
                return

    async def _decide(self, m: _Match, request: referee_pb2.DecisionRequest) -> None:
        rid = request.request_id
        if m.request is not None and m.request.request_id != rid:
            log.info("match %s: request %d superseded before the bot saw it", m.match_id, rid)
            return
        try:
            choice = await asyncio.to_thread(m.bot.choose, request)
            reply = _reply_for(request, choice)
        except Exception as exc:  # noqa: BLE001 - whatever the bot raised is reported
            if not self._bot_failed(m, rid, "choose", exc):
                return
            reply = referee_pb2.ActionReply(
                match_id=request.match_id, request_id=rid, legal_index=0
            )
        refused = m.refused.get(rid)
        if refused and reply in refused and not self.strict:
            reply = _other_reply(request, refused)
            log.warning(
                "match %s: the bot repeated a refused answer; sending %s instead (strict off)",
                m.match_id,
                reply.WhichOneof("choice"),
            )
        m.answers[rid] = reply
        while len(m.answers) > _ANSWERS_KEPT:
            del m.answers[next(iter(m.answers))]
        if self.matches.get(m.match_id) is not m:
            return  # ended or lost meanwhile
        if m.request is not None and m.request.request_id != rid:
            log.warning(
                "match %s: request %d was superseded while the bot thought (timeout?)",
                m.match_id,
                rid,
            )
            return
        self._send_reply(reply)

    async def _retry(self, m: _Match, rej: referee_pb2.Rejection) -> None:
        code = game_pb2.ErrorCode.Name(rej.code)
        self.report.refusal(m.match_id, rej.request_id, code, rej.message)
        log.warning(
            "match %s: answer to request %d refused (%s): %s",
            m.match_id,
            rej.request_id,
            code,
            rej.message,
        )
        request = m.request
        if (
            not rej.retry_allowed
            or rej.code == game_pb2.ERROR_CODE_UNKNOWN_REQUEST
            or request is None
            or request.request_id != rej.request_id
        ):
            return
        previous = m.answers.pop(rej.request_id, None)
        if previous is not None:
            m.refused.setdefault(rej.request_id, []).append(previous)
        await self._decide(m, request)


async def _requests(
    out: asyncio.Queue[referee_pb2.PlayRequest | None],
) -> AsyncIterator[referee_pb2.PlayRequest]:
    """The stream's only writer: whatever is queued, until ``None``."""
    while (msg := await out.get()) is not None:
        yield msg


def _why(error: grpc.aio.AioRpcError) -> str:
    return f"{error.code().name} {error.details()!r}"


def _verdict(start: referee_pb2.MatchStart | None, result: game_pb2.MatchResult) -> str:
    """ "won", "drawn", "lost" or "aborted", for the seat of ``start``."""
    if result.reason == game_pb2.MATCH_END_REASON_ABORTED:
        return "aborted"
    if result.draw:
        return "drawn"
    if start is None:
        return "ended"
    if not result.penalty_totals:  # the money game: winner_side is a seat
        return "won" if result.winner_side == start.seat else "lost"
    side = next((p.side for p in start.seating if p.seat == start.seat), start.seat)
    return "won" if result.winner_side == side else "lost"


def _reply_for(
    request: referee_pb2.DecisionRequest, choice: int | game_pb2.Action
) -> referee_pb2.ActionReply:
    reply = referee_pb2.ActionReply(match_id=request.match_id, request_id=request.request_id)
    if isinstance(choice, game_pb2.Action):
        reply.action.CopyFrom(choice)
        return reply
    if isinstance(choice, bool):
        raise TypeError("choose returned a bool, not an index")
    index = operator.index(choice)  # ints, numpy integers; TypeError otherwise
    if not 0 <= index < len(request.legal_actions):
        raise IndexError(f"choose returned index {index} of {len(request.legal_actions)}")
    reply.legal_index = index
    return reply


def _other_reply(
    request: referee_pb2.DecisionRequest, refused: list[referee_pb2.ActionReply]
) -> referee_pb2.ActionReply:
    """A legal index not refused yet (the first one, if all were)."""
    refused_idx = {r.legal_index for r in refused if r.WhichOneof("choice") == "legal_index"}
    refused_act = [r.action for r in refused if r.WhichOneof("choice") == "action"]
    for i, action in enumerate(request.legal_actions):
        if i not in refused_idx and action not in refused_act:
            break
    else:
        i = 0
    return referee_pb2.ActionReply(
        match_id=request.match_id, request_id=request.request_id, legal_index=i
    )


def _task_cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def play(
    factory: BotFactory,
    address: str,
    *,
    name: str,
    join_table: str | None = None,
    join_queue: tuple[str | game_pb2.Ruleset, int] | None = None,
    token: str = "",
    max_matches: int = 1,
    matches: int | None = None,
    reconnect: bool = True,
    grace_s: float = 10,
    channel_options: Sequence[tuple[str, Any]] | None = None,
    drop_after_requests: int | None = None,
    join_ladder: str | None = None,
    credentials: grpc.ChannelCredentials | None = None,
    skip_events: bool = False,
    redirect_grace_s: float = REDIRECT_GRACE_S,
    strict: bool | None = None,
    report: Report | None = None,
    stop: asyncio.Event | None = None,
) -> list[referee_pb2.MatchEnd]:
    """Connect to the referee at ``address`` and play until done; returns the MatchEnds.

    ``factory()`` makes one :class:`Bot` per match (a Bot subclass itself will do).
    Join a named table (``join_table``) or a queue (``join_queue=(preset or Ruleset,
    players)``). ``max_matches`` matches run at once on the stream. With ``matches`` the
    client sends Leave once that many are started or done and returns after that many
    MatchEnds; without it, a table bot plays its table's one match and a queue bot plays
    until the referee closes the stream. A dropped stream (UNAVAILABLE, or an early end) is
    resumed with the last Welcome's resume_token for up to ``grace_s`` seconds when
    ``reconnect`` is on. ``drop_after_requests`` is a test hook: cancel the stream once after
    that many answers, to exercise resuming. ``credentials`` (``grpc.ssl_channel_credentials``)
    connect over TLS, with a client certificate for mutual TLS. ``skip_events`` asks the
    referee for no Event messages (``Bot.on_event`` is then never called; every request still
    carries the whole observation). A ``Redirect`` is followed: the same Hello goes to its
    address with ``redirect_ticket`` set; if that referee cannot be reached for
    ``redirect_grace_s`` seconds, refuses the ticket, or loses the stream for good, the client
    returns to ``address`` with its first Hello.

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
    client = _Client(
        factory,
        address,
        name=name,
        join_table=join_table,
        join_queue=join_queue,
        token=token,
        max_matches=max_matches,
        matches=matches,
        reconnect=reconnect,
        grace_s=grace_s,
        channel_options=channel_options,
        drop_after_requests=drop_after_requests,
        join_ladder=join_ladder,
        credentials=credentials,
        skip_events=skip_events,
        redirect_grace_s=redirect_grace_s,
        strict=strict,
        report=report,
        stop=stop,
    )
    return await client.run()


def run_bot(
    factory: BotFactory,
    address: str,
    *,
    name: str,
    join_table: str | None = None,
    join_queue: tuple[str | game_pb2.Ruleset, int] | None = None,
    token: str = "",
    max_matches: int = 1,
    matches: int | None = None,
    reconnect: bool = True,
    grace_s: float = 10,
    channel_options: Sequence[tuple[str, Any]] | None = None,
    drop_after_requests: int | None = None,
    join_ladder: str | None = None,
    credentials: grpc.ChannelCredentials | None = None,
    skip_events: bool = False,
    redirect_grace_s: float = REDIRECT_GRACE_S,
    strict: bool | None = None,
    report: Report | None = None,
) -> list[referee_pb2.MatchEnd]:
    """:func:`play` for scripts: the same arguments (but ``stop``), run in its own event
    loop."""
    return asyncio.run(
        play(
            factory,
            address,
            name=name,
            join_table=join_table,
            join_queue=join_queue,
            token=token,
            max_matches=max_matches,
            matches=matches,
            reconnect=reconnect,
            grace_s=grace_s,
            channel_options=channel_options,
            drop_after_requests=drop_after_requests,
            join_ladder=join_ladder,
            credentials=credentials,
            skip_events=skip_events,
            redirect_grace_s=redirect_grace_s,
            strict=strict,
            report=report,
        )
    )
