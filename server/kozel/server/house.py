"""House bots: players the referee seats in-process at a table (``CreateTable.house_bots``),
without gRPC. The referee owns this interface; which bots there are is decided by whoever
builds the referee (``kozel serve`` hands it the SDK's house bots, a test its own)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb


class HousePlayer(Protocol):
    """One in-process player for one match (a ``kozel.sdk.Bot`` is one).

    Besides :meth:`choose`, :class:`kozel.server.seats.LocalLink` uses, when present:
    ``thinks`` (true: ``choose`` runs in a worker thread, off the event loop, as a searching
    bot needs) and ``on_<message>(body)`` hooks, called with every other message of the seat
    by its ``PlayResponse`` field name (``on_match_start``, ``on_deal_start``, ``on_event``,
    ``on_rejection``, ``on_deal_end``, ``on_match_end``).
    """

    def choose(self, request: rpb.DecisionRequest) -> int | pb.Action:
        """A legal index into ``request.legal_actions``, or an action spelled out."""
        ...


HouseBots = Mapping[str, Callable[[], HousePlayer]]
"""House bots by the name a table asks for: each makes a fresh player for one match."""
