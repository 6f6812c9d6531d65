import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from kozel.v1 import game_pb2 as _game_pb2
from kozel.v1 import referee_pb2 as _referee_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DetailsSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DETAILS_SOURCE_UNSPECIFIED: _ClassVar[DetailsSource]
    DETAILS_SOURCE_STORE: _ClassVar[DetailsSource]
    DETAILS_SOURCE_LIVE: _ClassVar[DetailsSource]
    DETAILS_SOURCE_REPLAY: _ClassVar[DetailsSource]
DETAILS_SOURCE_UNSPECIFIED: DetailsSource
DETAILS_SOURCE_STORE: DetailsSource
DETAILS_SOURCE_LIVE: DetailsSource
DETAILS_SOURCE_REPLAY: DetailsSource

class GetMatchRequest(_message.Message):
    __slots__ = ("match_id",)
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    def __init__(self, match_id: _Optional[str] = ...) -> None: ...

class RatingChange(_message.Message):
    __slots__ = ("mu_before", "mu_after", "sigma_after")
    MU_BEFORE_FIELD_NUMBER: _ClassVar[int]
    MU_AFTER_FIELD_NUMBER: _ClassVar[int]
    SIGMA_AFTER_FIELD_NUMBER: _ClassVar[int]
    mu_before: float
    mu_after: float
    sigma_after: float
    def __init__(self, mu_before: _Optional[float] = ..., mu_after: _Optional[float] = ..., sigma_after: _Optional[float] = ...) -> None: ...

class MatchSeat(_message.Message):
    __slots__ = ("seat", "bot", "side", "rank", "penalty", "chips", "timeouts", "forfeited", "rating")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    BOT_FIELD_NUMBER: _ClassVar[int]
    SIDE_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    PENALTY_FIELD_NUMBER: _ClassVar[int]
    CHIPS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    FORFEITED_FIELD_NUMBER: _ClassVar[int]
    RATING_FIELD_NUMBER: _ClassVar[int]
    seat: int
    bot: str
    side: int
    rank: int
    penalty: int
    chips: int
    timeouts: int
    forfeited: bool
    rating: RatingChange
    def __init__(self, seat: _Optional[int] = ..., bot: _Optional[str] = ..., side: _Optional[int] = ..., rank: _Optional[int] = ..., penalty: _Optional[int] = ..., chips: _Optional[int] = ..., timeouts: _Optional[int] = ..., forfeited: _Optional[bool] = ..., rating: _Optional[_Union[RatingChange, _Mapping]] = ...) -> None: ...

class GetMatchResponse(_message.Message):
    __slots__ = ("match_id", "ladder", "table_id", "status", "started_at", "ended_at", "ruleset", "players", "seats", "result", "replay_id", "source", "time_control")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    LADDER_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    RULESET_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    REPLAY_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TIME_CONTROL_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    ladder: str
    table_id: str
    status: str
    started_at: _timestamp_pb2.Timestamp
    ended_at: _timestamp_pb2.Timestamp
    ruleset: _game_pb2.Ruleset
    players: int
    seats: _containers.RepeatedCompositeFieldContainer[MatchSeat]
    result: _game_pb2.MatchResult
    replay_id: str
    source: DetailsSource
    time_control: _game_pb2.TimeControl
    def __init__(self, match_id: _Optional[str] = ..., ladder: _Optional[str] = ..., table_id: _Optional[str] = ..., status: _Optional[str] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ruleset: _Optional[_Union[_game_pb2.Ruleset, _Mapping]] = ..., players: _Optional[int] = ..., seats: _Optional[_Iterable[_Union[MatchSeat, _Mapping]]] = ..., result: _Optional[_Union[_game_pb2.MatchResult, _Mapping]] = ..., replay_id: _Optional[str] = ..., source: _Optional[_Union[DetailsSource, str]] = ..., time_control: _Optional[_Union[_game_pb2.TimeControl, _Mapping]] = ...) -> None: ...

class WatchMatchRequest(_message.Message):
    __slots__ = ("match_id", "full")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    FULL_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    full: bool
    def __init__(self, match_id: _Optional[str] = ..., full: _Optional[bool] = ...) -> None: ...

class WatchMatchResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: SpectatorEvent
    def __init__(self, event: _Optional[_Union[SpectatorEvent, _Mapping]] = ...) -> None: ...

