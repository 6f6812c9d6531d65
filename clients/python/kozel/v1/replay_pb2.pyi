import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from kozel.v1 import game_pb2 as _game_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Replay(_message.Message):
    __slots__ = ("format_version", "protocol_version", "engine_version", "match_id", "ruleset", "players", "seats", "seed", "seed_commitment", "time_control", "deals", "result", "started_at", "ended_at", "table_id", "ladder", "duplicate_first_half")
    FORMAT_VERSION_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    ENGINE_VERSION_FIELD_NUMBER: _ClassVar[int]
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    RULESET_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    SEED_COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    TIME_CONTROL_FIELD_NUMBER: _ClassVar[int]
    DEALS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    LADDER_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIRST_HALF_FIELD_NUMBER: _ClassVar[int]
    format_version: int
    protocol_version: int
    engine_version: str
    match_id: str
    ruleset: _game_pb2.Ruleset
    players: int
    seats: _containers.RepeatedCompositeFieldContainer[ReplaySeat]
    seed: bytes
    seed_commitment: str
    time_control: _game_pb2.TimeControl
    deals: _containers.RepeatedCompositeFieldContainer[ReplayDeal]
    result: _game_pb2.MatchResult
    started_at: _timestamp_pb2.Timestamp
    ended_at: _timestamp_pb2.Timestamp
    table_id: str
    ladder: str
    duplicate_first_half: bool
    def __init__(self, format_version: _Optional[int] = ..., protocol_version: _Optional[int] = ..., engine_version: _Optional[str] = ..., match_id: _Optional[str] = ..., ruleset: _Optional[_Union[_game_pb2.Ruleset, _Mapping]] = ..., players: _Optional[int] = ..., seats: _Optional[_Iterable[_Union[ReplaySeat, _Mapping]]] = ..., seed: _Optional[bytes] = ..., seed_commitment: _Optional[str] = ..., time_control: _Optional[_Union[_game_pb2.TimeControl, _Mapping]] = ..., deals: _Optional[_Iterable[_Union[ReplayDeal, _Mapping]]] = ..., result: _Optional[_Union[_game_pb2.MatchResult, _Mapping]] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., table_id: _Optional[str] = ..., ladder: _Optional[str] = ..., duplicate_first_half: _Optional[bool] = ...) -> None: ...

class ReplaySeat(_message.Message):
    __slots__ = ("seat", "name", "side")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SIDE_FIELD_NUMBER: _ClassVar[int]
    seat: int
    name: str
    side: int
    def __init__(self, seat: _Optional[int] = ..., name: _Optional[str] = ..., side: _Optional[int] = ...) -> None: ...

class ReplayDeal(_message.Message):
    __slots__ = ("index", "dealer", "deck", "trump_index", "first_leader", "active_seats", "steps", "card_points", "tricks", "penalties", "pot_winners", "voided")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    DEALER_FIELD_NUMBER: _ClassVar[int]
    DECK_FIELD_NUMBER: _ClassVar[int]
    TRUMP_INDEX_FIELD_NUMBER: _ClassVar[int]
    FIRST_LEADER_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_SEATS_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    CARD_POINTS_FIELD_NUMBER: _ClassVar[int]
    TRICKS_FIELD_NUMBER: _ClassVar[int]
    PENALTIES_FIELD_NUMBER: _ClassVar[int]
    POT_WINNERS_FIELD_NUMBER: _ClassVar[int]
    VOIDED_FIELD_NUMBER: _ClassVar[int]
    index: int
    dealer: int
    deck: _containers.RepeatedScalarFieldContainer[str]
    trump_index: int
    first_leader: int
    active_seats: _containers.RepeatedScalarFieldContainer[int]
    steps: _containers.RepeatedCompositeFieldContainer[ReplayStep]
    card_points: _containers.RepeatedScalarFieldContainer[int]
    tricks: _containers.RepeatedScalarFieldContainer[int]
    penalties: _containers.RepeatedScalarFieldContainer[int]
    pot_winners: _containers.RepeatedScalarFieldContainer[int]
    voided: bool
    def __init__(self, index: _Optional[int] = ..., dealer: _Optional[int] = ..., deck: _Optional[_Iterable[str]] = ..., trump_index: _Optional[int] = ..., first_leader: _Optional[int] = ..., active_seats: _Optional[_Iterable[int]] = ..., steps: _Optional[_Iterable[_Union[ReplayStep, _Mapping]]] = ..., card_points: _Optional[_Iterable[int]] = ..., tricks: _Optional[_Iterable[int]] = ..., penalties: _Optional[_Iterable[int]] = ..., pot_winners: _Optional[_Iterable[int]] = ..., voided: _Optional[bool] = ...) -> None: ...

class ReplayStep(_message.Message):
    __slots__ = ("seat", "action", "request_id", "think_ms", "timeout", "rejections")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    THINK_MS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    REJECTIONS_FIELD_NUMBER: _ClassVar[int]
    seat: int
    action: _game_pb2.Action
    request_id: int
    think_ms: int
    timeout: bool
    rejections: _containers.RepeatedCompositeFieldContainer[ReplayRejection]
    def __init__(self, seat: _Optional[int] = ..., action: _Optional[_Union[_game_pb2.Action, _Mapping]] = ..., request_id: _Optional[int] = ..., think_ms: _Optional[int] = ..., timeout: _Optional[bool] = ..., rejections: _Optional[_Iterable[_Union[ReplayRejection, _Mapping]]] = ...) -> None: ...

class ReplayRejection(_message.Message):
    __slots__ = ("code", "message", "attempted")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTED_FIELD_NUMBER: _ClassVar[int]
    code: _game_pb2.ErrorCode
    message: str
    attempted: _game_pb2.Action
    def __init__(self, code: _Optional[_Union[_game_pb2.ErrorCode, str]] = ..., message: _Optional[str] = ..., attempted: _Optional[_Union[_game_pb2.Action, _Mapping]] = ...) -> None: ...
