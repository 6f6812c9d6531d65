"""The one builder of the referee's messages: what the match protocol core, the spectator hub,
the servicer and the conformance checker send is made here, so each message has one shape."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

from kozel.core import convert
from kozel.engine.actions import Action, Decision
from kozel.engine.cards import CODES
from kozel.engine.deal import Deal
from kozel.engine.match import Match
from kozel.engine.observation import Observation, full_view
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb

PROTOCOL_VERSION = 1  # the version of the Play protocol this referee speaks (Hello, Welcome)


def welcome(
    session_id: str,
    resume_token: str,
    server_version: str,
    *,
    resumed: bool = False,
    max_matches: int = 1,
    running_match_ids: Iterable[str] = (),
) -> rpb.PlayResponse:
    """The answer to a Hello (a new session, or a resumed one)."""
    return rpb.PlayResponse(
        welcome=rpb.Welcome(
            session_id=session_id,
            resume_token=resume_token,
            protocol_version=PROTOCOL_VERSION,
            server_version=server_version,
            resumed=resumed,
            max_matches=max_matches,
            running_match_ids=list(running_match_ids),
        )
    )


def redirect(address: str, ticket: str) -> rpb.PlayResponse:
    """Tell a bot to play elsewhere: reconnect to ``address`` and send ``ticket`` in its Hello
    (the referee ends the stream after this message)."""
    return rpb.PlayResponse(redirect=rpb.Redirect(address=address, ticket=ticket))


def match_start(
    match_id: str,
    *,
    players: int,
    ruleset: pb.Ruleset,
    time_control: pb.TimeControl,
    seating: Sequence[rpb.Player],
    seed_commitment: str,
    table_id: str = "",
    seat: int = 0,
) -> rpb.MatchStart:
    """A match as it is announced: to ``seat``, or (seat 0, unused) to a spectator."""
    return rpb.MatchStart(
        match_id=match_id,
        seat=seat,
        players=players,
        ruleset=ruleset,
        time_control=time_control,
        seating=seating,
        seed_commitment=seed_commitment,
        table_id=table_id,
    )


def deal_start(
    match_id: str,
    index: int,
    deal: Deal,
    view: Observation,
    *,
    totals: Sequence[int] = (),
    chips: Sequence[int] = (),
) -> rpb.DealStart:
    """A deal as ``view`` (a seat's observation, or the public one) shows it at its start."""
    return rpb.DealStart(
        match_id=match_id,
        deal_index=index,
        dealer=deal.dealer,
        trump=view.trump,
        trump_card=view.trump_card,
        hand=view.hand,
        active_seats=list(deal.active),
        penalty_totals=totals,
        chips=chips,
    )


def deal_start_of(match_id: str, match: Match, view: Observation) -> rpb.DealStart:
    """The deal in play of ``match`` as ``view`` shows it, with the match's standing."""
    standing = match.outcome()
    return deal_start(
        match_id,
        len(match.records),
        match.deal,
        view,
        totals=standing.penalty_totals,
        chips=standing.chips,
    )


class EncodedRequest:
    """A decision request kept as its encoding. The referee's hot path builds a request's
    bytes from memoised pieces and gRPC writes them as they are (``encode_response``), instead
    of a message being built, parsed from those pieces and serialized again. Read it as a
    ``PlayResponse`` through :attr:`message` (parsed on first use, never to be changed) or
    the few reads below, which answer as a ``PlayResponse`` holding a ``decision`` would."""

    def __init__(
        self, match_id: str, request_id: int, request: bytes, resent: bool = False
    ) -> None:
        self.match_id = match_id
        self.request_id = request_id
        self.request = request  # the DecisionRequest's encoding
        self.resent = resent  # marked as sent again after a resume (its last field)
        self.data = convert.length_delimited(_RESPONSE_DECISION, request)  # the PlayResponse's
        self._message: rpb.PlayResponse | None = None

    @property
    def message(self) -> rpb.PlayResponse:
        """The request as a message (the same object every time: do not change it)."""
        if self._message is None:
            self._message = rpb.PlayResponse.FromString(self.data)
        return self._message

    @property
    def decision(self) -> rpb.DecisionRequest:
        return self.message.decision

    def WhichOneof(self, oneof_group: str) -> str | None:  # noqa: N802 (protobuf's name)
        return "decision" if oneof_group == "message" else self.message.WhichOneof(oneof_group)

    def HasField(self, field_name: str) -> bool:  # noqa: N802 (protobuf's name)
        return field_name in ("decision", "message") or self.message.HasField(field_name)

    def SerializeToString(self, deterministic: bool = False) -> bytes:  # noqa: N802
        """The encoding (protobuf's method name; it is deterministic either way)."""
        return self.data


Outgoing = rpb.PlayResponse | EncodedRequest
"""What the referee writes on a Play stream."""

_RESPONSE_DECISION = rpb.PlayResponse.DECISION_FIELD_NUMBER
_REQUEST = rpb.DecisionRequest


def encode_response(msg: Outgoing) -> bytes:
    """The bytes of a message for the Play stream (gRPC's response serializer)."""
    return msg.SerializeToString()


def encoded_decision(
    match_id: str,
    request_id: int,
    kind: Decision,
    legal: Sequence[Action],
    *,
    move_ms: int,
    bank_ms: int,
    retries_left: int,
    observation: bytes = b"",
) -> EncodedRequest:
    """A decision request to a seat; ``observation`` is the seat's observation encoded
    (``convert.ObservationEncoder`` on the hot path). Its bytes are protobuf's own encoding of
    the message (tests compare them with one built field by field)."""
    request = b"".join(
        [
            _match_id_field(match_id),
            convert.varint_field(_REQUEST.REQUEST_ID_FIELD_NUMBER, request_id, 64),
            convert.varint_field(_REQUEST.KIND_FIELD_NUMBER, convert.DECISION_TO_PB[kind]),
            convert.varint_field(_REQUEST.MOVE_MS_FIELD_NUMBER, move_ms),
            convert.varint_field(_REQUEST.TIME_BANK_MS_FIELD_NUMBER, max(bank_ms, 0)),
            convert.length_delimited(_REQUEST.OBSERVATION_FIELD_NUMBER, observation)
            if observation
            else b"",
            convert.legal_action_fields(legal),
            convert.varint_field(_REQUEST.RETRIES_LEFT_FIELD_NUMBER, retries_left),
        ]
    )
    return EncodedRequest(match_id, request_id, request)


@lru_cache(maxsize=4096)
def _match_id_field(match_id: str) -> bytes:
    return _REQUEST(match_id=match_id).SerializeToString()


def resent(request: EncodedRequest) -> EncodedRequest:
    """A pending request, marked as sent again after a resume (once: resending a resent
    request gives it back)."""
    if request.resent:
        return request
    return EncodedRequest(
        request.match_id,
        request.request_id,
        request.request + convert.varint_field(_REQUEST.RESENT_FIELD_NUMBER, True),
        resent=True,
    )


def rejection(
    match_id: str,
    request_id: int,
    code: pb.ErrorCode,
    message: str,
    *,
    retries_left: int | None = None,
) -> rpb.PlayResponse:
    """A refused answer; ``retries_left`` None means no retry is allowed."""
    return rpb.PlayResponse(
        rejection=rpb.Rejection(
            match_id=match_id,
            request_id=request_id,
            code=code,
            message=message,
            retry_allowed=retries_left is not None,
            retries_left=retries_left if retries_left is not None else 0,
        )
    )


def notice(
    match_id: str,
    deal_index: int,
    seat: int,
    kind: rpb.NoticeKind,
    *,
    strikes: int,
    reason: pb.ForfeitReason = pb.FORFEIT_REASON_UNSPECIFIED,
) -> rpb.PlayResponse:
    """A notice about a seat (timeout, disconnect, resume, forfeit)."""
    return rpb.PlayResponse(
        event=rpb.Event(
            match_id=match_id,
            deal_index=deal_index,
            notice=rpb.SeatNotice(seat=seat, kind=kind, strikes=strikes, forfeit_reason=reason),
        )
    )


def deal_end(
    match_id: str, match: Match, deal: Deal, *, voided: bool, reveal_deck: bool
) -> rpb.PlayResponse:
    """The end of the last recorded deal of ``match``: every trick and score, and the deck
    order unless it would give away a sealed twin's decks."""
    record = match.records[-1]
    board = match.board
    view = full_view(deal)
    scores = [
        rpb.SideScore(
            side=side,
            card_points=record.card_points[side] or 0,
            tricks=record.tricks[side] or 0,
            penalty=(record.penalties[side] if record.penalties else None) or 0,
            penalty_total=board.totals[side],
            active=any(match.side_of[s] == side for s in deal.active),
        )
        for side in range(board.n_sides)
    ]
    tricks = list(view.tricks)
    if view.trick is not None:  # a money Bura: the led cards stay on the table
        tricks.append(view.trick)
    msg = rpb.PlayResponse(
        deal_end=rpb.DealEnd(
            match_id=match_id,
            deal_index=record.index,
            scores=scores,
            pot_winners=record.pot_winners,
            chips=match.outcome().chips,
            voided=voided,
            deck=[CODES[c] for c in record.deck] if reveal_deck else [],
        )
    )
    msg.deal_end.MergeFromString(convert.encoded_tricks(rpb.DealEnd.TRICKS_FIELD_NUMBER, tricks))
    return msg


def match_end(
    match_id: str, result: pb.MatchResult, replay_id: str, seed: bytes
) -> rpb.PlayResponse:
    """The end of a match: its result, where its replay is, and the seed (or b"" if sealed)."""
    return rpb.PlayResponse(
        match_end=rpb.MatchEnd(match_id=match_id, result=result, replay_id=replay_id, seed=seed)
    )


def match_result(
    match: Match,
    *,
    forfeits: Sequence[pb.Forfeit],
    timeouts: Sequence[int],
    rejections: Sequence[int],
    aborted: bool = False,
) -> pb.MatchResult:
    """The result of a match (an aborted one has no winner)."""
    outcome = match.outcome()
    if aborted:
        reason = pb.MATCH_END_REASON_ABORTED
    elif outcome.reason is None:
        reason = pb.MATCH_END_REASON_UNSPECIFIED
    else:
        reason = convert.END_REASON_TO_PB[outcome.reason]
    winner = None if aborted else outcome.winner
    return pb.MatchResult(
        reason=reason,
        draw=winner is None,
        winner_side=winner or 0,
        penalty_totals=outcome.penalty_totals,
        chips=outcome.chips,
        eliminated_sides=outcome.eliminated,
        forfeits=forfeits,
        timeouts=timeouts,
        rejections=rejections,
        deals=len(match.records),
    )
