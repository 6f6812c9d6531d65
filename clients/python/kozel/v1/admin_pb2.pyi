from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class BotStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BOT_STATUS_UNSPECIFIED: _ClassVar[BotStatus]
    BOT_STATUS_ACTIVE: _ClassVar[BotStatus]
    BOT_STATUS_PAUSED: _ClassVar[BotStatus]
    BOT_STATUS_RETIRED: _ClassVar[BotStatus]
BOT_STATUS_UNSPECIFIED: BotStatus
BOT_STATUS_ACTIVE: BotStatus
BOT_STATUS_PAUSED: BotStatus
BOT_STATUS_RETIRED: BotStatus

class RegisterBotRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class RegisterBotResponse(_message.Message):
    __slots__ = ("name", "token")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    name: str
    token: str
    def __init__(self, name: _Optional[str] = ..., token: _Optional[str] = ...) -> None: ...

class SetBotStatusRequest(_message.Message):
    __slots__ = ("name", "status")
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    name: str
    status: BotStatus
    def __init__(self, name: _Optional[str] = ..., status: _Optional[_Union[BotStatus, str]] = ...) -> None: ...

class SetBotStatusResponse(_message.Message):
    __slots__ = ("name", "status", "running_matches")
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    RUNNING_MATCHES_FIELD_NUMBER: _ClassVar[int]
    name: str
    status: BotStatus
    running_matches: int
    def __init__(self, name: _Optional[str] = ..., status: _Optional[_Union[BotStatus, str]] = ..., running_matches: _Optional[int] = ...) -> None: ...

class ResetRatingRequest(_message.Message):
    __slots__ = ("ladder", "bot")
    LADDER_FIELD_NUMBER: _ClassVar[int]
    BOT_FIELD_NUMBER: _ClassVar[int]
    ladder: str
    bot: str
    def __init__(self, ladder: _Optional[str] = ..., bot: _Optional[str] = ...) -> None: ...

class ResetRatingResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StartLadderRequest(_message.Message):
    __slots__ = ("ladder", "reason", "operator")
    LADDER_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    ladder: str
    reason: str
    operator: str
    def __init__(self, ladder: _Optional[str] = ..., reason: _Optional[str] = ..., operator: _Optional[str] = ...) -> None: ...

class StartLadderResponse(_message.Message):
    __slots__ = ("ladder",)
    LADDER_FIELD_NUMBER: _ClassVar[int]
    ladder: LadderState
    def __init__(self, ladder: _Optional[_Union[LadderState, _Mapping]] = ...) -> None: ...

class StopLadderRequest(_message.Message):
    __slots__ = ("ladder", "reason", "operator")
    LADDER_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    ladder: str
    reason: str
    operator: str
    def __init__(self, ladder: _Optional[str] = ..., reason: _Optional[str] = ..., operator: _Optional[str] = ...) -> None: ...

class StopLadderResponse(_message.Message):
    __slots__ = ("ladder",)
    LADDER_FIELD_NUMBER: _ClassVar[int]
    ladder: LadderState
    def __init__(self, ladder: _Optional[_Union[LadderState, _Mapping]] = ...) -> None: ...

class ListLaddersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListLaddersResponse(_message.Message):
    __slots__ = ("ladders",)
    LADDERS_FIELD_NUMBER: _ClassVar[int]
    ladders: _containers.RepeatedCompositeFieldContainer[LadderState]
    def __init__(self, ladders: _Optional[_Iterable[_Union[LadderState, _Mapping]]] = ...) -> None: ...

