"""The clock of a table: what a seat is given to think, and the policy around it.

Each field carries its bounds (``annotated_types`` metadata, no dependency on a validator):
pydantic enforces them where a clock is read from a file (the referee's ``clock``, a ladder's
``time_control``), and unknown keys are refused there by name.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Annotated, ClassVar, get_type_hints

from annotated_types import Interval

from kozel.v1 import game_pb2 as pb

# What each field means, for the referee's flags and docs.
DOCS = {
    "move_ms": "the default per-move allowance (ms)",
    "bank_ms": "the default time bank per match (ms), spent past the allowance",
    "max_strikes": "timeouts a seat may have; one more forfeits",
    "max_retries": "refused answers a seat may retry per request; one more forfeits",
    "grace_ms": "how long a disconnected seat's bot has to reconnect (ms)",
}


class ClockError(ValueError):
    """A clock value outside its bounds; the message names the field."""


@dataclass(frozen=True, slots=True)
class Clock:
    """The clock of a table: per-move allowance, time bank, strike and retry policy, grace."""

    move_ms: Annotated[int, Interval(ge=10, le=600_000)] = 2000
    bank_ms: Annotated[int, Interval(ge=0, le=3_600_000)] = 10_000
    max_strikes: Annotated[int, Interval(ge=0, le=1000)] = 3
    max_retries: Annotated[int, Interval(ge=0, le=1000)] = 2
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
        """This clock with the non-zero fields of a request's ``TimeControl`` applied; raises
        :class:`ClockError` naming the first field outside its bounds."""
        if msg is None:
            return self
        changes = {f.name: getattr(msg, f.name) for f in fields(self) if getattr(msg, f.name)}
        clock = replace(self, **changes)
        for name, low, high in _bounds():
            value = getattr(clock, name)
            if not low <= value <= high:
                raise ClockError(f"time_control.{name} is {value}; it must be {low} to {high}")
        return clock


def _bounds() -> list[tuple[str, int, int]]:
    """(field, lowest, highest) of every clock field, from its ``Interval``."""
    hints = get_type_hints(Clock, include_extras=True)
    out = []
    for f in fields(Clock):
        (interval,) = (m for m in hints[f.name].__metadata__ if isinstance(m, Interval))
        low, high = interval.ge, interval.le
        assert isinstance(low, int) and isinstance(high, int), f"{f.name}: whole bounds"
        out.append((f.name, low, high))
    return out


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
