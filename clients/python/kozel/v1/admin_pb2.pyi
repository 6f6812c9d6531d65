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
    __slots__ = ("ladder",)
    LADDER_FIELD_NUMBER: _ClassVar[int]
    ladder: str
    def __init__(self, ladder: _Optional[str] = ...) -> None: ...

class StartLadderResponse(_message.Message):
    __slots__ = ("ladder",)
    LADDER_FIELD_NUMBER: _ClassVar[int]
    ladder: LadderState
    def __init__(self, ladder: _Optional[_Union[LadderState, _Mapping]] = ...) -> None: ...

class StopLadderRequest(_message.Message):
    __slots__ = ("ladder",)
    LADDER_FIELD_NUMBER: _ClassVar[int]
    ladder: str
    def __init__(self, ladder: _Optional[str] = ...) -> None: ...

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
    __slots__ = ("name", "running", "waiting", "running_matches", "players", "ruleset")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    RUNNING_MATCHES_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    RULESET_FIELD_NUMBER: _ClassVar[int]
    name: str
    running: bool
    waiting: int
    running_matches: int
    players: int
    ruleset: str
    def __init__(self, name: _Optional[str] = ..., running: _Optional[bool] = ..., waiting: _Optional[int] = ..., running_matches: _Optional[int] = ..., players: _Optional[int] = ..., ruleset: _Optional[str] = ...) -> None: ...
