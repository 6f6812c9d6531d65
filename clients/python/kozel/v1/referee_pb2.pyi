from kozel.v1 import game_pb2 as _game_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class NoticeKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NOTICE_KIND_UNSPECIFIED: _ClassVar[NoticeKind]
    NOTICE_KIND_TIMEOUT: _ClassVar[NoticeKind]
    NOTICE_KIND_DISCONNECTED: _ClassVar[NoticeKind]
    NOTICE_KIND_RESUMED: _ClassVar[NoticeKind]
    NOTICE_KIND_FORFEIT: _ClassVar[NoticeKind]
NOTICE_KIND_UNSPECIFIED: NoticeKind
NOTICE_KIND_TIMEOUT: NoticeKind
NOTICE_KIND_DISCONNECTED: NoticeKind
NOTICE_KIND_RESUMED: NoticeKind
NOTICE_KIND_FORFEIT: NoticeKind

class PlayRequest(_message.Message):
    __slots__ = ("hello", "action", "leave")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    LEAVE_FIELD_NUMBER: _ClassVar[int]
    hello: Hello
    action: ActionReply
    leave: Leave
    def __init__(self, hello: _Optional[_Union[Hello, _Mapping]] = ..., action: _Optional[_Union[ActionReply, _Mapping]] = ..., leave: _Optional[_Union[Leave, _Mapping]] = ...) -> None: ...

class Hello(_message.Message):
    __slots__ = ("protocol_version", "bot_name", "token", "resume_token", "join_table", "join_queue", "join_ladder", "max_matches", "client", "skip_events", "redirect_ticket")
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    BOT_NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    RESUME_TOKEN_FIELD_NUMBER: _ClassVar[int]
    JOIN_TABLE_FIELD_NUMBER: _ClassVar[int]
    JOIN_QUEUE_FIELD_NUMBER: _ClassVar[int]
    JOIN_LADDER_FIELD_NUMBER: _ClassVar[int]
    MAX_MATCHES_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    SKIP_EVENTS_FIELD_NUMBER: _ClassVar[int]
    REDIRECT_TICKET_FIELD_NUMBER: _ClassVar[int]
    protocol_version: int
    bot_name: str
    token: str
    resume_token: str
    join_table: JoinTable
    join_queue: JoinQueue
    join_ladder: JoinLadder
    max_matches: int
    client: str
    skip_events: bool
    redirect_ticket: str
    def __init__(self, protocol_version: _Optional[int] = ..., bot_name: _Optional[str] = ..., token: _Optional[str] = ..., resume_token: _Optional[str] = ..., join_table: _Optional[_Union[JoinTable, _Mapping]] = ..., join_queue: _Optional[_Union[JoinQueue, _Mapping]] = ..., join_ladder: _Optional[_Union[JoinLadder, _Mapping]] = ..., max_matches: _Optional[int] = ..., client: _Optional[str] = ..., skip_events: _Optional[bool] = ..., redirect_ticket: _Optional[str] = ...) -> None: ...

class JoinTable(_message.Message):
    __slots__ = ("table_id",)
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    def __init__(self, table_id: _Optional[str] = ...) -> None: ...

class JoinLadder(_message.Message):
    __slots__ = ("ladder",)
    LADDER_FIELD_NUMBER: _ClassVar[int]
    ladder: str
    def __init__(self, ladder: _Optional[str] = ...) -> None: ...

class JoinQueue(_message.Message):
    __slots__ = ("ruleset", "players")
    RULESET_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    ruleset: _game_pb2.Ruleset
    players: int
    def __init__(self, ruleset: _Optional[_Union[_game_pb2.Ruleset, _Mapping]] = ..., players: _Optional[int] = ...) -> None: ...

class ActionReply(_message.Message):
    __slots__ = ("match_id", "request_id", "legal_index", "action")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    LEGAL_INDEX_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    request_id: int
    legal_index: int
    action: _game_pb2.Action
    def __init__(self, match_id: _Optional[str] = ..., request_id: _Optional[int] = ..., legal_index: _Optional[int] = ..., action: _Optional[_Union[_game_pb2.Action, _Mapping]] = ...) -> None: ...

