"""Conversions between engine values and protocol messages (no filtering happens here:
what a seat may see is decided by :mod:`kozel.engine.observation`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, cast

from google.protobuf import json_format
from google.protobuf.struct_pb2 import Struct

from kozel.engine.actions import Action, ActionKind, Combo, Decision
from kozel.engine.cards import CARD_OF, codes
from kozel.engine.errors import ErrorCode, IllegalAction
from kozel.engine.match import EndReason, MatchOutcome
from kozel.engine.observation import (
    DeclaredView,
    DrawnView,
    EventView,
    Observation,
    PlayView,
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


def add_legal_actions(request: rpb.DecisionRequest, legal: Sequence[Action]) -> None:
    """Append ``legal`` to ``request.legal_actions``, in order."""
    request.MergeFromString(b"".join(map(_legal_action_field, legal)))


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


def _trick_field(t: TrickView) -> bytes:
    """The encoding of one element of ``Observation.tricks``."""
    return pb.Observation(tricks=[trick_to_pb(t)]).SerializeToString()


def observation_to_pb(obs: Observation) -> pb.Observation:
    """A seat's observation as a protocol message."""
    msg = pb.Observation()
    fill_observation(msg, obs, b"".join(map(_trick_field, obs.tricks)))
    return msg


def fill_observation(msg: pb.Observation, obs: Observation, tricks: bytes) -> None:
    """Write ``obs`` into the empty ``msg``, its completed tricks given already encoded."""
    msg.seat, msg.players, msg.dealer = max(obs.seat, 0), obs.players, obs.dealer
    msg.trump, msg.trump_card, msg.trump_card_drawn = (
        obs.trump,
        obs.trump_card,
        obs.trump_card_drawn,
    )
    msg.hand.extend(obs.hand)
    msg.talon = obs.talon
    msg.seats.extend(
        [
            pb.SeatView(
                seat=s.seat,
                side=s.side,
                active=s.active,
                hand_size=s.hand_size,
                known_cards=s.known_cards,
                tricks_won=s.tricks_won,
                known_points=s.known_points,
            )
            for s in obs.seats
        ]
    )
    msg.to_act.extend(obs.to_act)
    msg.lead_cap, msg.deal_over = obs.lead_cap or 0, obs.deal_over
    if tricks:
        msg.MergeFromString(tricks)
    if obs.trick is not None:
        msg.trick.CopyFrom(trick_to_pb(obs.trick))


class ObservationEncoder:
    """Encodes the successive observations of one :class:`SeatObserver`: each completed
    trick is encoded once (the views it returns for them stay the same objects)."""

    __slots__ = ("_views", "_bytes")

    def __init__(self) -> None:
        self._views: list[TrickView] = []
        self._bytes = bytearray()  # the encodings of _views, concatenated

    def fill(self, msg: pb.Observation, obs: Observation) -> None:
        views, n = self._views, len(self._views)
        if n > len(obs.tricks) or (n and obs.tricks[n - 1] is not views[-1]):
            views.clear()  # viewed anew (the deal ended): start over
            self._bytes.clear()
            n = 0
        for t in obs.tricks[n:]:
            views.append(t)
            self._bytes += _trick_field(t)
        fill_observation(msg, obs, bytes(self._bytes))


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
