"""What one seat may know: the only place where hidden information is filtered.

:func:`observe` builds a seat's :class:`Observation` from a deal; :func:`full_view` shows
everything (for replays, spectators after the delay, and the end of a deal). Nothing else in
the project decides what a seat may see.

A seat sees: its own hand; the trump suit and indicator card; every face-up card played;
the number of face-down cards (and its own face-down cards); hand sizes; the talon size;
who won each trick; the cards publicly known to sit in a hand (the drawn indicator, face-up
cards returned by a mid-trick interruption); and the card points it can account for.
Declaration windows are sealed: a seat learns only its own request and, afterwards, the
combination that was led; to the others the table looks as if it awaits the next play.
When the deal ends every card is shown.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from kozel.engine.actions import Decision
from kozel.engine.cards import SUITS, codes, points
from kozel.engine.deal import Deal, Declared, Drawn, Play, Trick
from kozel.engine.rules import DiscardVisibility


@dataclass(frozen=True, slots=True)
class PlayView:
    """One play as a seat sees it: face-down cards are listed only for their owner."""

    seat: int
    kind: str  # lead, beat or discard
    count: int
    cards: tuple[str, ...]  # empty when face down and not the observer's
    forced: bool = False


@dataclass(frozen=True, slots=True)
class TrickView:
    """A trick as a seat sees it. ``winner`` is the seat now winning while it is in play."""

    leader: int
    winner: int
    plays: tuple[PlayView, ...]
    combo: str | None
    known_points: int  # points of the cards this seat can see in the trick


@dataclass(frozen=True, slots=True)
class SeatView:
    """Public facts about one seat."""

    seat: int
    side: int
    active: bool
    hand_size: int
    known_cards: tuple[str, ...]  # cards everyone knows are in this hand
    tricks_won: int
    known_points: int  # points in this seat's won tricks that the observer can see


@dataclass(frozen=True, slots=True)
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _play_view(p: Play, observer: int | None, open_discards: bool) -> PlayView:
    visible = p.face_up or open_discards or observer is None or observer == p.seat
    return PlayView(p.seat, str(p.kind), p.cards.bit_count(),
                    tuple(codes(p.cards)) if visible else (), p.forced)


def _visible_mask(plays: tuple[Play, ...] | list[Play], observer: int | None,
                  open_discards: bool) -> int:
    m = 0
    for p in plays:
        if p.face_up or open_discards or observer is None or observer == p.seat:
            m |= p.cards
    return m


def observe(deal: Deal, seat: int) -> Observation:
    """The observation of ``seat`` (a seat at the table, in play or eliminated)."""
    if not 0 <= seat < deal.players:
        raise ValueError(f"seat {seat} is not at this table of {deal.players}")
    return _build(deal, seat)


def full_view(deal: Deal) -> Observation:
    """Everything, with every hand listed in ``seats[i].known_cards`` (for replays)."""
    return _build(deal, None)


def _build(deal: Deal, observer: int | None) -> Observation:
    open_d = deal.over or deal.rules.discard_visibility == DiscardVisibility.OPEN
    reveal_all = observer is None or deal.over  # every card is shown when the deal ends
    tricks = tuple(
        TrickView(t.leader, t.winner, tuple(_play_view(p, observer, open_d) for p in t.plays),
                  t.combo, points(_visible_mask(t.plays, observer, open_d)))
        for t in deal.tricks
    )
    seen_points = [0] * deal.players
    for t in tricks:
        seen_points[t.winner] += t.known_points
    trick = None
    if deal.trick:
        trick = TrickView(deal.trick[0].seat, deal.win_seat,
                          tuple(_play_view(p, observer, open_d) for p in deal.trick),
                          deal.trick_combo, points(_visible_mask(deal.trick, observer, open_d)))
    seats = tuple(
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
    to_act = deal.to_act
    asked = observer is not None and observer in to_act
    if deal.phase is Decision.DECLARE and observer is not None and not asked:
        to_act = _outwardly_awaited(deal)  # a sealed window looks like the play it delays
    elif deal.phase is Decision.DECLARE and observer is not None:
        to_act = (observer,)
    indicator_drawn = deal.talon.index(deal.indicator) < deal.talon_pos
    hand = deal.hands[observer] if observer is not None else 0
    return Observation(
        seat=-1 if observer is None else observer,
        players=deal.players,
        dealer=deal.dealer,
        trump=SUITS[deal.trump],
        trump_card=codes(1 << deal.indicator)[0],
        trump_card_drawn=indicator_drawn,
        hand=tuple(codes(hand)),
        talon=deal.talon_left,
        seats=seats,
        tricks=tricks,
        trick=trick,
        decision=str(deal.phase) if asked else str(Decision.NONE),
        to_act=tuple(to_act),
        lead_cap=deal.lead_cap(observer) if asked and deal.phase is Decision.LEAD else None,
        deal_over=deal.over,
    )


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


def event_views(deal: Deal, start: int, observer: int) -> list[EventView]:
    """What ``observer`` may see of ``deal.log[start:]``, in order (returned tricks show no
    event of their own: the declaration that follows explains them)."""
    open_d = deal.rules.discard_visibility == DiscardVisibility.OPEN
    out: list[EventView] = []
    talon = deal.talon_left
    for entry in deal.log[start:]:
        if isinstance(entry, Play):
            out.append(_play_view(entry, observer, open_d))
        elif isinstance(entry, Trick):
            out.append(TrickView(
                entry.leader, entry.winner,
                tuple(_play_view(p, observer, open_d) for p in entry.plays), entry.combo,
                points(_visible_mask(entry.plays, observer, open_d))))
        elif isinstance(entry, Drawn):
            out.append(DrawnView(tuple(codes(entry.cards[observer])),
                                 tuple(m.bit_count() for m in entry.cards), talon))
        elif isinstance(entry, Declared):
            out.append(DeclaredView(entry.seat, str(entry.combo), tuple(codes(entry.cards))))
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