class Leave(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PlayResponse(_message.Message):
    __slots__ = ("welcome", "match_start", "deal_start", "decision", "event", "rejection", "deal_end", "match_end", "redirect")
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    MATCH_START_FIELD_NUMBER: _ClassVar[int]
    DEAL_START_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    REJECTION_FIELD_NUMBER: _ClassVar[int]
    DEAL_END_FIELD_NUMBER: _ClassVar[int]
    MATCH_END_FIELD_NUMBER: _ClassVar[int]
    REDIRECT_FIELD_NUMBER: _ClassVar[int]
    welcome: Welcome
    match_start: MatchStart
    deal_start: DealStart
    decision: DecisionRequest
    event: Event
    rejection: Rejection
    deal_end: DealEnd
    match_end: MatchEnd
    redirect: Redirect
    def __init__(self, welcome: _Optional[_Union[Welcome, _Mapping]] = ..., match_start: _Optional[_Union[MatchStart, _Mapping]] = ..., deal_start: _Optional[_Union[DealStart, _Mapping]] = ..., decision: _Optional[_Union[DecisionRequest, _Mapping]] = ..., event: _Optional[_Union[Event, _Mapping]] = ..., rejection: _Optional[_Union[Rejection, _Mapping]] = ..., deal_end: _Optional[_Union[DealEnd, _Mapping]] = ..., match_end: _Optional[_Union[MatchEnd, _Mapping]] = ..., redirect: _Optional[_Union[Redirect, _Mapping]] = ...) -> None: ...

class Welcome(_message.Message):
    __slots__ = ("session_id", "resume_token", "protocol_version", "server_version", "resumed", "max_matches", "running_match_ids")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    RESUME_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    RESUMED_FIELD_NUMBER: _ClassVar[int]
    MAX_MATCHES_FIELD_NUMBER: _ClassVar[int]
    RUNNING_MATCH_IDS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    resume_token: str
    protocol_version: int
    server_version: str
    resumed: bool
    max_matches: int
    running_match_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, session_id: _Optional[str] = ..., resume_token: _Optional[str] = ..., protocol_version: _Optional[int] = ..., server_version: _Optional[str] = ..., resumed: _Optional[bool] = ..., max_matches: _Optional[int] = ..., running_match_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class Player(_message.Message):
    __slots__ = ("seat", "name", "side")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SIDE_FIELD_NUMBER: _ClassVar[int]
    seat: int
    name: str
    side: int
    def __init__(self, seat: _Optional[int] = ..., name: _Optional[str] = ..., side: _Optional[int] = ...) -> None: ...

class MatchStart(_message.Message):
    __slots__ = ("match_id", "seat", "players", "ruleset", "time_control", "seating", "seed_commitment", "table_id")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    RULESET_FIELD_NUMBER: _ClassVar[int]
    TIME_CONTROL_FIELD_NUMBER: _ClassVar[int]
    SEATING_FIELD_NUMBER: _ClassVar[int]
    SEED_COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    seat: int
    players: int
    ruleset: _game_pb2.Ruleset
    time_control: _game_pb2.TimeControl
    seating: _containers.RepeatedCompositeFieldContainer[Player]
    seed_commitment: str
    table_id: str
    def __init__(self, match_id: _Optional[str] = ..., seat: _Optional[int] = ..., players: _Optional[int] = ..., ruleset: _Optional[_Union[_game_pb2.Ruleset, _Mapping]] = ..., time_control: _Optional[_Union[_game_pb2.TimeControl, _Mapping]] = ..., seating: _Optional[_Iterable[_Union[Player, _Mapping]]] = ..., seed_commitment: _Optional[str] = ..., table_id: _Optional[str] = ...) -> None: ...

class DealStart(_message.Message):
    __slots__ = ("match_id", "deal_index", "dealer", "trump", "trump_card", "hand", "active_seats", "penalty_totals", "chips")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    DEAL_INDEX_FIELD_NUMBER: _ClassVar[int]
    DEALER_FIELD_NUMBER: _ClassVar[int]
    TRUMP_FIELD_NUMBER: _ClassVar[int]
    TRUMP_CARD_FIELD_NUMBER: _ClassVar[int]
    HAND_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_SEATS_FIELD_NUMBER: _ClassVar[int]
    PENALTY_TOTALS_FIELD_NUMBER: _ClassVar[int]
    CHIPS_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    deal_index: int
    dealer: int
    trump: str
    trump_card: str
    hand: _containers.RepeatedScalarFieldContainer[str]
    active_seats: _containers.RepeatedScalarFieldContainer[int]
    penalty_totals: _containers.RepeatedScalarFieldContainer[int]
    chips: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, match_id: _Optional[str] = ..., deal_index: _Optional[int] = ..., dealer: _Optional[int] = ..., trump: _Optional[str] = ..., trump_card: _Optional[str] = ..., hand: _Optional[_Iterable[str]] = ..., active_seats: _Optional[_Iterable[int]] = ..., penalty_totals: _Optional[_Iterable[int]] = ..., chips: _Optional[_Iterable[int]] = ...) -> None: ...

