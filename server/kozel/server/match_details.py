"""Match details (``kozel.v1.GetMatchResponse``) from what a referee knows about a match.

Sources, in order: the ladder store (ladder matches: status, times, ranks, rating changes),
completed by the match's replay on disk (finished) or by the running match (live) for what the
store does not keep (ruleset, clock, full result, timeouts, forfeits); a match the store does
not know comes from the running match in the lobby, or else from its replay on disk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, cast

from kozel.core import convert
from kozel.engine.rules import Ruleset
from kozel.ladder.store import MatchDetail, Store
from kozel.server.replay.archive import ReplayArchive
from kozel.server.replay.build import result_to_pb
from kozel.server.replay.render import rules_of
from kozel.v1 import game_pb2 as pb
from kozel.v1 import match_pb2 as mpb
from kozel.v1 import replay_pb2

if TYPE_CHECKING:
    from kozel.server.runner import MatchRunner


def status_of(result: pb.MatchResult) -> str:
    """running, finished or aborted, as the store spells it."""
    if result.reason == pb.MATCH_END_REASON_ABORTED:
        return "aborted"
    return "running" if result.reason == pb.MATCH_END_REASON_UNSPECIFIED else "finished"


def _seats(
    names: Sequence[str], side_of: Sequence[int], result: pb.MatchResult, money: bool
) -> list[mpb.MatchSeat]:
    forfeit_seats = {f.seat for f in result.forfeits}
    ranks: tuple[int, ...] = ()
    if status_of(result) == "finished":
        ranks = convert.outcome_from_pb(result, side_of, money).ranks
    out = []
    for seat, (name, side) in enumerate(zip(names, side_of)):
        out.append(
            mpb.MatchSeat(
                seat=seat,
                bot=name,
                side=side,
                rank=ranks[side] if ranks else 0,
                penalty=result.penalty_totals[side] if result.penalty_totals else 0,
                chips=result.chips[seat] if result.chips else 0,
                timeouts=result.timeouts[seat] if result.timeouts else 0,
                forfeited=seat in forfeit_seats,
            )
        )
    return out


def from_runner(runner: MatchRunner) -> mpb.GetMatchResponse:
    """A match running in this referee (call on the event loop that runs it)."""
    if runner.outcome is not None:
        result, replay_id = runner.outcome.result, runner.outcome.replay_id
    else:
        result = result_to_pb(
            runner.match,
            forfeits=runner.forfeits,
            timeouts=runner.public_timeouts,
            rejections=runner.public_rejections,
        )
        replay_id = ""
        if result.reason == pb.MATCH_END_REASON_UNSPECIFIED:
            result.draw = False  # no result yet, only the totals so far
    out = mpb.GetMatchResponse(
        match_id=runner.match_id,
        ladder=runner.ladder,
        table_id=runner.table_id,
        status=status_of(result),
        ruleset=convert.ruleset_to_pb(runner.rules),
        players=runner.players,
        result=result,
        replay_id=replay_id,
        source=mpb.DETAILS_SOURCE_LIVE,
        time_control=runner.clock.to_pb(),
        seats=_seats(
            [p.name for p in runner.seating], runner.match.side_of, result, runner.rules.is_money
        ),
    )
    out.started_at.FromDatetime(runner.started_at)
    return out


def from_replay(replay: replay_pb2.Replay) -> mpb.GetMatchResponse:
    """A match that has ended, from its replay."""
    seats = sorted(replay.seats, key=lambda s: s.seat)
    return mpb.GetMatchResponse(
        match_id=replay.match_id,
        table_id=replay.table_id,
        status=status_of(replay.result),
        started_at=replay.started_at,
        ended_at=replay.ended_at,
        ruleset=replay.ruleset,
        players=replay.players,
        result=replay.result,
        replay_id=replay.match_id,
        source=mpb.DETAILS_SOURCE_REPLAY,
        time_control=replay.time_control,
        seats=_seats(
            [s.name for s in seats], [s.side for s in seats], replay.result, _is_money(replay)
        ),
    )


def _is_money(replay: replay_pb2.Replay) -> bool:
    rules = rules_of(replay)
    if rules is None:  # a knob this version does not know: only the money game lists chips
        return bool(replay.result.chips)
    return rules.is_money


def from_store(row: MatchDetail, rules: Ruleset | None) -> mpb.GetMatchResponse:
    """A ladder match as the store keeps it (its result only as far as the store has it)."""
    out = mpb.GetMatchResponse(
        match_id=row.id,
        ladder=row.ladder,
        status=row.status,
        players=row.players,
        source=mpb.DETAILS_SOURCE_STORE,
    )
    _stamp(out.started_at, row.started_at)
    if row.ended_at is not None:
        _stamp(out.ended_at, row.ended_at)
    if rules is not None:
        out.ruleset.CopyFrom(convert.ruleset_to_pb(rules))
    stored = row.result or {}
    reason = (row.reason or "") if row.status == "finished" else ""
    out.result.CopyFrom(
        pb.MatchResult(
            reason=cast("pb.MatchEndReason", pb.MatchEndReason.Value(reason))
            if reason in pb.MatchEndReason.keys()  # noqa: SIM118 (an enum wrapper, not a dict)
            else pb.MATCH_END_REASON_ABORTED
            if row.status == "aborted"
            else pb.MATCH_END_REASON_UNSPECIFIED,
            draw=bool(stored.get("draw", False)),
            winner_side=int(stored.get("winner_side", 0)),
            penalty_totals=stored.get("penalty_totals", []),
            chips=stored.get("chips", []),
        )
    )
    for x in row.seats:
        seat = out.seats.add(
            seat=x.seat, bot=x.bot, side=x.side, rank=x.rank or 0, penalty=x.penalty or 0
        )
        if x.mu_before is not None and x.mu_after is not None:
            seat.rating.CopyFrom(
                mpb.RatingChange(
                    mu_before=x.mu_before, mu_after=x.mu_after, sigma_after=x.sigma_after or 0.0
                )
            )
    return out


def _stamp(ts, when: datetime) -> None:
    ts.FromDatetime(when)  # a naive datetime (SQLite) is taken as UTC, as it was stored


def combine(stored: mpb.GetMatchResponse, other: mpb.GetMatchResponse) -> mpb.GetMatchResponse:
    """The store's details completed by the replay's or the running match's."""
    out = mpb.GetMatchResponse()
    out.CopyFrom(stored)
    out.table_id = other.table_id
    out.ruleset.CopyFrom(other.ruleset)
    out.time_control.CopyFrom(other.time_control)
    out.result.CopyFrom(other.result)
    out.replay_id = other.replay_id
    by_seat = {s.seat: s for s in other.seats}
    for seat in out.seats:
        more = by_seat.get(seat.seat)
        if more is not None:
            seat.chips, seat.timeouts, seat.forfeited = more.chips, more.timeouts, more.forfeited
            seat.rank = seat.rank or more.rank
    return out


def _read(read: Callable[[], replay_pb2.Replay | None]) -> replay_pb2.Replay | None:
    try:
        return read()
    except (OSError, ValueError):
        return None


def match_details(
    match_id: str,
    *,
    store: Store | None,
    replays: ReplayArchive,
    live: mpb.GetMatchResponse | None = None,
    rules_of: Callable[[str], Ruleset | None] = lambda _: None,
) -> mpb.GetMatchResponse | None:
    """Everything known about ``match_id`` (blocking: reads the store and the replay file);
    ``live`` is :func:`from_runner` of the match when it runs here. None if nothing is known.
    ``match_id`` must already be checked to be a match id."""
    row = store.match_detail(match_id) if store is not None else None
    replay = None
    if live is None or live.status != "running":
        where = row.replay_path if row is not None else None
        if where:  # where its host wrote it
            replay = _read(lambda: replays.read_location(where))
        if replay is None:
            replay = _read(lambda: replays.read(match_id))
    other = from_replay(replay) if replay is not None else live
    if row is None:
        return other
    stored = from_store(row, rules_of(row.ladder))
    return combine(stored, other) if other is not None else stored
