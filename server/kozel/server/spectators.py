"""Spectators of running matches: one hub per match fans the runner's events out to
``WatchMatch`` streams.

The runner calls the hub synchronously and never waits for it: every spectator has a
bounded queue, and one that falls behind is dropped. What a spectator may see comes from
:mod:`kozel.engine.observation` (``Spectator.PUBLIC``, or ``Spectator.FULL`` for the view held
back by the referee's delay); this module only turns views into messages.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Sequence
from typing import Protocol

from google.protobuf.timestamp_pb2 import Timestamp

from kozel.core import convert, messages
from kozel.core.clock import Clock
from kozel.engine.cards import codes
from kozel.engine.deal import Deal
from kozel.engine.match import MatchOutcome
from kozel.engine.observation import (
    Spectator,
    event_views,
    full_view,
    hands_after,
    public_view,
)
from kozel.engine.rules import Ruleset
from kozel.server import errors
from kozel.v1 import match_pb2 as mpb
from kozel.v1 import referee_pb2 as rpb

QUEUE_LIMIT = 1024  # messages due but not yet sent before a spectator is dropped as too slow
HELD_LIMIT = 100_000  # messages held back by the delay for one spectator (memory bound)


class SpectatorCount:
    """WatchMatch streams in all, across every match's hub, and their cap."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.n = 0


class Shared:
    """One event as every spectator of a view gets it: built once, encoded once (as a
    ``WatchMatchResponse``) when the first spectator's stream sends it."""

    __slots__ = ("event", "_wire")

    def __init__(self, event: mpb.SpectatorEvent) -> None:
        self.event = event
        self._wire: bytes | None = None

    def wire(self) -> bytes:
        if self._wire is None:
            self._wire = mpb.WatchMatchResponse(event=self.event).SerializeToString()
        return self._wire


class Subscription:
    """One spectator's queue: (due time on the loop clock, message); ``None`` ends it."""

    def __init__(self, full: bool, queue_limit: int, peer: str = "") -> None:
        self.full = full
        self.peer = peer  # the spectator's address (one address's share of a match is capped)
        self.queue_limit = queue_limit
        self.queue: deque[tuple[float, Shared | None]] = deque()
        self.dropped = ""  # why the hub dropped this spectator, if it did
        self._wake = asyncio.Event()

    def put(self, due: float, msg: Shared | None, now: float) -> bool:
        """Queue a message (never blocks); False when the spectator is too far behind."""
        q = self.queue
        q.append((due, msg))
        self._wake.set()
        # Only messages already due count: the delay holds the others back on purpose.
        behind = len(q) > self.queue_limit and q[self.queue_limit][0] <= now
        return not behind and len(q) <= HELD_LIMIT

    def drop(self, why: str) -> None:
        self.dropped = why
        self.queue.clear()
        self._wake.set()

    async def get(self) -> mpb.SpectatorEvent | None:
        """The next message once it is due; ``None`` at the end or once dropped."""
        shared = await self.get_shared()
        return shared.event if shared is not None else None

    async def get_shared(self) -> Shared | None:
        """:meth:`get`, as the shared message (``wire()`` is its encoding)."""
        loop = asyncio.get_running_loop()
        while not self.dropped:
            if not self.queue:
                self._wake.clear()
                await self._wake.wait()
                continue
            wait = self.queue[0][0] - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            return self.queue.popleft()[1]
        return None


class WatchedMatch(Protocol):
    """What a hub reads of the match it serves (a ``MatchRunner`` is one; the hub only reads):
    who plays what, under which rules and clock, the seed's commitment, and, when a message is
    built, the standing and the timeouts anyone may know. The deals themselves come with each
    call; the match itself (its seed, its hands) stays with the runner."""

    match_id: str
    ladder: str
    table_id: str
    players: int
    rules: Ruleset
    clock: Clock
    seating: list[rpb.Player]

    @property
    def seed_commitment(self) -> str: ...

    @property
    def public_timeouts(self) -> list[int]: ...

    @property
    def banks_ms(self) -> list[int]:
        """Every seat's time bank left (ms): public, as its clock is."""
        ...

    def standing(self) -> MatchOutcome:
        """The match's standing now (penalty totals or chips, who is out)."""
        ...