class DecisionRequest(_message.Message):
    __slots__ = ("match_id", "request_id", "kind", "move_ms", "time_bank_ms", "observation", "legal_actions", "retries_left", "resent")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MOVE_MS_FIELD_NUMBER: _ClassVar[int]
    TIME_BANK_MS_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_FIELD_NUMBER: _ClassVar[int]
    LEGAL_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    RETRIES_LEFT_FIELD_NUMBER: _ClassVar[int]
    RESENT_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    request_id: int
    kind: _game_pb2.DecisionKind
    move_ms: int
    time_bank_ms: int
    observation: _game_pb2.Observation
    legal_actions: _containers.RepeatedCompositeFieldContainer[_game_pb2.Action]
    retries_left: int
    resent: bool
    def __init__(self, match_id: _Optional[str] = ..., request_id: _Optional[int] = ..., kind: _Optional[_Union[_game_pb2.DecisionKind, str]] = ..., move_ms: _Optional[int] = ..., time_bank_ms: _Optional[int] = ..., observation: _Optional[_Union[_game_pb2.Observation, _Mapping]] = ..., legal_actions: _Optional[_Iterable[_Union[_game_pb2.Action, _Mapping]]] = ..., retries_left: _Optional[int] = ..., resent: _Optional[bool] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("match_id", "deal_index", "played", "trick_taken", "drawn", "declared", "notice")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    DEAL_INDEX_FIELD_NUMBER: _ClassVar[int]
    PLAYED_FIELD_NUMBER: _ClassVar[int]
    TRICK_TAKEN_FIELD_NUMBER: _ClassVar[int]
    DRAWN_FIELD_NUMBER: _ClassVar[int]
    DECLARED_FIELD_NUMBER: _ClassVar[int]
    NOTICE_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    deal_index: int
    played: _game_pb2.Play
    trick_taken: TrickTaken
    drawn: Drawn
    declared: Declared
    notice: SeatNotice
    def __init__(self, match_id: _Optional[str] = ..., deal_index: _Optional[int] = ..., played: _Optional[_Union[_game_pb2.Play, _Mapping]] = ..., trick_taken: _Optional[_Union[TrickTaken, _Mapping]] = ..., drawn: _Optional[_Union[Drawn, _Mapping]] = ..., declared: _Optional[_Union[Declared, _Mapping]] = ..., notice: _Optional[_Union[SeatNotice, _Mapping]] = ...) -> None: ...

class TrickTaken(_message.Message):
    __slots__ = ("trick",)
    TRICK_FIELD_NUMBER: _ClassVar[int]
    trick: _game_pb2.Trick
    def __init__(self, trick: _Optional[_Union[_game_pb2.Trick, _Mapping]] = ...) -> None: ...

class Drawn(_message.Message):
    __slots__ = ("cards", "counts", "talon")
    CARDS_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    TALON_FIELD_NUMBER: _ClassVar[int]
    cards: _containers.RepeatedScalarFieldContainer[str]
    counts: _containers.RepeatedScalarFieldContainer[int]
    talon: int
    def __init__(self, cards: _Optional[_Iterable[str]] = ..., counts: _Optional[_Iterable[int]] = ..., talon: _Optional[int] = ...) -> None: ...

class Declared(_message.Message):
    __slots__ = ("seat", "combo", "cards")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    COMBO_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    seat: int
    combo: _game_pb2.Combo
    cards: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, seat: _Optional[int] = ..., combo: _Optional[_Union[_game_pb2.Combo, str]] = ..., cards: _Optional[_Iterable[str]] = ...) -> None: ...

