"""Sessions: one per connected bot identity. A session outlives its stream for the grace
period, so a bot that lost its connection resumes with its token and finds its matches."""

from __future__ import annotations

import asyncio
import hmac
import secrets
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any

import structlog

from kozel.core import messages
from kozel.core.messages import EncodedRequest, Outgoing
from kozel.server import errors, metrics
from kozel.server.seats import SeatLink
from kozel.server.version import VERSION
from kozel.v1 import referee_pb2 as rpb

log = structlog.get_logger("kozel.session")

MISSED_LIMIT = 256  # DealEnd/MatchEnd messages kept for a detached session


class Outbox:
    """Messages waiting to be written to one stream. Bounded: a bot that does not read is cut
    off rather than allowed to grow the server's memory. A deque and one waiter, not an
    ``asyncio.Queue``: one writer task reads it, and this is on every decision's path."""

    def __init__(self, limit: int) -> None:
        self._items: deque[Outgoing] = deque()
        self._waiter: asyncio.Future[None] | None = None  # the writer, while it has nothing
        self._loop: asyncio.AbstractEventLoop | None = None  # the writer's, from its first wait
        self._limit = limit
        self.error: errors.Refused | None = None  # why the stream ends, when it fails
        self.closed = False

    def put(self, msg: Outgoing) -> None:
        if self.closed:
            return
        if len(self._items) >= self._limit:
            self._items.clear()  # drop the backlog: the close must not wait behind it
            self.close(
                errors.Exhausted(f"the bot read too slowly: {self._limit} messages were waiting")
            )
            return
        self._items.append(msg)
        self._wake()

    def close(self, error: errors.Refused | None = None) -> None:
        """End the stream after what is queued (failing with ``error`` when given; the
        servicer turns it into the stream's status)."""
        if not self.closed:
            self.closed = True
            self.error = error
            self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def get(self) -> Outgoing | None:
        """The next message to write; None once the stream is to end."""
        while not self._items:
            if self.closed:
                return None
            if self._loop is None:
                self._loop = asyncio.get_running_loop()
            # The loop is kept: on Python 3.11 get_running_loop() costs a getpid() system call.
            self._waiter = self._loop.create_future()
            await self._waiter
        return self._items.popleft()


class RemoteLink(SeatLink):
    """A seat played by a remote bot through its session."""

    def __init__(self, session: Session) -> None:
        super().__init__(session.name)
        self.session = session
        self.wants_events = not session.hello.skip_events

    def send(self, msg: Outgoing) -> None:
        self.session.send(msg)

    def match_over(self) -> None:
        self.session.match_over(self)


