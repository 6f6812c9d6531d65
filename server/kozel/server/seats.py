"""Seat links: how a match runner talks to whoever sits at a seat.

A runner sends messages to a link; answers come back through :meth:`SeatLink.offer`, which
hands them straight to the runner (in the caller's task). The same runner drives remote bots
(through a session), in-process house bots, and tests.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from kozel.core.errors import NotPending
from kozel.core.messages import Outgoing
from kozel.server.house import HousePlayer
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb


class MatchDriver(Protocol):
    """What a link hands its seat's events to (the match runner)."""

    def receive(self, seat: int, reply: rpb.ActionReply, received_at: float) -> None:
        """An answer; raises ``NotPending`` when it names no pending request."""

    def written(self, seat: int, request_id: int, at: float) -> None:
        """The transport wrote a request: the seat's clock starts."""

    def disconnected(self, seat: int) -> None:
        """The seat's stream broke."""

    def resumed(self, seat: int) -> None:
        """The seat is back on a new stream."""


class SeatLink:
    """One seat of one running match."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seat = -1
        self.match_id = ""
        self.runner: MatchDriver | None = None  # set by the runner, dropped at the end
        self.wants_events = True  # False: the bot asked for no Event messages (Hello)

    def seat_at(self, runner: MatchDriver, seat: int, match_id: str) -> None:
        """The runner seats this link at ``seat`` of its match."""
        self.runner, self.seat, self.match_id = runner, seat, match_id

    def unseat(self) -> None:
        """The match is over: answers are refused from now on (and the cycle is broken)."""
        self.runner = None

    def send(self, msg: Outgoing) -> None:
        """Deliver a message to the seat (never blocks; dropped if the seat is away)."""
        raise NotImplementedError

    def offer(self, reply: rpb.ActionReply, received_at: float) -> str | None:
        """Hand an answer received at ``received_at`` (event-loop time) to the match; returns
        why it was refused, or None."""
        runner = self.runner
        if runner is None:
            return f"request {reply.request_id} is not pending; the match has ended"
        try:
            runner.receive(self.seat, reply, received_at)
        except NotPending as exc:
            return str(exc)
        return None

    def written(self, request_id: int, at: float) -> None:
        """The transport wrote request ``request_id``: the seat's clock starts."""
        if self.runner is not None:
            self.runner.written(self.seat, request_id, at)

    def disconnected(self) -> None:
        """The seat's stream broke: its grace period starts."""
        if self.runner is not None:
            self.runner.disconnected(self.seat)

    def resumed(self) -> None:
        """The seat is back on a new stream: it is sent what it needs to go on."""
        if self.runner is not None:
            self.runner.resumed(self.seat)

    def match_over(self) -> None:
        """The match has ended (hook for sessions)."""


class LocalLink(SeatLink):
    """A seat played by an in-process house bot, without gRPC."""

    def __init__(self, name: str, bot: HousePlayer) -> None:
        super().__init__(name)
        self.bot = bot
        self._loop = asyncio.get_running_loop()

    def send(self, msg: Outgoing) -> None:
        which = msg.WhichOneof("message") or ""
        body = getattr(msg, which)
        if which == "decision":
            if getattr(self.bot, "thinks", False):  # a searching bot: off the event loop
                fut = self._loop.run_in_executor(None, self.bot.choose, body)
                fut.add_done_callback(lambda f: self._thought(body, f))
                return
            self._answer(body, self.bot.choose(body))
            return
        hook = getattr(self.bot, f"on_{which}", None)
        if hook is not None:
            hook(body)

    def _thought(self, request: rpb.DecisionRequest, fut: asyncio.Future[int | pb.Action]) -> None:
        if fut.cancelled():
            return
        if fut.exception() is not None:  # the runner's clock and retries deal with a bad bot
            return
        self._answer(request, fut.result())

    def _answer(self, request: rpb.DecisionRequest, choice: object) -> None:
        reply = rpb.ActionReply(match_id=request.match_id, request_id=request.request_id)
        if isinstance(choice, int):
            reply.legal_index = choice
        else:
            reply.action.CopyFrom(choice)  # type: ignore[arg-type]
        # Soon, not now: the runner is still sending the messages of the step that asked.
        self._loop.call_soon(self.offer, reply, self._loop.time())
