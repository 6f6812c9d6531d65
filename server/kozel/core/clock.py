"""The clock of a table: what a seat is given to think, and the policy around it.

Each field carries its bounds (``annotated_types`` metadata, no dependency on a validator):
pydantic enforces them where a clock is read from a file (the referee's ``clock``, a ladder's
``time_control``), and unknown keys are refused there by name.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated, ClassVar

from annotated_types import Interval

from kozel.v1 import game_pb2 as pb


@dataclass(frozen=True, slots=True)
class Clock:
    """The clock of a table: per-move allowance, time bank, strike and retry policy, grace."""

    move_ms: Annotated[int, Interval(ge=10, le=600_000)] = 2000
    bank_ms: Annotated[int, Interval(ge=0, le=3_600_000)] = 10_000
    max_strikes: Annotated[int, Interval(ge=0, le=1000)] = 3
    max_retries: Annotated[int, Interval(ge=0, le=100)] = 2
    grace_ms: Annotated[int, Interval(ge=0, le=600_000)] = 10_000

    # Read by pydantic (a plain dict, so nothing here imports it): a key that is not a field
    # is an error, wherever the clock is validated.
    __pydantic_config__: ClassVar[dict[str, str]] = {"extra": "forbid"}

    def to_pb(self) -> pb.TimeControl:
        return pb.TimeControl(
            move_ms=self.move_ms,
            bank_ms=self.bank_ms,
            max_strikes=self.max_strikes,
            max_retries=self.max_retries,
            grace_ms=self.grace_ms,
        )

    def merged(self, msg: pb.TimeControl | None) -> Clock:
        """This clock with the non-zero fields of a request's ``TimeControl`` applied."""
        if msg is None:
            return self
        changes = {
            f: getattr(msg, f)
            for f in ("move_ms", "bank_ms", "max_strikes", "max_retries", "grace_ms")
            if getattr(msg, f)
        }
        return replace(self, **changes)


# A deadline timer that runs this late means the referee stalled (seconds; less is ordinary
# scheduling jitter, which the allowance absorbs, and the admission lag target) ...
STALL_S = 0.025
# ... and answers get as long again to reach the referee, up to this.
MAX_STALL_GRACE_S = 0.25


def stall_grace(late_s: float) -> float:
    """How much longer a request waits when its deadline timer ran ``late_s`` late: nothing for
    ordinary jitter; after a stall of the referee itself (a garbage collection, a burst of
    work) answers that came in meanwhile are still on their way, and get as long again."""
    return min(late_s, MAX_STALL_GRACE_S) if late_s > STALL_S else 0.0


class Banks:
    """Every seat's time bank: what it may think beyond ``move_ms``, over the whole match."""

    __slots__ = ("clock", "left_ms")

    def __init__(self, clock: Clock, players: int) -> None:
        self.clock = clock
        self.left_ms = [clock.bank_ms] * players

    def allowance_s(self, seat: int) -> float:
        """The time ``seat`` has for its next move: the move allowance and what is left of
        its bank."""
        return (self.clock.move_ms + max(self.left_ms[seat], 0)) / 1000

    def charge(self, seat: int, think_ms: float) -> None:
        """Take the time over the move allowance from the bank."""
        self.left_ms[seat] -= max(0, int(think_ms) - self.clock.move_ms)

    def empty(self, seat: int) -> None:
        """A timeout spends the whole bank."""
        self.left_ms[seat] = 0
