"""The replay folder is the journal of finished ladder matches.

A replay is on disk (fsynced) before anyone hears the result, and it holds everything the store
needs: the ladder, the bots by name, the seating and the result. So a result the store never got
(a crash before the commit, a store outage, a store restored from an older backup) is committed
from the replay later, and a result is recorded once whatever happened in between:

- at start, :func:`recover` commits every finished ladder replay in the folder that the store
  does not hold as finished yet, in the order the matches ended (so ratings evolve as they would
  have), then marks aborted this referee's own matches still marked running (a crash cut them);
- while running, :func:`adopt` settles orphans this referee claimed from a lost host: committed
  from the host's replay when it can be read and verifies, otherwise aborted without rating.

Blocking (file and store I/O): call from a worker thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import structlog

from kozel.engine.rules import Ruleset
from kozel.ladder.ratings import standing_ranks
from kozel.ladder.store import HostedMatch, SeatResult, Store, StoreError
from kozel.server.convert import ruleset_from_pb
from kozel.server.replay import ReplayError, read_replay, verify_replay
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


def commit_result(store: Store, match_id: str, result: pb.MatchResult, replay_path: str,
                  rules: Ruleset, players: int, bots: list[int],
                  start: tuple[str, int, str | None, object] | None = None) -> None:
    """Commit a finished match's result and rating update (its replay is on disk)."""
    side_of = rules.side_of(players)
    forfeited_sides = sorted({side_of[f.seat] for f in result.forfeits})
    if rules.is_money:
        ranks = standing_ranks(chips=list(result.chips), forfeited=forfeited_sides)
    else:
        ranks = standing_ranks(penalties=list(result.penalty_totals), forfeited=forfeited_sides)
    forfeit_seats = {f.seat for f in result.forfeits}
    seats = [SeatResult(
        seat=seat, side=side_of[seat], bot_id=bot, rank=ranks[side_of[seat]],
        penalty=result.penalty_totals[side_of[seat]] if result.penalty_totals else 0,
        won=not result.draw and result.winner_side == side_of[seat],
        timeouts=result.timeouts[seat] if result.timeouts else 0,
        forfeited=seat in forfeit_seats) for seat, bot in enumerate(bots)]
    store.finish_match(
        match_id, reason=pb.MatchEndReason.Name(result.reason), replay_path=replay_path,
        result={"penalty_totals": list(result.penalty_totals), "chips": list(result.chips),
                "winner_side": result.winner_side, "draw": result.draw},
        seats=seats,
        start=start,  # type: ignore[arg-type]
    )


def commit_replay(store: Store, replay: replay_pb2.Replay, path: Path,
                  referee_id: str | None) -> str:
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
    start = (replay.ladder, replay.players, referee_id, replay.started_at.ToDatetime())
    commit_result(store, replay.match_id, replay.result, str(path), rules, replay.players,
                  [ids[n] for n in names], start=start)
    return ""


def recover(store: Store, referee_id: str, replay_dir: Path) -> Recovery:
    """At start: commit the finished ladder replays the store lacks, then abort this referee's
    matches still marked running."""
    out = Recovery()
    paths = {p.stem: p for p in Path(replay_dir).glob("*.kzr")}
    done = store.finished_ids(list(paths))
    own = store.running_matches(referee_id)
    pending: list[tuple[object, Path, replay_pb2.Replay]] = []
    for match_id, path in paths.items():
        if match_id in done:
            continue
        replay = _read(path)
        if replay is None or not replay.ladder or replay.match_id != match_id:
            continue
        if replay.result.reason == pb.MATCH_END_REASON_ABORTED:
            if match_id in own:
                store.abort_match(match_id, "referee restarted", str(path))
                out.aborted.append(match_id)
                del own[match_id]
            continue
        pending.append((replay.ended_at.ToDatetime(), path, replay))
    for _, path, replay in sorted(pending, key=lambda x: (x[0], x[1].name)):
        if _commit(store, replay, path, referee_id, out):
            own.pop(replay.match_id, None)
    for match_id in own:
        store.abort_match(match_id, "referee restarted")
        out.aborted.append(match_id)
    return out


def adopt(store: Store, referee_id: str, orphans: dict[str, HostedMatch]) -> Recovery:
    """Settle orphans this referee claimed: committed from their host's replay if it is
    readable and finished, else aborted (no rating change; the replay path is kept if the
    aborted match's replay exists)."""
    out = Recovery()
    for match in orphans.values():
        path = Path(match.replay_path) if match.replay_path else None
        replay = _read(path) if path is not None else None
        if replay is not None and replay.result.reason != pb.MATCH_END_REASON_ABORTED:
            if _commit(store, replay, path, referee_id, out):  # type: ignore[arg-type]
                continue
        store.abort_match(match.id, "host lost", str(path) if replay is not None else None)
        out.aborted.append(match.id)
    return out


def _commit(store: Store, replay: replay_pb2.Replay, path: Path, referee_id: str,
            out: Recovery) -> bool:
    try:
        why = commit_replay(store, replay, path, referee_id)
    except StoreError as exc:
        why = str(exc)
    if why:
        log.warning("replay_not_committed", match_id=replay.match_id, path=str(path), why=why)
        out.skipped.append(replay.match_id)
        return False
    out.committed.append(replay.match_id)
    return True


def _read(path: Path) -> replay_pb2.Replay | None:
    try:
        return read_replay(path)
    except (OSError, ReplayError):
        return None
