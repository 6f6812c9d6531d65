"""Strikes, refused answers and forfeits of a match's seats, with what sealed windows hide.

Counts earned inside a sealed declaration window are held out of every public view until the
deal ends (DealEnd shows every hand, and so who was asked); a forfeit earned there waits for
the deal's end too, or its timing would give the seat away.
"""

from __future__ import annotations

from kozel.v1 import game_pb2 as pb


class Penalties:
    """Per seat: timeouts (strikes) and refused answers, the held part, forfeits due."""

    __slots__ = (
        "max_strikes",
        "timeouts",
        "rejections",
        "_held_timeouts",
        "_held_rejections",
        "_held_forfeits",
        "_due",
    )

    def __init__(self, players: int, max_strikes: int) -> None:
        self.max_strikes = max_strikes
        self.timeouts = [0] * players  # every timeout, per seat
        self.rejections = [0] * players  # every refused answer, per seat
        self._held_timeouts = [0] * players  # the part from the window of the deal in play
        self._held_rejections = [0] * players
        self._held_forfeits: dict[
            int, pb.ForfeitReason
        ] = {}  # seat: reason, applied when the deal ends
        self._due: list[
            tuple[int, pb.ForfeitReason]
        ] = []  # (seat, reason) to apply before the next step

    @property
    def public_timeouts(self) -> list[int]:
        """Timeouts per seat as anyone may know them (sealed-window ones once their deal ended)."""
        return [t - h for t, h in zip(self.timeouts, self._held_timeouts, strict=True)]

    @property
    def public_rejections(self) -> list[int]:
        """Refused answers per seat as anyone may know them."""
        return [r - h for r, h in zip(self.rejections, self._held_rejections, strict=True)]

    def timed_out(self, seat: int, sealed: bool) -> bool:
        """Count a timeout; True when the seat is now over the strike limit and forfeits at
        once (never inside a sealed window: that waits for the deal's end)."""
        self.timeouts[seat] += 1
        if sealed:
            self._held_timeouts[seat] += 1
            return False
        return self.public_timeouts[seat] > self.max_strikes

    def refused(self, seat: int, sealed: bool) -> None:
        """Count a refused answer."""
        self.rejections[seat] += 1
        self._held_rejections[seat] += sealed

    def hold_forfeit(self, seat: int, reason: pb.ForfeitReason) -> None:
        """A forfeit earned inside a sealed window: applied when the deal ends."""
        self._held_forfeits.setdefault(seat, reason)

    def deal_ended(self) -> int:
        """The deal ended: its held counts become public, and seats over the strike limit or
        with a held forfeit are due to forfeit before the next deal. Returns how many held
        timeouts were released."""
        released = sum(self._held_timeouts)
        players = len(self.timeouts)
        self._held_timeouts = [0] * players
        self._held_rejections = [0] * players
        due = dict(self._held_forfeits)
        self._held_forfeits.clear()
        for seat, count in enumerate(self.timeouts):
            if count > self.max_strikes:
                due.setdefault(seat, pb.FORFEIT_REASON_STRIKES)
        self._due.extend(sorted(due.items()))
        return released

    def take_due(self) -> list[tuple[int, pb.ForfeitReason]]:
        """The forfeits due now, as (seat, reason); each is handed out once."""
        due, self._due = self._due, []
        return due
