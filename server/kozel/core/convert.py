"""Conversions between engine values and protocol messages (no filtering happens here:
what a seat may see is decided by :mod:`kozel.engine.observation`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, cast

from google.protobuf import json_format
from google.protobuf.struct_pb2 import Struct

from kozel.engine.actions import Action, ActionKind, Combo, Decision
from kozel.engine.cards import CARD_OF, CODES, codes
from kozel.engine.errors import ErrorCode, IllegalAction
from kozel.engine.match import EndReason, MatchOutcome
from kozel.engine.observation import (
    DeclaredView,
    DrawnView,
    EventView,
    Observation,
    PlayView,
    SeatView,
    TrickView,
)
from kozel.engine.rules import Ruleset
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb

DECISION_TO_PB = {
    Decision.LEAD: pb.DECISION_KIND_LEAD,
    Decision.RESPOND: pb.DECISION_KIND_RESPOND,
    Decision.DECLARE: pb.DECISION_KIND_DECLARE,
    Decision.NONE: pb.DECISION_KIND_UNSPECIFIED,
}
KIND_TO_PB = {
    ActionKind.LEAD: pb.ACTION_KIND_LEAD,
    ActionKind.BEAT: pb.ACTION_KIND_BEAT,
    ActionKind.DISCARD: pb.ACTION_KIND_DISCARD,
    ActionKind.DECLARE: pb.ACTION_KIND_DECLARE,
    ActionKind.PASS: pb.ACTION_KIND_PASS,
}
PB_TO_KIND = {v: k for k, v in KIND_TO_PB.items()}
COMBO_TO_PB = {
    None: pb.COMBO_UNSPECIFIED,
    Combo.MOSCOW: pb.COMBO_MOSCOW,
    Combo.MOLODKA: pb.COMBO_MOLODKA,
}
PB_TO_COMBO = {v: k for k, v in COMBO_TO_PB.items()}
# The stubs type ``Value`` as a plain int; the names are the enum's own.
ERROR_TO_PB: dict[ErrorCode, pb.ErrorCode] = {
    code: cast("pb.ErrorCode", pb.ErrorCode.Value(f"ERROR_CODE_{code.value}")) for code in ErrorCode
}
END_REASON_TO_PB = {
    EndReason.LIMIT: pb.MATCH_END_REASON_LIMIT,
    EndReason.FIXED_DEALS: pb.MATCH_END_REASON_FIXED_DEALS,
    EndReason.FORFEIT: pb.MATCH_END_REASON_FORFEIT,
}
PB_TO_END_REASON = {v: k for k, v in END_REASON_TO_PB.items()}


def outcome_from_pb(result: pb.MatchResult, side_of: Sequence[int], money: bool) -> MatchOutcome:
    """The engine's outcome of a recorded result (a replay's, the store's), for its ranks.
    An aborted or unfinished result has no end reason."""
    return MatchOutcome(
        money=money,
        penalty_totals=tuple(result.penalty_totals),
        chips=tuple(result.chips),
        eliminated=tuple(sorted(result.eliminated_sides)),
        forfeited=tuple(sorted({side_of[f.seat] for f in result.forfeits})),
        reason=PB_TO_END_REASON.get(result.reason),
        winner=None if result.draw else result.winner_side,
    )


def action_to_pb(action: Action) -> pb.Action:
    """An engine action as a protocol ``Action``."""
    return pb.Action(
        kind=KIND_TO_PB[action.kind], cards=codes(action.cards), combo=COMBO_TO_PB[action.combo]
    )


# Memoised encodings. A repeated field's encoding is the concatenation of its elements', so a
# message takes many memoised elements in one MergeFromString. Bytes, not messages: a message
# holds an arena of its own, over ten times the size of its encoding.
@lru_cache(maxsize=16384)
def _legal_action_field(action: Action) -> bytes:
    return rpb.DecisionRequest(legal_actions=[action_to_pb(action)]).SerializeToString()


def legal_action_fields(legal: Sequence[Action]) -> bytes:
    """``legal`` encoded as the elements of ``DecisionRequest.legal_actions``, in order."""
    return b"".join(map(_legal_action_field, legal))


def action_from_pb(msg: pb.Action) -> tuple[ActionKind, list[int], Combo | None]:
    """A protocol ``Action`` as (kind, card numbers, combo); raises ``MALFORMED`` if unreadable.

    Card numbers are returned as a list so that duplicates can still be reported."""
    kind = PB_TO_KIND.get(msg.kind)
    if kind is None:
        raise IllegalAction(ErrorCode.MALFORMED, "the action has no kind")
    unknown = [c for c in msg.cards if c.upper() not in CARD_OF]
    if unknown:
        raise IllegalAction(ErrorCode.MALFORMED, f"unknown card codes: {', '.join(unknown)}")
    combo = PB_TO_COMBO.get(msg.combo)
    if kind is ActionKind.DECLARE and combo is None:
        raise IllegalAction(ErrorCode.MALFORMED, "a declaration must name its combination")
    return kind, [CARD_OF[c.upper()] for c in msg.cards], combo


def ruleset_to_pb(rules: Ruleset) -> pb.Ruleset:
    """Every knob's effective value."""
    return pb.Ruleset(preset=rules.name, options=dict_to_struct(rules.to_options()))


