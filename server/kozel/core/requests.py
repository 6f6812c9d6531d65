"""One decision request's life, as an explicit state table.

A request is created when a seat is asked (``SENT``: handed to the transport, which may still
hold it behind other messages), starts its clock when the transport writes it (``WAITING``),
may have its deadline stretched once when the referee itself stalled past it (``GRACED``), and
ends ``ANSWERED`` (a legal answer), ``DEFAULTED`` (the default action was played for it: a
timeout, or the last refused answer inside a sealed window) or ``FORFEITED``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kozel.core.errors import TransitionError
from kozel.core.messages import EncodedRequest
from kozel.engine.actions import Action
from kozel.v1 import game_pb2 as pb
from kozel.v1 import replay_pb2


class State(enum.Enum):
    """Where a request is in its life."""

    # Members are singletons compared by identity: hash them so too, in C (Enum's own hash is
    # a Python method, and the state table looks a pair up at every event).
    __hash__ = object.__hash__

    SENT = "sent"
    WAITING = "waiting"
    GRACED = "graced"
    ANSWERED = "answered"
    DEFAULTED = "defaulted"
    FORFEITED = "forfeited"


class Event(enum.Enum):
    """What can happen to a pending request."""

    __hash__ = object.__hash__  # as State's

    WRITTEN = "written"  # the transport wrote it: the move clock starts (a resend does not)
    ANSWER = "answer"  # a legal answer
    REFUSED = "refused"  # an illegal answer, retries left: a Rejection, same deadline
    REFUSED_LAST = "refused_last"  # an illegal answer with no retry left
    REFUSED_LAST_SEALED = "refused_last_sealed"  # ... inside a sealed window: pass for now
    STALL = "stall"  # the deadline timer ran late because the referee stalled
    TIMEOUT = "timeout"  # the deadline passed: the default action, a strike
    STRUCK_OUT = "struck_out"  # the deadline passed and the strikes are over the limit
    FORFEIT = "forfeit"  # forfeited from outside (the grace period of a disconnect ran out)


S, E = State, Event
_ENDINGS = {
    E.ANSWER: S.ANSWERED,
    E.REFUSED_LAST: S.FORFEITED,
    E.REFUSED_LAST_SEALED: S.DEFAULTED,
    E.TIMEOUT: S.DEFAULTED,
    E.STRUCK_OUT: S.FORFEITED,
    E.FORFEIT: S.FORFEITED,
}

#: (state, event) -> next state. A pair missing here is a bug in the caller.
TRANSITIONS: dict[tuple[State, Event], State] = {
    (S.SENT, E.WRITTEN): S.WAITING,
    (S.SENT, E.REFUSED): S.SENT,
    (S.SENT, E.STALL): S.GRACED,
    (S.WAITING, E.WRITTEN): S.WAITING,  # a resend after a resume: the clock runs on
    (S.WAITING, E.REFUSED): S.WAITING,
    (S.WAITING, E.STALL): S.GRACED,
    (S.GRACED, E.WRITTEN): S.GRACED,  # written after the stall: its clock starts now, no grace
    (S.GRACED, E.REFUSED): S.GRACED,
    **{
        (state, event): end
        for state in (S.SENT, S.WAITING, S.GRACED)
        for event, end in _ENDINGS.items()
    },
}
OPEN = frozenset({S.SENT, S.WAITING, S.GRACED})


@dataclass(slots=True, eq=False)
class Request:
    """A decision request to one seat and its clock (times in seconds, the caller's clock)."""

    seat: int
    request_id: int
    message: EncodedRequest  # as sent (resent on resume)
    legal: tuple[Action, ...]
    sealed: bool  # asked inside a declaration window: only this seat knows of it
    allowance_s: float
    sent_at: float
    started_at: float = 0.0  # when the clock started (written, or sent for a direct seat)
    deadline: float = 0.0
    retries_left: int = 0
    rejections: list[replay_pb2.ReplayRejection] = field(default_factory=list)
    state: State = State.SENT
    was_written: bool = False
    forfeit_reason: pb.ForfeitReason = pb.FORFEIT_REASON_UNSPECIFIED  # set when it ends FORFEITED

    def __post_init__(self) -> None:
        self.started_at = self.sent_at
        self.deadline = self.sent_at + self.allowance_s

    @property
    def open(self) -> bool:
        """Still waiting for an answer."""
        return self.state in OPEN

    def fire(self, event: Event) -> State:
        """Move along the state table."""
        try:
            self.state = TRANSITIONS[self.state, event]
        except KeyError:
            raise TransitionError(
                f"request {self.request_id} of seat {self.seat}: "
                f"{event.value} while {self.state.value}"
            ) from None
        return self.state

    def written(self, now: float) -> None:
        """The transport wrote the request: its clock starts now (only the first time)."""
        self.fire(Event.WRITTEN)
        if not self.was_written:
            self.was_written = True
            self.started_at, self.deadline = now, now + self.allowance_s

    def think_ms(self, received_at: float) -> float:
        """The think time of an answer received at ``received_at``: never more than the
        allowance (a stall of the referee is not the bot's time)."""
        return min(max(received_at - self.started_at, 0.0), self.allowance_s) * 1000
