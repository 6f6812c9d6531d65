"""Seat links: how a match runner talks to whoever sits at a seat.

The runner only sends messages to a link and waits on its ``replies`` queue, so the same runner
drives remote bots (through a session), in-process house bots, and tests.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable
from dataclasses import dataclass

from kozel.server.house import HousePlayer
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb


class Wake(enum.Enum):
    """Sentinels put on a reply queue to wake a runner waiting for an answer."""

    FORFEIT = "forfeit"


@dataclass(slots=True)
class Reply:
    """An answer and when the referee received it (event-loop time)."""

    message: rpb.ActionReply
    received_at: float


class SeatLink:
    """One seat of one running match."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seat = -1
        self.match_id = ""
        self.replies: asyncio.Queue[Reply | Wake] = asyncio.Queue()
        self.pending_id: int | None = None  # the request awaiting an answer
        self.pending_msg: rpb.PlayResponse | None = None
        self.forfeit_reason: int = pb.FORFEIT_REASON_UNSPECIFIED  # requested from outside
        # Set by the runner: messages to resend on resume, and a public notice about this seat.
        self.resync: Callable[[], list[rpb.PlayResponse]] | None = None
        self.notice: Callable[[int], None] | None = None
        self.grace_s = 10.0  # how long the seat may be away before it forfeits
        self.wants_events = True  # False: the bot asked for no Event messages (Hello)
        # When the pending request was first handed to the transport (0: not yet, or a seat
        # whose send is immediate); the move clock starts then, not when it was queued.
        self.written_at = 0.0

    def send(self, msg: rpb.PlayResponse) -> None:
        """Deliver a message to the seat (never blocks; dropped if the seat is away)."""
        raise NotImplementedError

    def begin_request(self, request_id: int, msg: rpb.PlayResponse) -> None:
        """Mark ``request_id`` pending, forget stale answers, and send the request."""
        while not self.replies.empty():
            item = self.replies.get_nowait()
            if item is Wake.FORFEIT:  # keep a forfeit request
                self.replies.put_nowait(item)
                break
        self.pending_id = request_id
        self.pending_msg = msg
        self.written_at = 0.0
        self.send(msg)

    def end_request(self) -> None:
        self.pending_id = None
        self.pending_msg = None

    def offer(self, reply: Reply) -> bool:
        """Accept an answer for the pending request; False if it names another request."""
        if self.pending_id is None or reply.message.request_id != self.pending_id:
            return False
        self.replies.put_nowait(reply)
        return True

    def request_forfeit(self, reason: int) -> None:
        """Ask the runner to forfeit this seat at its next step (wakes a pending request)."""
        if not self.forfeit_reason:
            self.forfeit_reason = reason
            self.replies.put_nowait(Wake.FORFEIT)

    def match_over(self) -> None:
        """The match has ended (hook for sessions)."""


class LocalLink(SeatLink):
    """A seat played by an in-process house bot, without gRPC."""

    def __init__(self, name: str, bot: HousePlayer) -> None:
        super().__init__(name)
        self.bot = bot
        self._loop = asyncio.get_running_loop()

    def send(self, msg: rpb.PlayResponse) -> None:
        which = msg.WhichOneof("message")
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

    def _thought(self, request: rpb.DecisionRequest, fut: asyncio.Future[object]) -> None:
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
        self._loop.call_soon(self.offer, Reply(reply, self._loop.time()))