def ruleset_from_pb(msg: pb.Ruleset) -> Ruleset:
    """The ruleset a message names; raises ``RulesError`` naming a bad knob."""
    options = struct_to_dict(msg.options) if msg.HasField("options") else {}
    return Ruleset.preset(msg.preset or "classic", options)


def dict_to_struct(data: Mapping[str, Any]) -> Struct:
    s = Struct()
    s.update(dict(data))
    return s


def struct_to_dict(s: Struct) -> dict[str, Any]:
    """A Struct as plain JSON values; whole numbers come back as ints, not floats."""
    plain: dict[str, Any] = _ints(json_format.MessageToDict(s))
    return plain


def _ints(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_ints(v) for v in value]
    if isinstance(value, dict):
        return {k: _ints(v) for k, v in value.items()}
    return value


def play_to_pb(p: PlayView) -> pb.Play:
    return pb.Play(
        seat=p.seat,
        kind=KIND_TO_PB[ActionKind(p.kind)],
        count=p.count,
        cards=p.cards,
        forced=p.forced,
    )


def trick_to_pb(t: TrickView) -> pb.Trick:
    return pb.Trick(
        leader=t.leader,
        winner=t.winner,
        plays=[play_to_pb(p) for p in t.plays],
        combo=COMBO_TO_PB[Combo(t.combo) if t.combo else None],
        known_points=t.known_points,
    )


def seat_view_to_pb(s: SeatView) -> pb.SeatView:
    return pb.SeatView(
        seat=s.seat,
        side=s.side,
        active=s.active,
        hand_size=s.hand_size,
        known_cards=s.known_cards,
        tricks_won=s.tricks_won,
        known_points=s.known_points,
    )


def observation_to_pb(obs: Observation) -> pb.Observation:
    """A seat's observation as a protocol message, field by field (the plain way; the
    referee's hot path uses :class:`ObservationEncoder`, which must write the same)."""
    msg = pb.Observation(
        seat=max(obs.seat, 0),
        players=obs.players,
        dealer=obs.dealer,
        trump=obs.trump,
        trump_card=obs.trump_card,
        trump_card_drawn=obs.trump_card_drawn,
        hand=obs.hand,
        talon=obs.talon,
        seats=[seat_view_to_pb(s) for s in obs.seats],
        tricks=[trick_to_pb(t) for t in obs.tricks],
        to_act=obs.to_act,
        lead_cap=obs.lead_cap or 0,
        deal_over=obs.deal_over,
    )
    if obs.trick is not None:
        msg.trick.CopyFrom(trick_to_pb(obs.trick))
    return msg


# The encoder builds an observation's encoding from pieces, each the encoding of one field (or
# of one element of a repeated field) made by protobuf and memoised, concatenated in field
# order, so the result is byte for byte what ``SerializeToString`` gives (tests check it). The
# only wire format written here is the tag and length in front of an embedded message
# (:func:`length_delimited`) and an unsigned varint field (:func:`varint_field`). Memo keys
# are plain values (tuples of ints and strings, which the cyclic collector stops tracking).


def _encode_varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_VARINTS = tuple(_encode_varint(n) for n in range(2048))  # tags and most lengths


def _varint(n: int) -> bytes:
    return _VARINTS[n] if n < 2048 else _encode_varint(n)


def length_delimited(number: int, payload: bytes) -> bytes:
    """A length-delimited field (an embedded message) of field number ``number``: its tag,
    the payload's length, the payload."""
    return _VARINTS[number << 3 | 2] + _varint(len(payload)) + payload


def varint_field(number: int, value: int, bits: int = 32) -> bytes:
    """An unsigned integer (``bits`` wide: 32 or 64), enum or bool field of field number
    ``number`` as protobuf writes it: nothing for 0 (the default of a field without presence),
    else its tag and the varint. A value the field cannot hold is refused, as protobuf does."""
    if not value:
        return b""
    if not 0 < value < 1 << bits:
        raise ValueError(f"{value} does not fit an unsigned {bits}-bit field")
    return _VARINTS[number << 3] + _varint(value)


_OBSERVATION_TRICKS = pb.Observation.TRICKS_FIELD_NUMBER
_OBSERVATION_TRICK = pb.Observation.TRICK_FIELD_NUMBER
_HAND_FIELD = {code: pb.Observation(hand=[code]).SerializeToString() for code in CODES}
"""One element of ``Observation.hand``, by card code."""


@lru_cache(maxsize=16384)
def _play_field(view: tuple[int, str, int, tuple[str, ...], bool]) -> bytes:
    """One element of ``Trick.plays``: a ``PlayView``'s fields as the key."""
    return pb.Trick(plays=[play_to_pb(PlayView(*view))]).SerializeToString()


@lru_cache(maxsize=4096)
def _trick_head(leader: int, winner: int) -> bytes:
    """A ``Trick``'s fields before its plays."""
    return pb.Trick(leader=leader, winner=winner).SerializeToString()


