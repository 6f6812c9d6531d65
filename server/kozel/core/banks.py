"""The time banks: what each seat may think beyond ``move_ms``, over the whole match.

Compiled with the core (charged and read at every decision); the table's ``Clock`` itself, the
settings it is made from, stays in :mod:`kozel.core.clock`.
"""

from __future__ import annotations

from kozel.core.clock import Clock


class Banks:
    """Every seat's time bank, in milliseconds."""

    def __init__(self, clock: Clock, players: int) -> None:
        self.move_ms = clock.move_ms
        self.left_ms = [clock.bank_ms] * players

    def allowance_s(self, seat: int) -> float:
        """The time ``seat`` has for its next move: the move allowance and what is left of
        its bank."""
        return (self.move_ms + max(self.left_ms[seat], 0)) / 1000

    def charge(self, seat: int, think_ms: float) -> None:
        """Take the time over the move allowance from the bank."""
        self.left_ms[seat] -= max(0, int(think_ms) - self.move_ms)

    def empty(self, seat: int) -> None:
        """A timeout spends the whole bank."""
        self.left_ms[seat] = 0