class LadderState(_message.Message):
    __slots__ = ("name", "running", "waiting", "running_matches", "players", "ruleset", "changed_by", "reason")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    RUNNING_MATCHES_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    RULESET_FIELD_NUMBER: _ClassVar[int]
    CHANGED_BY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    name: str
    running: bool
    waiting: int
    running_matches: int
    players: int
    ruleset: str
    changed_by: str
    reason: str
    def __init__(self, name: _Optional[str] = ..., running: _Optional[bool] = ..., waiting: _Optional[int] = ..., running_matches: _Optional[int] = ..., players: _Optional[int] = ..., ruleset: _Optional[str] = ..., changed_by: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class VoidMatchRequest(_message.Message):
    __slots__ = ("match_id", "reason", "operator")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    reason: str
    operator: str
    def __init__(self, match_id: _Optional[str] = ..., reason: _Optional[str] = ..., operator: _Optional[str] = ...) -> None: ...

class VoidMatchResponse(_message.Message):
    __slots__ = ("match_id", "bots")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    BOTS_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    bots: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, match_id: _Optional[str] = ..., bots: _Optional[_Iterable[str]] = ...) -> None: ...

class CheckStoreRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CheckStoreResponse(_message.Message):
    __slots__ = ("problems", "finished_matches")
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    FINISHED_MATCHES_FIELD_NUMBER: _ClassVar[int]
    problems: _containers.RepeatedScalarFieldContainer[str]
    finished_matches: int
    def __init__(self, problems: _Optional[_Iterable[str]] = ..., finished_matches: _Optional[int] = ...) -> None: ...

class GetClusterStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetClusterStatusResponse(_message.Message):
    __slots__ = ("referees", "ladders")
    REFEREES_FIELD_NUMBER: _ClassVar[int]
    LADDERS_FIELD_NUMBER: _ClassVar[int]
    referees: _containers.RepeatedCompositeFieldContainer[RefereeStatus]
    ladders: _containers.RepeatedCompositeFieldContainer[LadderStatus]
    def __init__(self, referees: _Optional[_Iterable[_Union[RefereeStatus, _Mapping]]] = ..., ladders: _Optional[_Iterable[_Union[LadderStatus, _Mapping]]] = ...) -> None: ...

class RefereeStatus(_message.Message):
    __slots__ = ("id", "address", "live", "lease_age_s", "draining", "running_matches", "capacity", "streams", "waiting", "admits", "status_age_s", "version")
    ID_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    LIVE_FIELD_NUMBER: _ClassVar[int]
    LEASE_AGE_S_FIELD_NUMBER: _ClassVar[int]
    DRAINING_FIELD_NUMBER: _ClassVar[int]
    RUNNING_MATCHES_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    STREAMS_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    ADMITS_FIELD_NUMBER: _ClassVar[int]
    STATUS_AGE_S_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    id: str
    address: str
    live: bool
    lease_age_s: float
    draining: bool
    running_matches: int
    capacity: int
    streams: int
    waiting: int
    admits: bool
    status_age_s: float
    version: str
    def __init__(self, id: _Optional[str] = ..., address: _Optional[str] = ..., live: _Optional[bool] = ..., lease_age_s: _Optional[float] = ..., draining: _Optional[bool] = ..., running_matches: _Optional[int] = ..., capacity: _Optional[int] = ..., streams: _Optional[int] = ..., waiting: _Optional[int] = ..., admits: _Optional[bool] = ..., status_age_s: _Optional[float] = ..., version: _Optional[str] = ...) -> None: ...

class LadderStatus(_message.Message):
    __slots__ = ("name", "state", "scheduler", "waiting_bots", "running_matches", "assigned", "stalled", "changed_by", "reason", "players")
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_FIELD_NUMBER: _ClassVar[int]
    WAITING_BOTS_FIELD_NUMBER: _ClassVar[int]
    RUNNING_MATCHES_FIELD_NUMBER: _ClassVar[int]
    ASSIGNED_FIELD_NUMBER: _ClassVar[int]
    STALLED_FIELD_NUMBER: _ClassVar[int]
    CHANGED_BY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    state: str
    scheduler: str
    waiting_bots: int
    running_matches: int
    assigned: int
    stalled: str
    changed_by: str
    reason: str
    players: int
    def __init__(self, name: _Optional[str] = ..., state: _Optional[str] = ..., scheduler: _Optional[str] = ..., waiting_bots: _Optional[int] = ..., running_matches: _Optional[int] = ..., assigned: _Optional[int] = ..., stalled: _Optional[str] = ..., changed_by: _Optional[str] = ..., reason: _Optional[str] = ..., players: _Optional[int] = ...) -> None: ...
