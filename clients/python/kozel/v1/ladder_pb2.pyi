import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetStandingsRequest(_message.Message):
    __slots__ = ("ladder",)
    LADDER_FIELD_NUMBER: _ClassVar[int]
    ladder: str
    def __init__(self, ladder: _Optional[str] = ...) -> None: ...

class Standing(_message.Message):
    __slots__ = ("bot", "ordinal", "mu", "sigma", "matches", "wins", "avg_penalty", "timeouts", "forfeits")
    BOT_FIELD_NUMBER: _ClassVar[int]
    ORDINAL_FIELD_NUMBER: _ClassVar[int]
    MU_FIELD_NUMBER: _ClassVar[int]
    SIGMA_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    WINS_FIELD_NUMBER: _ClassVar[int]
    AVG_PENALTY_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    FORFEITS_FIELD_NUMBER: _ClassVar[int]
    bot: str
    ordinal: float
    mu: float
    sigma: float
    matches: int
    wins: int
    avg_penalty: float
    timeouts: int
    forfeits: int
    def __init__(self, bot: _Optional[str] = ..., ordinal: _Optional[float] = ..., mu: _Optional[float] = ..., sigma: _Optional[float] = ..., matches: _Optional[int] = ..., wins: _Optional[int] = ..., avg_penalty: _Optional[float] = ..., timeouts: _Optional[int] = ..., forfeits: _Optional[int] = ...) -> None: ...

class GetStandingsResponse(_message.Message):
    __slots__ = ("ladder", "standings")
    LADDER_FIELD_NUMBER: _ClassVar[int]
    STANDINGS_FIELD_NUMBER: _ClassVar[int]
    ladder: str
    standings: _containers.RepeatedCompositeFieldContainer[Standing]
    def __init__(self, ladder: _Optional[str] = ..., standings: _Optional[_Iterable[_Union[Standing, _Mapping]]] = ...) -> None: ...

class ListMatchesRequest(_message.Message):
    __slots__ = ("ladder", "bot", "since", "limit")
    LADDER_FIELD_NUMBER: _ClassVar[int]
    BOT_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ladder: str
    bot: str
    since: _timestamp_pb2.Timestamp
    limit: int
    def __init__(self, ladder: _Optional[str] = ..., bot: _Optional[str] = ..., since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., limit: _Optional[int] = ...) -> None: ...

class MatchSummary(_message.Message):
    __slots__ = ("match_id", "ladder", "status", "started_at", "ended_at", "reason")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    LADDER_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    ladder: str
    status: str
    started_at: _timestamp_pb2.Timestamp
    ended_at: _timestamp_pb2.Timestamp
    reason: str
    def __init__(self, match_id: _Optional[str] = ..., ladder: _Optional[str] = ..., status: _Optional[str] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ...) -> None: ...

class ListMatchesResponse(_message.Message):
    __slots__ = ("matches",)
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    matches: _containers.RepeatedCompositeFieldContainer[MatchSummary]
    def __init__(self, matches: _Optional[_Iterable[_Union[MatchSummary, _Mapping]]] = ...) -> None: ...

class DownloadReplayRequest(_message.Message):
    __slots__ = ("replay_id",)
    REPLAY_ID_FIELD_NUMBER: _ClassVar[int]
    replay_id: str
    def __init__(self, replay_id: _Optional[str] = ...) -> None: ...

class DownloadReplayResponse(_message.Message):
    __slots__ = ("chunk",)
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    chunk: bytes
    def __init__(self, chunk: _Optional[bytes] = ...) -> None: ...