@lru_cache(maxsize=1024)
def _trick_tail(combo: str | None, known_points: int) -> bytes:
    """A ``Trick``'s fields after its plays."""
    return pb.Trick(
        combo=COMBO_TO_PB[Combo(combo) if combo else None], known_points=known_points
    ).SerializeToString()


def _trick_bytes(t: TrickView) -> bytes:
    """A whole ``Trick`` message."""
    parts = [_trick_head(t.leader, t.winner)]
    parts += [_play_field((p.seat, p.kind, p.count, p.cards, p.forced)) for p in t.plays]
    parts.append(_trick_tail(t.combo, t.known_points))
    return b"".join(parts)


def encoded_tricks(number: int, views: Sequence[TrickView]) -> bytes:
    """``views`` encoded as the elements of field ``number``, a repeated ``Trick``."""
    return b"".join([length_delimited(number, _trick_bytes(t)) for t in views])


@lru_cache(maxsize=16384)
def _seat_field(view: tuple[int, int, bool, int, tuple[str, ...], int, int]) -> bytes:
    """One element of ``Observation.seats``: a ``SeatView``'s fields as the key."""
    return pb.Observation(seats=[seat_view_to_pb(SeatView(*view))]).SerializeToString()


_DRAWN_FIELD = pb.Observation(trump_card_drawn=True).SerializeToString()


@lru_cache(maxsize=256)
def _talon_field(talon: int) -> bytes:
    return pb.Observation(talon=talon).SerializeToString()


@lru_cache(maxsize=1024)
def _tail_fields(to_act: tuple[int, ...], lead_cap: int, deal_over: bool) -> bytes:
    """An ``Observation``'s fields after the trick in play."""
    return pb.Observation(to_act=to_act, lead_cap=lead_cap, deal_over=deal_over).SerializeToString()


class ObservationEncoder:
    """Encodes the successive observations of one :class:`SeatObserver` (the referee's hot
    path): each completed trick is encoded once (the views it returns for them stay the same
    objects), the fields that stay the same through a deal once, and the rest is put together
    from memoised encodings, instead of being set field by field."""

    __slots__ = ("_views", "_tricks", "_head", "_head_of")

    def __init__(self) -> None:
        self._views: list[TrickView] = []
        self._tricks = bytearray()  # the encodings of _views as Observation.tricks, concatenated
        self._head = b""  # the fields before trump_card_drawn, for the values in _head_of
        self._head_of: tuple[int, int, int, str, str] | None = None

    def encode(self, obs: Observation) -> bytes:
        """``obs`` as an encoded ``kozel.v1.Observation``."""
        views, n = self._views, len(self._views)
        if n > len(obs.tricks) or (n and obs.tricks[n - 1] is not views[-1]):
            views.clear()  # viewed anew (the deal ended): start over
            self._tricks.clear()
            n = 0
        if n < len(obs.tricks):
            views += obs.tricks[n:]
            self._tricks += encoded_tricks(_OBSERVATION_TRICKS, obs.tricks[n:])
        key = (max(obs.seat, 0), obs.players, obs.dealer, obs.trump, obs.trump_card)
        if key != self._head_of:
            self._head_of = key
            seat, players, dealer, trump, trump_card = key
            self._head = pb.Observation(
                seat=seat, players=players, dealer=dealer, trump=trump, trump_card=trump_card
            ).SerializeToString()
        parts: list[bytes | bytearray] = [self._head]
        if obs.trump_card_drawn:
            parts.append(_DRAWN_FIELD)
        parts += [_HAND_FIELD[c] for c in obs.hand]
        parts.append(_talon_field(obs.talon))
        parts += [
            _seat_field(
                (s.seat, s.side, s.active, s.hand_size, s.known_cards, s.tricks_won, s.known_points)
            )
            for s in obs.seats
        ]
        parts.append(self._tricks)
        if obs.trick is not None:
            parts.append(length_delimited(_OBSERVATION_TRICK, _trick_bytes(obs.trick)))
        parts.append(_tail_fields(obs.to_act, obs.lead_cap or 0, obs.deal_over))
        return b"".join(parts)

    def fill(self, msg: pb.Observation, obs: Observation) -> None:
        """Write ``obs`` into the empty ``msg``."""
        msg.MergeFromString(self.encode(obs))


def event_to_pb(match_id: str, deal_index: int, view: EventView) -> rpb.Event:
    """An event view (already filtered for its observer) as a protocol ``Event``."""
    event = rpb.Event(match_id=match_id, deal_index=deal_index)
    if isinstance(view, PlayView):
        event.played.CopyFrom(play_to_pb(view))
    elif isinstance(view, DrawnView):
        event.drawn.CopyFrom(rpb.Drawn(cards=view.cards, counts=view.counts, talon=view.talon))
    elif isinstance(view, DeclaredView):
        event.declared.CopyFrom(
            rpb.Declared(seat=view.seat, combo=COMBO_TO_PB[Combo(view.combo)], cards=view.cards)
        )
    else:
        event.trick_taken.CopyFrom(rpb.TrickTaken(trick=trick_to_pb(view)))
    return event