class SeatNotice(_message.Message):
    __slots__ = ("seat", "kind", "strikes", "forfeit_reason")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    STRIKES_FIELD_NUMBER: _ClassVar[int]
    FORFEIT_REASON_FIELD_NUMBER: _ClassVar[int]
    seat: int
    kind: NoticeKind
    strikes: int
    forfeit_reason: _game_pb2.ForfeitReason
    def __init__(self, seat: _Optional[int] = ..., kind: _Optional[_Union[NoticeKind, str]] = ..., strikes: _Optional[int] = ..., forfeit_reason: _Optional[_Union[_game_pb2.ForfeitReason, str]] = ...) -> None: ...

class Rejection(_message.Message):
    __slots__ = ("match_id", "request_id", "code", "message", "retry_allowed", "retries_left")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RETRY_ALLOWED_FIELD_NUMBER: _ClassVar[int]
    RETRIES_LEFT_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    request_id: int
    code: _game_pb2.ErrorCode
    message: str
    retry_allowed: bool
    retries_left: int
    def __init__(self, match_id: _Optional[str] = ..., request_id: _Optional[int] = ..., code: _Optional[_Union[_game_pb2.ErrorCode, str]] = ..., message: _Optional[str] = ..., retry_allowed: _Optional[bool] = ..., retries_left: _Optional[int] = ...) -> None: ...

class SideScore(_message.Message):
    __slots__ = ("side", "card_points", "tricks", "penalty", "penalty_total", "active")
    SIDE_FIELD_NUMBER: _ClassVar[int]
    CARD_POINTS_FIELD_NUMBER: _ClassVar[int]
    TRICKS_FIELD_NUMBER: _ClassVar[int]
    PENALTY_FIELD_NUMBER: _ClassVar[int]
    PENALTY_TOTAL_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    side: int
    card_points: int
    tricks: int
    penalty: int
    penalty_total: int
    active: bool
    def __init__(self, side: _Optional[int] = ..., card_points: _Optional[int] = ..., tricks: _Optional[int] = ..., penalty: _Optional[int] = ..., penalty_total: _Optional[int] = ..., active: _Optional[bool] = ...) -> None: ...

class DealEnd(_message.Message):
    __slots__ = ("match_id", "deal_index", "tricks", "scores", "pot_winners", "chips", "voided", "deck")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    DEAL_INDEX_FIELD_NUMBER: _ClassVar[int]
    TRICKS_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    POT_WINNERS_FIELD_NUMBER: _ClassVar[int]
    CHIPS_FIELD_NUMBER: _ClassVar[int]
    VOIDED_FIELD_NUMBER: _ClassVar[int]
    DECK_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    deal_index: int
    tricks: _containers.RepeatedCompositeFieldContainer[_game_pb2.Trick]
    scores: _containers.RepeatedCompositeFieldContainer[SideScore]
    pot_winners: _containers.RepeatedScalarFieldContainer[int]
    chips: _containers.RepeatedScalarFieldContainer[int]
    voided: bool
    deck: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, match_id: _Optional[str] = ..., deal_index: _Optional[int] = ..., tricks: _Optional[_Iterable[_Union[_game_pb2.Trick, _Mapping]]] = ..., scores: _Optional[_Iterable[_Union[SideScore, _Mapping]]] = ..., pot_winners: _Optional[_Iterable[int]] = ..., chips: _Optional[_Iterable[int]] = ..., voided: _Optional[bool] = ..., deck: _Optional[_Iterable[str]] = ...) -> None: ...

class MatchEnd(_message.Message):
    __slots__ = ("match_id", "result", "replay_id", "seed")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    REPLAY_ID_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    result: _game_pb2.MatchResult
    replay_id: str
    seed: bytes
    def __init__(self, match_id: _Optional[str] = ..., result: _Optional[_Union[_game_pb2.MatchResult, _Mapping]] = ..., replay_id: _Optional[str] = ..., seed: _Optional[bytes] = ...) -> None: ...

class Redirect(_message.Message):
    __slots__ = ("address", "ticket")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    TICKET_FIELD_NUMBER: _ClassVar[int]
    address: str
    ticket: str
    def __init__(self, address: _Optional[str] = ..., ticket: _Optional[str] = ...) -> None: ...