class Session:
    """A bot identity: its name, resume token, current stream and running matches."""

    def __init__(
        self,
        hello: rpb.Hello,
        max_matches: int,
        on_idle: Callable[[Session], None],
        unit: str = "",
    ) -> None:
        self.id = uuid.uuid4().hex[:12]
        self.name = hello.bot_name
        self.token = hello.token
        self.resume_token = secrets.token_urlsafe(24)
        self.max_matches = max(1, min(hello.max_matches or 1, max_matches))
        self.want = hello.WhichOneof("want")
        self.hello = hello
        self.stream: Outbox | None = None
        self.links: dict[str, RemoteLink] = {}
        self.leaving = False
        self.queue_key: str | None = None  # the queue it waits in (queue_in)
        self.ladder: str | None = None  # the ladder it joined (enter_ladder)
        self.bot: Any = None  # the authenticated ladder bot (kozel.ladder.store.Bot)
        # Whose share of the running matches it plays in: its client's address, or a ladder
        # bot's own identity (docs/operations.md, "Behind a load balancer").
        self.unit = unit
        self.missed: deque[Outgoing] = deque(maxlen=MISSED_LIMIT)
        self._on_idle = on_idle

    def authenticated(self, bot: Any) -> None:
        """Its Hello's token named this ladder bot (kozel.ladder.store.Bot): it plays as it."""
        self.bot, self.name = bot, bot.name

    def queue_in(self, key: str) -> None:
        """It waits in the queue ``key`` (and is queued there again after each match)."""
        self.queue_key = key

    def enter_ladder(self, ladder: str) -> None:
        """It plays on ``ladder`` (and waits there again after each match)."""
        self.ladder = ladder

    def named(self, bot_name: str) -> bool:
        """Whether ``bot_name`` is this session's (compared in constant time)."""
        return hmac.compare_digest(bot_name.encode(), self.hello.bot_name.encode())

    def token_matches(self, token: str) -> bool:
        """Whether ``token`` may resume this session: any for a session without a ladder bot,
        else its bot's token (compared in constant time)."""
        return self.bot is None or hmac.compare_digest(token.encode(), self.token.encode())

    @property
    def free_slots(self) -> int:
        if self.leaving or self.stream is None or self.stream.closed:
            return 0
        return self.max_matches - len(self.links)

    def send(self, msg: Outgoing) -> None:
        if self.stream is not None:
            self.stream.put(msg)
            if self.stream.closed:  # cut off (too slow): away from now on, as if disconnected
                self.detach(self.stream)
                if _is_result(msg):
                    self.missed.append(msg)
        elif _is_result(msg):
            self.missed.append(msg)  # results are kept for a resume; the rest is resent anew

    def written(self, request: EncodedRequest, at: float) -> None:
        """A request left for the bot: its clock starts now (a resend after a resume does not
        restart it)."""
        link = self.links.get(request.match_id)
        if link is not None:
            link.written(request.request_id, at)

    def new_link(self) -> RemoteLink:
        return RemoteLink(self)

    def register(self, link: RemoteLink) -> None:
        """The runner has seated ``link`` (its match id is known now)."""
        self.links[link.match_id] = link

    def deliver(self, reply: rpb.ActionReply, received_at: float) -> str | None:
        """Hand an answer to its match (in the reading task); returns why it was refused, or
        None."""
        link = self.links.get(reply.match_id)
        if link is None:
            return f"no running match {reply.match_id!r} on this session"
        return link.offer(reply, received_at)

    def attach(self, stream: Outbox, resumed: bool) -> None:
        """Make ``stream`` the session's stream; on resume, resend what the bot needs."""
        old, self.stream = self.stream, stream
        if old is not None and old is not stream:
            old.close(errors.Aborted("this session was resumed on another stream"))
        if resumed:
            metrics.RESUMES.inc()
            log.info("session_resumed", session=self.id, bot=self.name, match_ids=list(self.links))
        stream.put(
            messages.welcome(
                self.id,
                self.resume_token,
                VERSION,
                resumed=resumed,
                max_matches=self.max_matches,
                running_match_ids=self.links,
            )
        )
        while self.missed:
            stream.put(self.missed.popleft())
        if resumed and self.leaving and not self.links:
            stream.close()  # it left and its matches ended while it was away: nothing is owed
        if resumed:
            for link in list(self.links.values()):
                link.resumed()

    def detach(self, stream: Outbox) -> None:
        """The stream ended: every running match starts the seat's grace period."""
        if self.stream is not stream:
            return
        self.stream = None
        for link in list(self.links.values()):
            link.disconnected()
        if self.links:
            metrics.DISCONNECTS.inc()
        log.info("session_disconnected", session=self.id, bot=self.name, match_ids=list(self.links))
        self._on_idle(self)

    def match_over(self, link: RemoteLink) -> None:
        self.links.pop(link.match_id, None)
        if self.leaving and not self.links and self.stream is not None:
            self.stream.close()
        self._on_idle(self)

    def leave(self) -> None:
        """Finish running matches, take no new ones, then close."""
        self.leaving = True
        if not self.links and self.stream is not None:
            self.stream.close()
        self._on_idle(self)


def _is_result(msg: Outgoing) -> bool:
    return msg.WhichOneof("message") in ("deal_end", "match_end")
