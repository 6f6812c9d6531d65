"""What a match's core tells its surroundings: :class:`MatchHooks`, which the referee's
runner subclasses. It stays Python when the core is compiled (:mod:`kozel.core.native`):
Python code may not subclass a compiled class."""

from __future__ import annotations

from kozel.engine.deal import Deal
from kozel.engine.errors import ErrorCode
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb


class MatchHooks:
    """What the core tells its surroundings besides the seats' messages: the spectator feed,
    metrics and log lines. Every method is called synchronously and must not block; the
    defaults do nothing."""

    def deal_started(self, index: int, deal: Deal) -> None:
        """A deal was announced to the seats."""

    def events(self, deal: Deal) -> None:
        """Plays happened in ``deal`` since the last call."""

    def notice(self, event: rpb.Event) -> None:
        """A public notice about a seat."""

    def deal_ended(self, deal_end: rpb.DealEnd) -> None:
        """A deal ended (every card is public now)."""

    def decided(self, seat: int, think_s: float) -> None:
        """A seat's answer was applied after ``think_s`` seconds."""

    def refused(self, seat: int, code: ErrorCode) -> None:
        """A seat's answer was refused."""

    def timed_out(self, seat: int, strikes: int, sealed: bool) -> None:
        """A seat timed out (``sealed``: inside a declaration window, not public yet)."""

    def strikes_released(self, count: int) -> None:
        """``count`` timeouts held back in a sealed window became public."""

    def forfeited(self, seat: int, reason: pb.ForfeitReason) -> None:
        """A seat forfeited."""

    def cut(self, deals: int) -> None:
        """The match was cut after ``deals`` deals (the referee's deal cap)."""
