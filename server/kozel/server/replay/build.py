"""Building a replay (and a match result) from an engine :class:`Match`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from kozel.core.convert import ruleset_to_pb
from kozel.core.messages import PROTOCOL_VERSION
from kozel.core.messages import match_result as result_to_pb
from kozel.core.steps import StepMeta, encoded_steps
from kozel.engine.cards import CODES
from kozel.engine.deal import Deal
from kozel.engine.match import DealRecord, Match
from kozel.engine.shuffle import commitment
from kozel.server.replay.file import FORMAT_VERSION
from kozel.server.version import VERSION
from kozel.v1 import game_pb2, replay_pb2

ABORTED = game_pb2.MATCH_END_REASON_ABORTED
__all__ = ["ABORTED", "build_replay", "result_to_pb", "zeros"]

ENGINE_VERSION = VERSION


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
    protocol_version: int = PROTOCOL_VERSION,
    ladder: str = "",
    duplicate_first_half: bool = False,
) -> replay_pb2.Replay:
    """The replay of ``match``. ``steps[i]`` holds one :class:`StepMeta` per action of deal i;
    ``duplicate_first_half`` marks the first half of a duplicate pair (secret until its twin
    has ended).

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
        duplicate_first_half=duplicate_first_half,
    )
    replay.started_at.FromDatetime(started_at)
    replay.ended_at.FromDatetime(ended_at)
    return replay


def _metas(steps: Sequence[Sequence[StepMeta]], index: int, n_actions: int) -> Sequence[StepMeta]:
    metas = steps[index] if index < len(steps) else ()
    if len(metas) != n_actions:
        raise ValueError(f"deal {index} has {n_actions} actions but {len(metas)} step records")
    return metas


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
