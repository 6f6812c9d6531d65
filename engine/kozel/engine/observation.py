"""What one seat may know: the only place where hidden information is filtered.

:func:`observe` builds a seat's :class:`Observation` from a deal; :func:`public_view` builds
what a spectator may see (:data:`Spectator.PUBLIC`); :func:`full_view` shows everything (for
replays, spectators after the delay, and the end of a deal). Nothing else in the project
decides what a seat or a spectator may see.

A seat sees: its own hand; the trump suit and indicator card; every face-up card played;
the number of face-down cards (and its own face-down cards); hand sizes; the talon size;
who won each trick; the cards publicly known to sit in a hand (the drawn indicator, face-up
cards returned by a mid-trick interruption); and the card points it can account for.
Declaration windows are sealed: a seat learns only its own request and, afterwards, the
combination that was led; to the others the table looks as if it awaits the next play.
When the deal ends every card is shown.

A spectator sees what anyone watching the table sees: no hand, no face-down card (unless
``discard_visibility`` is ``open``), the publicly known cards in hands, the combinations led;
a sealed window looks to it as it does to a seat that is not asked.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass
from typing import Any

from kozel.engine.actions import Decision
from kozel.engine.cards import SUITS, codes, points
from kozel.engine.deal import Deal, Declared, Drawn, Play, Returned, Trick
from kozel.engine.rules import DiscardVisibility


class Spectator(enum.Enum):
    """An observer without a seat: ``PUBLIC`` sees what anyone watching the table could see,
    ``FULL`` sees everything (replays, spectators after the delay)."""

    PUBLIC = "public"
    FULL = "full"


Observer = int | Spectator  # a seat number, or a spectator


# The four view classes are built at every decision the referee asks, so each spells out its
# __init__: compiled, the engine's would otherwise be the dataclass module's (interpreted),
# which cost about 4 % of a loaded referee's event loop. PlayView and TrickView are handed out
# again by SeatObserver (shared between observations) and are event views (dict keys): they
# are hashed by value and not frozen, since a frozen class's __init__ cannot be compiled to
# plain stores, but no code changes one.
@dataclass(slots=True, init=False, unsafe_hash=True)
class PlayView:
    """One play as a seat sees it: face-down cards are listed only for their owner. Immutable
    by contract (shared and hashed; see above)."""

    seat: int
    kind: str  # lead, beat or discard
    count: int
    cards: tuple[str, ...]  # empty when face down and not the observer's
    forced: bool

    def __init__(
        self, seat: int, kind: str, count: int, cards: tuple[str, ...], forced: bool = False
    ) -> None:
        self.seat = seat
        self.kind = kind
        self.count = count
        self.cards = cards
        self.forced = forced


@dataclass(slots=True, init=False, unsafe_hash=True)
class TrickView:
    """A trick as a seat sees it. ``winner`` is the seat now winning while it is in play.
    Immutable by contract, as :class:`PlayView`."""

    leader: int
    winner: int
    plays: tuple[PlayView, ...]
    combo: str | None
    known_points: int  # points of the cards this seat can see in the trick

    def __init__(
        self,
        leader: int,
        winner: int,
        plays: tuple[PlayView, ...],
        combo: str | None,
        known_points: int,
    ) -> None:
        self.leader = leader
        self.winner = winner
        self.plays = plays
        self.combo = combo
        self.known_points = known_points


@dataclass(slots=True, init=False)
class SeatView:
    """Public facts about one seat."""

    seat: int
    side: int
    active: bool
    hand_size: int
    known_cards: tuple[str, ...]  # cards everyone knows are in this hand
    tricks_won: int
    known_points: int  # points in this seat's won tricks that the observer can see

    def __init__(
        self,
        seat: int,
        side: int,
        active: bool,
        hand_size: int,
        known_cards: tuple[str, ...],
        tricks_won: int,
        known_points: int,
    ) -> None:
        self.seat = seat
        self.side = side
        self.active = active
        self.hand_size = hand_size
        self.known_cards = known_cards
        self.tricks_won = tricks_won
        self.known_points = known_points


@dataclass(slots=True, init=False)
class Observation:
    """Everything ``seat`` may know about the deal now."""

    seat: int
    players: int
    dealer: int
    trump: str
    trump_card: str
    trump_card_drawn: bool
    hand: tuple[str, ...]
    talon: int
    seats: tuple[SeatView, ...]
    tricks: tuple[TrickView, ...]
    trick: TrickView | None  # the trick in play
    decision: str  # what this seat is asked now: lead, respond, declare or none
    to_act: tuple[int, ...]  # seats publicly awaited (a sealed window shows only this seat)
    lead_cap: int | None  # the most cards this seat may lead now, when it is to lead
    deal_over: bool

    def __init__(
        self,
        seat: int,
        players: int,
        dealer: int,
        trump: str,
        trump_card: str,
        trump_card_drawn: bool,
        hand: tuple[str, ...],
        talon: int,
        seats: tuple[SeatView, ...],
        tricks: tuple[TrickView, ...],
        trick: TrickView | None,
        decision: str,
        to_act: tuple[int, ...],
        lead_cap: int | None,
        deal_over: bool,
    ) -> None:
        self.seat = seat
        self.players = players
        self.dealer = dealer
        self.trump = trump
        self.trump_card = trump_card
        self.trump_card_drawn = trump_card_drawn
        self.hand = hand
        self.talon = talon
        self.seats = seats
        self.tricks = tricks
        self.trick = trick
        self.decision = decision
        self.to_act = to_act
        self.lead_cap = lead_cap
        self.deal_over = deal_over

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _sees(p: Play, observer: Observer, open_discards: bool) -> bool:
    return p.face_up or open_discards or observer is Spectator.FULL or observer == p.seat


def _play_view(p: Play, observer: Observer, open_discards: bool) -> PlayView:
    visible = _sees(p, observer, open_discards)
    return PlayView(
        p.seat, str(p.kind), p.cards.bit_count(), tuple(codes(p.cards)) if visible else (), p.forced
    )


def _visible_mask(
    plays: tuple[Play, ...] | list[Play], observer: Observer, open_discards: bool
) -> int:
    m = 0
    for p in plays:
        if _sees(p, observer, open_discards):
            m |= p.cards
    return m


def _trick_view(t: Trick, observer: Observer, open_discards: bool) -> TrickView:
    return TrickView(
        t.leader,
        t.winner,
        tuple(_play_view(p, observer, open_discards) for p in t.plays),
        t.combo,
        points(_visible_mask(t.plays, observer, open_discards)),
    )


def observe(deal: Deal, seat: int) -> Observation:
    """The observation of ``seat`` (a seat at the table, in play or eliminated)."""
    if isinstance(seat, Spectator) or not 0 <= seat < deal.players:
        raise ValueError(f"seat {seat} is not at this table of {deal.players}")
    return SeatObserver(deal, seat).observe()


def full_view(deal: Deal) -> Observation:
    """Everything, with every hand listed in ``seats[i].known_cards`` (for replays)."""
    return SeatObserver(deal, Spectator.FULL).observe()


def public_view(deal: Deal) -> Observation:
    """What a spectator may see (``seat`` is -1, ``hand`` empty, ``decision`` none)."""
    return SeatObserver(deal, Spectator.PUBLIC).observe()


class SeatObserver:
    """The observations of one seat (or spectator) through one deal, built incrementally:
    each completed trick is viewed once, not at every decision (a deal's observation lists
    all of them). :func:`observe`, :func:`public_view` and :func:`full_view` are one-off uses
    of it; a holder (the referee, per seat and deal) gets the same observations cheaper."""

    __slots__ = ("deal", "observer", "_open", "_tricks", "_points", "_plays", "_play_views")

    def __init__(self, deal: Deal, observer: Observer) -> None:
        if isinstance(observer, int) and not 0 <= observer < deal.players:
            raise ValueError(f"seat {observer} is not at this table of {deal.players}")
        self.deal = deal
        self.observer = observer
        self._open: bool | None = None
        self._tricks: list[TrickView] = []
        self._points = [0] * deal.players  # known points of the completed tricks, by winner
        self._plays: list[Play] = []  # the plays of the trick in play viewed so far ...
        self._play_views: list[PlayView] = []  # ... and their views

    def observe(self) -> Observation:
        deal, observer = self.deal, self.observer
        open_d = _open_discards(deal)
        if open_d != self._open:  # the deal ended: every card is shown, view them anew
            self._open, self._tricks, self._points = open_d, [], [0] * deal.players
            self._plays, self._play_views = [], []
        tricks, seen = self._tricks, self._points
        for t in deal.tricks[len(tricks) :]:
            view = _trick_view(t, observer, open_d)
            tricks.append(view)
            seen[view.winner] += view.known_points
        return _build(deal, observer, tuple(tricks), seen, self._in_play(open_d))

    def _in_play(self, open_d: bool) -> tuple[PlayView, ...]:
        """The views of the trick in play's plays: a play keeps its view while it stays on the
        table (plays are immutable; one taken back is a different trick from then on)."""
        plays, views = self._plays, self._play_views
        current = self.deal.trick
        same = 0
        while same < len(plays) and same < len(current) and plays[same] is current[same]:
            same += 1
        del plays[same:], views[same:]
        for p in current[same:]:
            plays.append(p)
            views.append(_play_view(p, self.observer, open_d))
        return tuple(views)


def _open_discards(deal: Deal) -> bool:
    return deal.over or deal.rules.discard_visibility == DiscardVisibility.OPEN


def _build(
    deal: Deal,
    observer: Observer,
    tricks: tuple[TrickView, ...],
    seen_points: list[int],
    in_play: tuple[PlayView, ...],
) -> Observation:
    """The observation, given the views of the completed tricks, the known points they give
    each seat and the views of the plays of the trick in play."""
    seat = observer if isinstance(observer, int) else None
    asked, to_act = _awaited(deal, observer, seat)
    indicator_drawn = deal.talon.index(deal.indicator) < deal.talon_pos
    hand = deal.hands[seat] if seat is not None else 0
    return Observation(
        seat=-1 if seat is None else seat,
        players=deal.players,
        dealer=deal.dealer,
        trump=SUITS[deal.trump],
        trump_card=codes(1 << deal.indicator)[0],
        trump_card_drawn=indicator_drawn,
        hand=tuple(codes(hand)),
        talon=deal.talon_left,
        seats=_seat_views(deal, observer, seen_points),
        tricks=tricks,
        trick=_trick_in_play(deal, observer, in_play) if deal.trick else None,
        decision=str(deal.phase) if asked is not None else str(Decision.NONE),
        to_act=to_act,
        lead_cap=deal.lead_cap(asked)
        if asked is not None and deal.phase is Decision.LEAD
        else None,
        deal_over=deal.over,
    )


def _trick_in_play(deal: Deal, observer: Observer, in_play: tuple[PlayView, ...]) -> TrickView:
    """The trick in play, with the card points ``observer`` can see in it."""
    visible = _visible_mask(deal.trick, observer, _open_discards(deal))
    return TrickView(deal.trick[0].seat, deal.win_seat, in_play, deal.trick_combo, points(visible))


def _seat_views(deal: Deal, observer: Observer, seen_points: list[int]) -> tuple[SeatView, ...]:
    """Every seat as ``observer`` sees it: its publicly known cards, or every card when the
    observer sees everything or the deal is over."""
    reveal_all = observer is Spectator.FULL or deal.over
    return tuple(
        SeatView(
            seat=s,
            side=deal.side_of[s],
            active=s in deal.active,
            hand_size=deal.hands[s].bit_count(),
            known_cards=tuple(codes(deal.hands[s] if reveal_all else deal.known[s])),
            tricks_won=deal.tricks_won[s],
            known_points=seen_points[s],
        )
        for s in range(deal.players)
    )


def _awaited(
    deal: Deal, observer: Observer, seat: int | None
) -> tuple[int | None, tuple[int, ...]]:
    """The observer's seat if it is asked now (else None), and the seats it sees awaited: a
    sealed declaration window shows a seat only its own request."""
    to_act = deal.to_act
    asked = seat if seat is not None and seat in to_act else None
    if deal.phase is Decision.DECLARE and observer is not Spectator.FULL:
        to_act = _outwardly_awaited(deal) if asked is None else (asked,)
    return asked, tuple(to_act)


@dataclass(frozen=True, slots=True)
class DrawnView:
    """Cards drawn after a trick: your own cards, and how many each seat drew."""

    cards: tuple[str, ...]
    counts: tuple[int, ...]
    talon: int


@dataclass(frozen=True, slots=True)
class DeclaredView:
    """A combination won a declaration window (public: it is led face up next)."""

    seat: int
    combo: str
    cards: tuple[str, ...]


EventView = PlayView | TrickView | DrawnView | DeclaredView


def event_views(deal: Deal, start: int, observer: Observer) -> list[EventView]:
    """What ``observer`` (a seat or a spectator) may see of ``deal.log[start:]``, in order
    (returned tricks show no event of their own: the declaration that follows explains them).
    A spectator draws no cards: its ``DrawnView.cards`` is empty."""
    open_d = deal.rules.discard_visibility == DiscardVisibility.OPEN
    out: list[EventView] = []
    talon = deal.talon_left
    for entry in deal.log[start:]:
        if isinstance(entry, Play):
            out.append(_play_view(entry, observer, open_d))
        elif isinstance(entry, Trick):
            out.append(_trick_view(entry, observer, open_d))
        elif isinstance(entry, Drawn):
            own = entry.cards[observer] if isinstance(observer, int) else 0
            out.append(
                DrawnView(tuple(codes(own)), tuple(m.bit_count() for m in entry.cards), talon)
            )
        elif isinstance(entry, Declared):
            out.append(DeclaredView(entry.seat, str(entry.combo), tuple(codes(entry.cards))))
    return out


def hands_after(deal: Deal, start: int) -> list[tuple[tuple[str, ...], ...]]:
    """Every seat's hand right after each event of ``event_views(deal, start, ...)`` (one entry
    per view, same order): the full view's hands, rebuilt backwards from the hands now."""
    hands = list(deal.hands)
    out: list[tuple[tuple[str, ...], ...]] = []
    for entry in reversed(deal.log[start:]):
        if isinstance(entry, Returned):  # no view of its own; the cards went back to hands
            for p in entry.plays:
                hands[p.seat] &= ~p.cards
            continue
        out.append(tuple(tuple(codes(h)) for h in hands))
        if isinstance(entry, Play):
            hands[entry.seat] |= entry.cards
        elif isinstance(entry, Drawn):
            for s, m in enumerate(entry.cards):
                hands[s] &= ~m
    out.reverse()
    return out


def _outwardly_awaited(deal: Deal) -> tuple[int, ...]:
    """Who a seat not asked in a window sees as awaited: the seat due to play next."""
    if deal.window_mid:
        return (deal.responders[deal.resp_i],)
    return (deal.leader,)


def visible_cards(obs: Observation) -> set[str]:
    """Every card code an observation mentions (for leak checks)."""
    cards = set(obs.hand) | {obs.trump_card}
    for s in obs.seats:
        cards.update(s.known_cards)
    for t in obs.tricks + ((obs.trick,) if obs.trick else ()):
        for p in t.plays:
            cards.update(p.cards)
    return cards