class SpectatorHub:
    """The spectators of one match, fed by its runner."""

    def __init__(
        self,
        watched: WatchedMatch,
        *,
        max_spectators: int,
        delay_s: float,
        queue_limit: int = QUEUE_LIMIT,
        total: SpectatorCount | None = None,
        max_per_peer: int | None = None,
    ) -> None:
        self.watched = watched
        self.max_spectators = max_spectators
        self.max_per_peer = max_spectators if max_per_peer is None else max_per_peer
        self.total = total if total is not None else SpectatorCount(max_spectators)
        self.delay_s = delay_s
        self.queue_limit = queue_limit
        self.subs: list[Subscription] = []
        self.closed = False
        self._deal: Deal | None = None
        self._deal_index = -1
        self._deal_start: rpb.DealStart | None = None  # built when first wanted
        self._standing: MatchOutcome | None = None  # the match's standing as the deal started
        self._pos = 0  # how much of the deal's log the spectators have been sent

    # -- spectators ----------------------------------------------------------------------------

    def subscribe(self, full: bool, peer: str = "") -> Subscription:
        """A new spectator (from ``peer``, an address); its first message (the snapshot) is
        already queued."""
        if full and self.delay_s <= 0:
            raise errors.Conflict("this referee offers no full view (spectator_delay_s is 0)")
        if self.closed:
            raise errors.NotFound(f"match {self.watched.match_id} has ended; fetch its replay")
        if len(self.subs) >= self.max_spectators:
            raise errors.Exhausted(
                f"match {self.watched.match_id} already has {self.max_spectators} spectators"
            )
        if peer and sum(1 for s in self.subs if s.peer == peer) >= self.max_per_peer:
            # Each spectator costs the referee a write per event: one client must not slow a
            # fast match down with a crowd of them (64 once made one ten times slower).
            raise errors.Exhausted(
                f"your address already watches match {self.watched.match_id} "
                f"{self.max_per_peer} times (limits.max_spectators_per_peer)"
            )
        if self.total.n >= self.total.limit:
            raise errors.Exhausted(
                f"the referee already has {self.total.limit} spectators "
                "(limits.max_spectators); retry later"
            )
        if self._deal is not None:
            self.events(self._deal)  # everyone is sent what the snapshot is about to show
        sub = Subscription(full, self.queue_limit, peer)
        loop = asyncio.get_running_loop()
        sub.put(loop.time() + self._delay(full), Shared(self._snapshot(full)), loop.time())
        self.subs.append(sub)
        self.total.n += 1
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        if sub in self.subs:
            self.subs.remove(sub)
            self.total.n -= 1

    def _delay(self, full: bool) -> float:
        return self.delay_s if full else 0.0

    def _wants(self, full: bool) -> bool:
        return any(s.full is full for s in self.subs)

    def _publish(self, public: mpb.SpectatorEvent | None, full: mpb.SpectatorEvent | None) -> None:
        if not self.subs:
            return
        now = asyncio.get_running_loop().time()
        shared = {
            False: Shared(public) if public is not None else None,
            True: Shared(full) if full is not None else None,
        }
        for sub in list(self.subs):
            msg = shared[sub.full]
            if msg is None:
                continue
            if not sub.put(now + self._delay(sub.full), msg, now):
                self.unsubscribe(sub)
                sub.drop(f"the spectator fell more than {self.queue_limit} messages behind")

    def _event(self, turn: Deal | None = None, **kind) -> mpb.SpectatorEvent:
        """An event now; with ``turn``, the seats that deal awaits (unless it is over)."""
        at = Timestamp()
        at.FromNanoseconds(time.time_ns())
        event = mpb.SpectatorEvent(match_id=self.watched.match_id, happened_at=at, **kind)
        if turn is not None and not turn.over:
            event.turn.seats.extend(turn.to_act)
            event.turn.bank_ms.extend(max(0, ms) for ms in self.watched.banks_ms)
        return event

    # -- fed by the runner ---------------------------------------------------------------------

    def deal_started(self, index: int, deal: Deal) -> None:
        """A deal was announced to the seats."""
        self._deal, self._deal_index, self._pos = deal, index, 0
        # The standing as the deal starts; its DealStart is built when someone watches (most
        # matches have no spectator, and this runs in the middle of a decision).
        self._standing = self.watched.standing()
        self._deal_start = None
        if not self.subs:
            return
        deal_start = self._deal_start_msg()
        full = None
        if self._wants(True):
            full = self._with_hands(self._event(deal, deal_start=deal_start), _hands(deal.hands))
        self._publish(self._event(deal, deal_start=deal_start), full)

    def _deal_start_msg(self) -> rpb.DealStart:
        """The DealStart of the deal in play as the public sees it (built once)."""
        if self._deal_start is None:
            assert self._deal is not None and self._standing is not None
            self._deal_start = messages.deal_start(
                self.watched.match_id,
                self._deal_index,
                self._deal,
                public_view(self._deal),
                totals=self._standing.penalty_totals,
                chips=self._standing.chips,
            )
        return self._deal_start

    def events(self, deal: Deal) -> None:
        """Send what happened since the last call (plays, tricks, draws, declarations)."""
        if deal is not self._deal:
            return
        start, self._pos = self._pos, len(deal.log)
        if start >= len(deal.log) or not self.subs:
            return
        index, mid = self._deal_index, self.watched.match_id
        if self._wants(False):
            views = event_views(deal, start, Spectator.PUBLIC)
            for i, view in enumerate(views):
                turn = deal if i == len(views) - 1 else None  # the seats to act after them all
                self._publish(self._event(turn, event=convert.event_to_pb(mid, index, view)), None)
        if self._wants(True):
            views = event_views(deal, start, Spectator.FULL)
            for i, (view, hands) in enumerate(zip(views, hands_after(deal, start), strict=True)):
                turn = deal if i == len(views) - 1 else None
                event = self._event(turn, event=convert.event_to_pb(mid, index, view))
                self._publish(None, self._with_hands(event, hands))

    def notice(self, event: rpb.Event) -> None:
        """A public notice about a seat (timeout, disconnect, resume, forfeit)."""
        if not self.subs:
            return
        msg = self._event(event=event)
        self._publish(msg, msg)

    def deal_ended(self, deal_end: rpb.DealEnd) -> None:
        """A deal ended (every card is public now)."""
        if not self.subs:
            return
        msg = self._event(deal_end=deal_end)
        self._publish(msg, msg)

    def match_ended(self, match_end: rpb.MatchEnd) -> None:
        """The match ended: send the result, then end every stream."""
        msg = self._event(match_end=match_end)
        self._publish(msg, msg)
        self.closed = True
        now = asyncio.get_running_loop().time()
        for sub in self.subs:
            sub.put(now + self._delay(sub.full), None, now)  # the end is never refused
        self.total.n -= len(self.subs)
        self.subs.clear()

    # -- messages ------------------------------------------------------------------------------

    @staticmethod
    def _with_hands(msg: mpb.SpectatorEvent, hands: Sequence[Sequence[str]]) -> mpb.SpectatorEvent:
        msg.hands.extend(mpb.SeatCards(seat=s, cards=cards) for s, cards in enumerate(hands))
        return msg

    def _snapshot(self, full: bool) -> mpb.SpectatorEvent:
        watched = self.watched
        msg = self._event(
            snapshot=mpb.SpectatorSnapshot(
                match=messages.match_start(
                    watched.match_id,
                    players=watched.players,
                    ruleset=convert.ruleset_to_pb(watched.rules),
                    time_control=watched.clock.to_pb(),
                    seating=watched.seating,
                    seed_commitment=watched.seed_commitment,
                    table_id=watched.table_id,
                ),
                full=full,
                delay_ms=round(self._delay(full) * 1000),
                timeouts=watched.public_timeouts,
                ladder=watched.ladder,
            )
        )
        deal = self._deal
        if deal is None:
            return msg
        msg.snapshot.deal_start.CopyFrom(self._deal_start_msg())
        msg.snapshot.deal.CopyFrom(
            convert.observation_to_pb(full_view(deal) if full else public_view(deal))
        )
        if full:
            self._with_hands(msg, _hands(deal.hands))
        return msg


def _hands(masks: Sequence[int]) -> list[tuple[str, ...]]:
    return [tuple(codes(m)) for m in masks]
