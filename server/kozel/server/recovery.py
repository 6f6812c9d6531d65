"""The replay archive is the journal of finished ladder matches.

A replay is kept (on disk, fsynced) before anyone hears the result, and it holds everything the
store needs: the ladder, the bots by name, the seating and the result. So a result the store
never got (a crash before the commit, a store outage, a store restored from an older backup) is
committed from the replay later, and a result is recorded once whatever happened in between:

- at start, :func:`recover` commits every finished ladder replay in the archive that the store
  does not hold as finished (or voided) yet, each rated in the place its end time gives it
  among the ladder's results (:mod:`kozel.ladder.rating_order`), then marks aborted this
  referee's own matches still marked running (a crash cut them);
- while running, :func:`adopt` settles orphans this referee claimed from a lost host: committed
  from the host's replay when it can be read and verifies, otherwise aborted without rating.

Blocking (file and store I/O): call from a worker thread.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import structlog

from kozel.core.convert import outcome_from_pb, ruleset_from_pb
from kozel.engine.rules import Ruleset
from kozel.ladder.store import HostedMatch, SeatResult, Store, StoreError
from kozel.server.replay.archive import ReplayArchive
from kozel.server.replay.file import ReplayError, encode_replay
from kozel.server.replay.verify import verify_replay
from kozel.v1 import game_pb2 as pb
from kozel.v1 import replay_pb2

log = structlog.get_logger("kozel.recovery")


@dataclass
class Recovery:
    """What a recovery pass did, by match id."""

    committed: list[str] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # replays that cannot be committed

    def __bool__(self) -> bool:
        return bool(self.committed or self.aborted or self.skipped)


def commit_result(
    store: Store,
    match_id: str,
    result: pb.MatchResult,
    replay_path: str,
    rules: Ruleset,
    players: int,
    bots: list[int],
    start: tuple[str, int, str | None, object] | None = None,
    replay: bytes | None = None,
    after: Callable[..., None] | None = None,
    ended_at: datetime | None = None,
    ladder: str | None = None,
) -> None:
    """Commit a finished match's result and rating update (its replay is on disk; ``replay``,
    its bytes, goes into a store that keeps replays)."""
    side_of = rules.side_of(players)
    outcome = outcome_from_pb(result, side_of, rules.is_money)
    ranks = outcome.ranks
    forfeit_seats = {f.seat for f in result.forfeits}
    seats = [
        SeatResult(
            seat=seat,
            side=side_of[seat],
            bot_id=bot,
            rank=ranks[side_of[seat]],
            penalty=result.penalty_totals[side_of[seat]] if result.penalty_totals else 0,
            won=outcome.winner == side_of[seat],
            timeouts=result.timeouts[seat] if result.timeouts else 0,
            forfeited=seat in forfeit_seats,
        )
        for seat, bot in enumerate(bots)
    ]
    store.finish_match(
        match_id,
        reason=pb.MatchEndReason.Name(result.reason),
        replay_path=replay_path,
        result={
            "penalty_totals": list(result.penalty_totals),
            "chips": list(result.chips),
            "winner_side": result.winner_side,
            "draw": result.draw,
        },
        seats=seats,
        ended_at=ended_at,
        ladder=ladder,
        start=start,  # type: ignore[arg-type]
        replay=replay if store.keeps_replays else None,
        after=after,
    )


def commit_replay(
    store: Store, replay: replay_pb2.Replay, location: str, referee_id: str | None
) -> str:
    """Commit a finished ladder match from its replay alone; returns "" or why it cannot be."""
    if not replay.ladder:
        return "not a ladder match"
    if replay.result.reason == pb.MATCH_END_REASON_ABORTED:
        return "the match was aborted"
    problems = verify_replay(replay)
    if problems:
        return f"the replay does not verify: {problems[0]}"
    names = [s.name for s in sorted(replay.seats, key=lambda s: s.seat)]
    ids = store.bot_ids(names)
    missing = [n for n in names if n not in ids]
    if missing:
        return f"unknown bots {missing}"
    rules = ruleset_from_pb(replay.ruleset)
    start = (replay.ladder, replay.players, referee_id, replay.started_at.ToDatetime(UTC))
    commit_result(
        store,
        replay.match_id,
        replay.result,
        location,
        rules,
        replay.players,
        [ids[n] for n in names],
        start=start,
        replay=encode_replay(replay) if store.keeps_replays else None,
        ended_at=replay.ended_at.ToDatetime(UTC),
    )
    return ""


def recover(store: Store, referee_id: str, replays: ReplayArchive) -> Recovery:
    """At start: commit the finished ladder replays the store lacks, then abort this referee's
    matches still marked running."""
    out = Recovery()
    ids = replays.ids()
    done = store.settled_ids(ids)
    own = store.running_matches(referee_id)
    pending: list[tuple[object, str, replay_pb2.Replay]] = []
    for match_id in ids:
        if match_id in done:
            continue
        replay = _read(functools.partial(replays.read, match_id))
        if replay is None or not replay.ladder or replay.match_id != match_id:
            continue
        if replay.result.reason == pb.MATCH_END_REASON_ABORTED:
            if match_id in own:
                ended = replay.ended_at.ToDatetime(tzinfo=UTC)
                store.abort_match(
                    match_id, "referee restarted", replays.location(match_id), lost_at=ended
                )
                out.aborted.append(match_id)
                del own[match_id]
            continue
        pending.append((replay.ended_at.ToDatetime(), match_id, replay))
    for _, match_id, replay in sorted(pending, key=lambda x: (x[0], x[1])):
        if _commit(store, replay, replays.location(match_id), referee_id, out):
            own.pop(replay.match_id, None)
    for match_id, match in own.items():  # it ended when this referee was last seen
        store.abort_match(match_id, "referee restarted", lost_at=match.host_seen_at)
        out.aborted.append(match_id)
    return out


def adopt(
    store: Store, referee_id: str, orphans: dict[str, HostedMatch], replays: ReplayArchive
) -> Recovery:
    """Settle orphans this referee claimed: committed from their host's replay (at the
    location the store records) if it is readable and finished, else aborted (no rating
    change; the replay location is kept if the aborted match's replay exists)."""
    out = Recovery()
    for match in orphans.values():
        where = match.replay_path
        replay = _read(functools.partial(replays.read_location, where)) if where else None
        if (
            where
            and replay is not None
            and replay.result.reason != pb.MATCH_END_REASON_ABORTED
            and _commit(store, replay, where, referee_id, out)
        ):
            continue
        store.abort_match(
            match.id,
            "host lost",
            where if replay is not None else None,
            lost_at=match.host_seen_at,
        )
        out.aborted.append(match.id)
    return out


def _commit(
    store: Store, replay: replay_pb2.Replay, location: str, referee_id: str, out: Recovery
) -> bool:
    try:
        why = commit_replay(store, replay, location, referee_id)
    except StoreError as exc:
        why = str(exc)
    if why:
        log.warning("replay_not_committed", match_id=replay.match_id, path=location, why=why)
        out.skipped.append(replay.match_id)
        return False
    out.committed.append(replay.match_id)
    return True


def _read(read: Callable[[], replay_pb2.Replay | None]) -> replay_pb2.Replay | None:
    try:
        return read()
    except (OSError, ReplayError):
        return None
