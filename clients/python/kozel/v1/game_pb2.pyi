from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DecisionKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DECISION_KIND_UNSPECIFIED: _ClassVar[DecisionKind]
    DECISION_KIND_LEAD: _ClassVar[DecisionKind]
    DECISION_KIND_RESPOND: _ClassVar[DecisionKind]
    DECISION_KIND_DECLARE: _ClassVar[DecisionKind]

class ActionKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACTION_KIND_UNSPECIFIED: _ClassVar[ActionKind]
    ACTION_KIND_LEAD: _ClassVar[ActionKind]
    ACTION_KIND_BEAT: _ClassVar[ActionKind]
    ACTION_KIND_DISCARD: _ClassVar[ActionKind]
    ACTION_KIND_DECLARE: _ClassVar[ActionKind]
    ACTION_KIND_PASS: _ClassVar[ActionKind]

class Combo(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMBO_UNSPECIFIED: _ClassVar[Combo]
    COMBO_MOSCOW: _ClassVar[Combo]
    COMBO_MOLODKA: _ClassVar[Combo]

class ErrorCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ERROR_CODE_UNSPECIFIED: _ClassVar[ErrorCode]
    ERROR_CODE_MALFORMED: _ClassVar[ErrorCode]
    ERROR_CODE_WRONG_DECISION: _ClassVar[ErrorCode]
    ERROR_CODE_DECLARATION_NOT_ALLOWED: _ClassVar[ErrorCode]
    ERROR_CODE_NOT_YOUR_TURN: _ClassVar[ErrorCode]
    ERROR_CODE_DUPLICATE_CARD: _ClassVar[ErrorCode]
    ERROR_CODE_CARD_NOT_IN_HAND: _ClassVar[ErrorCode]
    ERROR_CODE_WRONG_CARD_COUNT: _ClassVar[ErrorCode]
    ERROR_CODE_MIXED_SUITS: _ClassVar[ErrorCode]
    ERROR_CODE_LEAD_SIZE_NOT_ALLOWED: _ClassVar[ErrorCode]
    ERROR_CODE_DOES_NOT_BEAT: _ClassVar[ErrorCode]
    ERROR_CODE_NOT_A_COMBINATION: _ClassVar[ErrorCode]
    ERROR_CODE_UNKNOWN_REQUEST: _ClassVar[ErrorCode]

class MatchEndReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MATCH_END_REASON_UNSPECIFIED: _ClassVar[MatchEndReason]
    MATCH_END_REASON_LIMIT: _ClassVar[MatchEndReason]
    MATCH_END_REASON_FIXED_DEALS: _ClassVar[MatchEndReason]
    MATCH_END_REASON_FORFEIT: _ClassVar[MatchEndReason]
    MATCH_END_REASON_ABORTED: _ClassVar[MatchEndReason]

class ForfeitReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FORFEIT_REASON_UNSPECIFIED: _ClassVar[ForfeitReason]
    FORFEIT_REASON_STRIKES: _ClassVar[ForfeitReason]
    FORFEIT_REASON_ILLEGAL_ACTIONS: _ClassVar[ForfeitReason]
    FORFEIT_REASON_DISCONNECTED: _ClassVar[ForfeitReason]
    FORFEIT_REASON_LEFT: _ClassVar[ForfeitReason]
DECISION_KIND_UNSPECIFIED: DecisionKind
DECISION_KIND_LEAD: DecisionKind
DECISION_KIND_RESPOND: DecisionKind
DECISION_KIND_DECLARE: DecisionKind
ACTION_KIND_UNSPECIFIED: ActionKind
ACTION_KIND_LEAD: ActionKind
ACTION_KIND_BEAT: ActionKind
ACTION_KIND_DISCARD: ActionKind
ACTION_KIND_DECLARE: ActionKind
ACTION_KIND_PASS: ActionKind
COMBO_UNSPECIFIED: Combo
COMBO_MOSCOW: Combo
COMBO_MOLODKA: Combo
ERROR_CODE_UNSPECIFIED: ErrorCode
ERROR_CODE_MALFORMED: ErrorCode
ERROR_CODE_WRONG_DECISION: ErrorCode
ERROR_CODE_DECLARATION_NOT_ALLOWED: ErrorCode
ERROR_CODE_NOT_YOUR_TURN: ErrorCode
ERROR_CODE_DUPLICATE_CARD: ErrorCode
ERROR_CODE_CARD_NOT_IN_HAND: ErrorCode
ERROR_CODE_WRONG_CARD_COUNT: ErrorCode
ERROR_CODE_MIXED_SUITS: ErrorCode
ERROR_CODE_LEAD_SIZE_NOT_ALLOWED: ErrorCode
ERROR_CODE_DOES_NOT_BEAT: ErrorCode
ERROR_CODE_NOT_A_COMBINATION: ErrorCode
ERROR_CODE_UNKNOWN_REQUEST: ErrorCode
MATCH_END_REASON_UNSPECIFIED: MatchEndReason
MATCH_END_REASON_LIMIT: MatchEndReason
MATCH_END_REASON_FIXED_DEALS: MatchEndReason
MATCH_END_REASON_FORFEIT: MatchEndReason
MATCH_END_REASON_ABORTED: MatchEndReason
FORFEIT_REASON_UNSPECIFIED: ForfeitReason
FORFEIT_REASON_STRIKES: ForfeitReason
FORFEIT_REASON_ILLEGAL_ACTIONS: ForfeitReason
FORFEIT_REASON_DISCONNECTED: ForfeitReason
FORFEIT_REASON_LEFT: ForfeitReason

class Action(_message.Message):
    __slots__ = ("kind", "cards", "combo")
    KIND_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    COMBO_FIELD_NUMBER: _ClassVar[int]
    kind: ActionKind
    cards: _containers.RepeatedScalarFieldContainer[str]
    combo: Combo
    def __init__(self, kind: _Optional[_Union[ActionKind, str]] = ..., cards: _Optional[_Iterable[str]] = ..., combo: _Optional[_Union[Combo, str]] = ...) -> None: ...

class Play(_message.Message):
    __slots__ = ("seat", "kind", "count", "cards", "forced")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    FORCED_FIELD_NUMBER: _ClassVar[int]
    seat: int
    kind: ActionKind
    count: int
    cards: _containers.RepeatedScalarFieldContainer[str]
    forced: bool
    def __init__(self, seat: _Optional[int] = ..., kind: _Optional[_Union[ActionKind, str]] = ..., count: _Optional[int] = ..., cards: _Optional[_Iterable[str]] = ..., forced: _Optional[bool] = ...) -> None: ...

class Trick(_message.Message):
    __slots__ = ("leader", "winner", "plays", "combo", "known_points")
    LEADER_FIELD_NUMBER: _ClassVar[int]
    WINNER_FIELD_NUMBER: _ClassVar[int]
    PLAYS_FIELD_NUMBER: _ClassVar[int]
    COMBO_FIELD_NUMBER: _ClassVar[int]
    KNOWN_POINTS_FIELD_NUMBER: _ClassVar[int]
    leader: int
    winner: int
    plays: _containers.RepeatedCompositeFieldContainer[Play]
    combo: Combo
    known_points: int
    def __init__(self, leader: _Optional[int] = ..., winner: _Optional[int] = ..., plays: _Optional[_Iterable[_Union[Play, _Mapping]]] = ..., combo: _Optional[_Union[Combo, str]] = ..., known_points: _Optional[int] = ...) -> None: ...

class SeatView(_message.Message):
    __slots__ = ("seat", "side", "active", "hand_size", "known_cards", "tricks_won", "known_points")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    SIDE_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    HAND_SIZE_FIELD_NUMBER: _ClassVar[int]
    KNOWN_CARDS_FIELD_NUMBER: _ClassVar[int]
    TRICKS_WON_FIELD_NUMBER: _ClassVar[int]
    KNOWN_POINTS_FIELD_NUMBER: _ClassVar[int]
    seat: int
    side: int
    active: bool
    hand_size: int
    known_cards: _containers.RepeatedScalarFieldContainer[str]
    tricks_won: int
    known_points: int
    def __init__(self, seat: _Optional[int] = ..., side: _Optional[int] = ..., active: _Optional[bool] = ..., hand_size: _Optional[int] = ..., known_cards: _Optional[_Iterable[str]] = ..., tricks_won: _Optional[int] = ..., known_points: _Optional[int] = ...) -> None: ...

class Observation(_message.Message):
    __slots__ = ("seat", "players", "dealer", "trump", "trump_card", "trump_card_drawn", "hand", "talon", "seats", "tricks", "trick", "to_act", "lead_cap", "deal_over")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    DEALER_FIELD_NUMBER: _ClassVar[int]
    TRUMP_FIELD_NUMBER: _ClassVar[int]
    TRUMP_CARD_FIELD_NUMBER: _ClassVar[int]
    TRUMP_CARD_DRAWN_FIELD_NUMBER: _ClassVar[int]
    HAND_FIELD_NUMBER: _ClassVar[int]
    TALON_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    TRICKS_FIELD_NUMBER: _ClassVar[int]
    TRICK_FIELD_NUMBER: _ClassVar[int]
    TO_ACT_FIELD_NUMBER: _ClassVar[int]
    LEAD_CAP_FIELD_NUMBER: _ClassVar[int]
    DEAL_OVER_FIELD_NUMBER: _ClassVar[int]
    seat: int
    players: int
    dealer: int
    trump: str
    trump_card: str
    trump_card_drawn: bool
    hand: _containers.RepeatedScalarFieldContainer[str]
    talon: int
    seats: _containers.RepeatedCompositeFieldContainer[SeatView]
    tricks: _containers.RepeatedCompositeFieldContainer[Trick]
    trick: Trick
    to_act: _containers.RepeatedScalarFieldContainer[int]
    lead_cap: int
    deal_over: bool
    def __init__(self, seat: _Optional[int] = ..., players: _Optional[int] = ..., dealer: _Optional[int] = ..., trump: _Optional[str] = ..., trump_card: _Optional[str] = ..., trump_card_drawn: _Optional[bool] = ..., hand: _Optional[_Iterable[str]] = ..., talon: _Optional[int] = ..., seats: _Optional[_Iterable[_Union[SeatView, _Mapping]]] = ..., tricks: _Optional[_Iterable[_Union[Trick, _Mapping]]] = ..., trick: _Optional[_Union[Trick, _Mapping]] = ..., to_act: _Optional[_Iterable[int]] = ..., lead_cap: _Optional[int] = ..., deal_over: _Optional[bool] = ...) -> None: ...

class Ruleset(_message.Message):
    __slots__ = ("preset", "options")
    PRESET_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    preset: str
    options: _struct_pb2.Struct
    def __init__(self, preset: _Optional[str] = ..., options: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class TimeControl(_message.Message):
    __slots__ = ("move_ms", "bank_ms", "max_strikes", "max_retries", "grace_ms")
    MOVE_MS_FIELD_NUMBER: _ClassVar[int]
    BANK_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_STRIKES_FIELD_NUMBER: _ClassVar[int]
    MAX_RETRIES_FIELD_NUMBER: _ClassVar[int]
    GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    move_ms: int
    bank_ms: int
    max_strikes: int
    max_retries: int
    grace_ms: int
    def __init__(self, move_ms: _Optional[int] = ..., bank_ms: _Optional[int] = ..., max_strikes: _Optional[int] = ..., max_retries: _Optional[int] = ..., grace_ms: _Optional[int] = ...) -> None: ...

class Forfeit(_message.Message):
    __slots__ = ("seat", "deal_index", "reason")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    DEAL_INDEX_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    seat: int
    deal_index: int
    reason: ForfeitReason
    def __init__(self, seat: _Optional[int] = ..., deal_index: _Optional[int] = ..., reason: _Optional[_Union[ForfeitReason, str]] = ...) -> None: ...

class MatchResult(_message.Message):
    __slots__ = ("reason", "draw", "winner_side", "penalty_totals", "chips", "eliminated_sides", "forfeits", "timeouts", "rejections", "deals")
    REASON_FIELD_NUMBER: _ClassVar[int]
    DRAW_FIELD_NUMBER: _ClassVar[int]
    WINNER_SIDE_FIELD_NUMBER: _ClassVar[int]
    PENALTY_TOTALS_FIELD_NUMBER: _ClassVar[int]
    CHIPS_FIELD_NUMBER: _ClassVar[int]
    ELIMINATED_SIDES_FIELD_NUMBER: _ClassVar[int]
    FORFEITS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    REJECTIONS_FIELD_NUMBER: _ClassVar[int]
    DEALS_FIELD_NUMBER: _ClassVar[int]
    reason: MatchEndReason
    draw: bool
    winner_side: int
    penalty_totals: _containers.RepeatedScalarFieldContainer[int]
    chips: _containers.RepeatedScalarFieldContainer[int]
    eliminated_sides: _containers.RepeatedScalarFieldContainer[int]
    forfeits: _containers.RepeatedCompositeFieldContainer[Forfeit]
    timeouts: _containers.RepeatedScalarFieldContainer[int]
    rejections: _containers.RepeatedScalarFieldContainer[int]
    deals: int
    def __init__(self, reason: _Optional[_Union[MatchEndReason, str]] = ..., draw: _Optional[bool] = ..., winner_side: _Optional[int] = ..., penalty_totals: _Optional[_Iterable[int]] = ..., chips: _Optional[_Iterable[int]] = ..., eliminated_sides: _Optional[_Iterable[int]] = ..., forfeits: _Optional[_Iterable[_Union[Forfeit, _Mapping]]] = ..., timeouts: _Optional[_Iterable[int]] = ..., rejections: _Optional[_Iterable[int]] = ..., deals: _Optional[int] = ...) -> None: ...
