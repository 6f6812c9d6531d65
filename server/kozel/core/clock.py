"""The clock of a table: what a seat is given to think, and the policy around it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from kozel.v1 import game_pb2 as pb


@dataclass(frozen=True, slots=True)
class Clock:
    """The clock of a table: per-move allowance, time bank, strike and retry policy, grace."""

    move_ms: int = 2000
    bank_ms: int = 10_000
    max_strikes: int = 3
    max_retries: int = 2
    grace_ms: int = 10_000

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