class CreateTableRequest(_message.Message):
    __slots__ = ("table_id", "ruleset", "players", "time_control", "seed", "house_bots", "ladder_bots")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    RULESET_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    TIME_CONTROL_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    HOUSE_BOTS_FIELD_NUMBER: _ClassVar[int]
    LADDER_BOTS_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    ruleset: _game_pb2.Ruleset
    players: int
    time_control: _game_pb2.TimeControl
    seed: bytes
    house_bots: _containers.RepeatedScalarFieldContainer[str]
    ladder_bots: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, table_id: _Optional[str] = ..., ruleset: _Optional[_Union[_game_pb2.Ruleset, _Mapping]] = ..., players: _Optional[int] = ..., time_control: _Optional[_Union[_game_pb2.TimeControl, _Mapping]] = ..., seed: _Optional[bytes] = ..., house_bots: _Optional[_Iterable[str]] = ..., ladder_bots: _Optional[_Iterable[str]] = ...) -> None: ...

class CreateTableResponse(_message.Message):
    __slots__ = ("table_id",)
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    def __init__(self, table_id: _Optional[str] = ...) -> None: ...

class WaitTableRequest(_message.Message):
    __slots__ = ("table_id",)
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    def __init__(self, table_id: _Optional[str] = ...) -> None: ...

class WaitTableResponse(_message.Message):
    __slots__ = ("match_id", "result", "replay_id", "replay_path", "seating")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    REPLAY_ID_FIELD_NUMBER: _ClassVar[int]
    REPLAY_PATH_FIELD_NUMBER: _ClassVar[int]
    SEATING_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    result: _game_pb2.MatchResult
    replay_id: str
    replay_path: str
    seating: _containers.RepeatedCompositeFieldContainer[Player]
    def __init__(self, match_id: _Optional[str] = ..., result: _Optional[_Union[_game_pb2.MatchResult, _Mapping]] = ..., replay_id: _Optional[str] = ..., replay_path: _Optional[str] = ..., seating: _Optional[_Iterable[_Union[Player, _Mapping]]] = ...) -> None: ...

class GetReplayRequest(_message.Message):
    __slots__ = ("replay_id",)
    REPLAY_ID_FIELD_NUMBER: _ClassVar[int]
    replay_id: str
    def __init__(self, replay_id: _Optional[str] = ...) -> None: ...

class GetReplayResponse(_message.Message):
    __slots__ = ("replay_gz",)
    REPLAY_GZ_FIELD_NUMBER: _ClassVar[int]
    replay_gz: bytes
    def __init__(self, replay_gz: _Optional[bytes] = ...) -> None: ...

class ListOpponentsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class LadderOpponent(_message.Message):
    __slots__ = ("name", "ladder", "free", "players", "ruleset")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LADDER_FIELD_NUMBER: _ClassVar[int]
    FREE_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    RULESET_FIELD_NUMBER: _ClassVar[int]
    name: str
    ladder: str
    free: bool
    players: int
    ruleset: str
    def __init__(self, name: _Optional[str] = ..., ladder: _Optional[str] = ..., free: _Optional[bool] = ..., players: _Optional[int] = ..., ruleset: _Optional[str] = ...) -> None: ...

class ListOpponentsResponse(_message.Message):
    __slots__ = ("house_bots", "ladder_bots")
    HOUSE_BOTS_FIELD_NUMBER: _ClassVar[int]
    LADDER_BOTS_FIELD_NUMBER: _ClassVar[int]
    house_bots: _containers.RepeatedScalarFieldContainer[str]
    ladder_bots: _containers.RepeatedCompositeFieldContainer[LadderOpponent]
    def __init__(self, house_bots: _Optional[_Iterable[str]] = ..., ladder_bots: _Optional[_Iterable[_Union[LadderOpponent, _Mapping]]] = ...) -> None: ...

class SetPlaysPeopleRequest(_message.Message):
    __slots__ = ("bot_name", "token", "plays_people")
    BOT_NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    PLAYS_PEOPLE_FIELD_NUMBER: _ClassVar[int]
    bot_name: str
    token: str
    plays_people: bool
    def __init__(self, bot_name: _Optional[str] = ..., token: _Optional[str] = ..., plays_people: _Optional[bool] = ...) -> None: ...

class SetPlaysPeopleResponse(_message.Message):
    __slots__ = ("plays_people",)
    PLAYS_PEOPLE_FIELD_NUMBER: _ClassVar[int]
    plays_people: bool
    def __init__(self, plays_people: _Optional[bool] = ...) -> None: ...
