"""Building a replay (and a match result) from an engine :class:`Match`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache

from kozel.core.convert import (
    END_REASON_TO_PB,
    action_to_pb,
    length_delimited,
    ruleset_to_pb,
    varint_field,
)
from kozel.core.requests import StepMeta
from kozel.engine.actions import Action
from kozel.engine.cards import CODES
from kozel.engine.deal import Deal
from kozel.engine.match import DealRecord, Match
from kozel.engine.shuffle import commitment
from kozel.server.replay.file import FORMAT_VERSION
from kozel.server.version import VERSION
from kozel.v1 import game_pb2, replay_pb2

ABORTED = game_pb2.MATCH_END_REASON_ABORTED


ENGINE_VERSION = VERSION


def result_to_pb(
    match: Match,
    *,
    forfeits: Sequence[game_pb2.Forfeit],
    timeouts: Sequence[int],
    rejections: Sequence[int],
    aborted: bool = False,
) -> game_pb2.MatchResult:
    """The result of a match (an aborted one has no winner)."""
    outcome = match.outcome()
    if aborted:
        reason = ABORTED
    elif outcome.reason is None:
        reason = game_pb2.MATCH_END_REASON_UNSPECIFIED
    else:
        reason = END_REASON_TO_PB[outcome.reason]
    winner = None if aborted else outcome.winner
    return game_pb2.MatchResult(
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


def build_replay(
    match: Match,
    *,
    match_id: str,
    names: Sequence[str],
    time_control: game_pb2.TimeControl,
    steps: Sequence[Sequence[StepMeta]],
    result: game_pb2.MatchResult,
    started_at: datetime,
    ended_at: datetime,
    table_id: str = "",
    engine_version: str = ENGINE_VERSION,
    protocol_version: int = 1,
    ladder: str = "",
) -> replay_pb2.Replay:
    """The replay of ``match``. ``steps[i]`` holds one :class:`StepMeta` per action of deal i.

    For an aborted match (``result.reason`` ABORTED) the deal in play is added as a last,
    unscored deal.
    """
    if len(names) != match.players:
        raise ValueError(f"{len(names)} names for {match.players} seats")
    deals = [
        _record_to_pb(rec, rec.active, _metas(steps, rec.index, len(rec.actions)))
        for rec in match.records
    ]
    if result.reason == ABORTED and not match.over:
        index = len(match.records)
        deals.append(_deal_to_pb(match.deal, index, _metas(steps, index, len(match.deal.history))))
    replay = replay_pb2.Replay(
        format_version=FORMAT_VERSION,
        protocol_version=protocol_version,
        engine_version=engine_version,
        match_id=match_id,
        ruleset=ruleset_to_pb(match.rules),
        players=match.players,
        seats=[
            replay_pb2.ReplaySeat(seat=s, name=n, side=match.side_of[s])
            for s, n in enumerate(names)
        ],
        seed=match.seed,
        seed_commitment=commitment(match.seed),
        time_control=time_control,
        deals=deals,
        result=result,
        table_id=table_id,
        ladder=ladder,
    )
    replay.started_at.FromDatetime(started_at)
    replay.ended_at.FromDatetime(ended_at)
    return replay


def _metas(steps: Sequence[Sequence[StepMeta]], index: int, n_actions: int) -> Sequence[StepMeta]:
    metas = steps[index] if index < len(steps) else ()
    if len(metas) != n_actions:
        raise ValueError(f"deal {index} has {n_actions} actions but {len(metas)} step records")
    return metas


def encoded_steps(actions: Sequence[tuple[int, Action]], metas: Sequence[StepMeta]) -> bytes:
    """The deal's steps encoded as the elements of ``ReplayDeal.steps``, byte for byte what
    protobuf writes (tests compare them), put together from memoised encodings: a message
    built per step cost twice the rest of the replay."""
    out = []
    for (seat, action), meta in zip(actions, metas):
        step = _step_head(seat, action) + _step_tail(meta.request_id, meta.think_ms, meta.timeout)
        for rejection in meta.rejections:
            step += length_delimited(_STEP.REJECTIONS_FIELD_NUMBER, rejection.SerializeToString())
        out.append(length_delimited(_DEAL_STEPS, step))
    return b"".join(out)


_DEAL_STEPS = replay_pb2.ReplayDeal.STEPS_FIELD_NUMBER
_STEP = replay_pb2.ReplayStep


@lru_cache(maxsize=8192)
def _step_head(seat: int, action: Action) -> bytes:
    """A ``ReplayStep``'s fields before ``request_id``: the seat and the action."""
    return _STEP(seat=seat, action=action_to_pb(action)).SerializeToString()


def _step_tail(request_id: int, think_ms: int, timeout: bool) -> bytes:
    """A ``ReplayStep``'s ``request_id``, ``think_ms`` and ``timeout``."""
    return (
        varint_field(_STEP.REQUEST_ID_FIELD_NUMBER, request_id)
        + varint_field(_STEP.THINK_MS_FIELD_NUMBER, think_ms)
        + varint_field(_STEP.TIMEOUT_FIELD_NUMBER, timeout)
    )


def _record_to_pb(
    rec: DealRecord, active: Sequence[int], metas: Sequence[StepMeta]
) -> replay_pb2.ReplayDeal:
    msg = replay_pb2.ReplayDeal(
        index=rec.index,
        dealer=rec.dealer,
        deck=[CODES[c] for c in rec.deck],
        first_leader=rec.first_leader,
        active_seats=active,
        card_points=zeros(rec.card_points),
        tricks=zeros(rec.tricks),
        penalties=zeros(rec.penalties or ()),
        pot_winners=rec.pot_winners,
        voided=rec.voided,
    )
    if rec.trump_index is not None:
        msg.trump_index = rec.trump_index
    msg.MergeFromString(encoded_steps(rec.actions, metas))
    return msg


def _deal_to_pb(deal: Deal, index: int, metas: Sequence[StepMeta]) -> replay_pb2.ReplayDeal:
    """The deal in play of an aborted match: its history so far, no scores."""
    msg = replay_pb2.ReplayDeal(
        index=index,
        dealer=deal.dealer,
        deck=[CODES[c] for c in deal.deck],
        first_leader=deal.first_leader,
        active_seats=deal.active,
    )
    msg.MergeFromString(encoded_steps(deal.history, metas))
    if deal.trump_index is not None:
        msg.trump_index = deal.trump_index
    return msg


def zeros(values: Sequence[int | None]) -> list[int]:
    return [v or 0 for v in values]