class SeatCards(_message.Message):
    __slots__ = ("seat", "cards")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    seat: int
    cards: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, seat: _Optional[int] = ..., cards: _Optional[_Iterable[str]] = ...) -> None: ...

class SpectatorEvent(_message.Message):
    __slots__ = ("match_id", "happened_at", "hands", "snapshot", "deal_start", "event", "deal_end", "match_end", "turn")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    HAPPENED_AT_FIELD_NUMBER: _ClassVar[int]
    HANDS_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    DEAL_START_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    DEAL_END_FIELD_NUMBER: _ClassVar[int]
    MATCH_END_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    happened_at: _timestamp_pb2.Timestamp
    hands: _containers.RepeatedCompositeFieldContainer[SeatCards]
    snapshot: SpectatorSnapshot
    deal_start: _referee_pb2.DealStart
    event: _referee_pb2.Event
    deal_end: _referee_pb2.DealEnd
    match_end: _referee_pb2.MatchEnd
    turn: SpectatorTurn
    def __init__(self, match_id: _Optional[str] = ..., happened_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., hands: _Optional[_Iterable[_Union[SeatCards, _Mapping]]] = ..., snapshot: _Optional[_Union[SpectatorSnapshot, _Mapping]] = ..., deal_start: _Optional[_Union[_referee_pb2.DealStart, _Mapping]] = ..., event: _Optional[_Union[_referee_pb2.Event, _Mapping]] = ..., deal_end: _Optional[_Union[_referee_pb2.DealEnd, _Mapping]] = ..., match_end: _Optional[_Union[_referee_pb2.MatchEnd, _Mapping]] = ..., turn: _Optional[_Union[SpectatorTurn, _Mapping]] = ...) -> None: ...

class SpectatorTurn(_message.Message):
    __slots__ = ("seats", "bank_ms")
    SEATS_FIELD_NUMBER: _ClassVar[int]
    BANK_MS_FIELD_NUMBER: _ClassVar[int]
    seats: _containers.RepeatedScalarFieldContainer[int]
    bank_ms: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, seats: _Optional[_Iterable[int]] = ..., bank_ms: _Optional[_Iterable[int]] = ...) -> None: ...

class SpectatorSnapshot(_message.Message):
    __slots__ = ("match", "full", "delay_ms", "deal_start", "deal", "timeouts", "ladder")
    MATCH_FIELD_NUMBER: _ClassVar[int]
    FULL_FIELD_NUMBER: _ClassVar[int]
    DELAY_MS_FIELD_NUMBER: _ClassVar[int]
    DEAL_START_FIELD_NUMBER: _ClassVar[int]
    DEAL_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    LADDER_FIELD_NUMBER: _ClassVar[int]
    match: _referee_pb2.MatchStart
    full: bool
    delay_ms: int
    deal_start: _referee_pb2.DealStart
    deal: _game_pb2.Observation
    timeouts: _containers.RepeatedScalarFieldContainer[int]
    ladder: str
    def __init__(self, match: _Optional[_Union[_referee_pb2.MatchStart, _Mapping]] = ..., full: _Optional[bool] = ..., delay_ms: _Optional[int] = ..., deal_start: _Optional[_Union[_referee_pb2.DealStart, _Mapping]] = ..., deal: _Optional[_Union[_game_pb2.Observation, _Mapping]] = ..., timeouts: _Optional[_Iterable[int]] = ..., ladder: _Optional[str] = ...) -> None: ...

class ListLiveMatchesRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class LiveMatch(_message.Message):
    __slots__ = ("match_id", "ladder", "table_id", "players", "seats", "started_at", "deal_index")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    LADDER_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    DEAL_INDEX_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    ladder: str
    table_id: str
    players: int
    seats: _containers.RepeatedScalarFieldContainer[str]
    started_at: _timestamp_pb2.Timestamp
    deal_index: int
    def __init__(self, match_id: _Optional[str] = ..., ladder: _Optional[str] = ..., table_id: _Optional[str] = ..., players: _Optional[int] = ..., seats: _Optional[_Iterable[str]] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., deal_index: _Optional[int] = ...) -> None: ...

class ListLiveMatchesResponse(_message.Message):
    __slots__ = ("matches",)
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    matches: _containers.RepeatedCompositeFieldContainer[LiveMatch]
    def __init__(self, matches: _Optional[_Iterable[_Union[LiveMatch, _Mapping]]] = ...) -> None: ...
