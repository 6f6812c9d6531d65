"""A running ladder: authenticated sessions wait, the scheduler groups them, the lobby starts
their matches, and finished results are committed to the store after the replay is on disk."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from pathlib import Path

from kozel.engine.shuffle import new_seed
from kozel.ladder.config import LadderSpec
from kozel.ladder.ratings import standing_ranks
from kozel.ladder.scheduler import Entrant, History, pick
from kozel.ladder.store import SeatResult, Store
from kozel.server.convert import ruleset_from_pb
from kozel.server.replay import read_replay, verify_replay
from kozel.server.runner import MatchOutcome, MatchRunner
from kozel.server.seats import SeatLink
from kozel.v1 import game_pb2 as pb

log = logging.getLogger("kozel.ladder")

StartMatch = Callable[..., MatchRunner]
PATIENCE_S = 1.0  # how long a repeat pairing waits for other opponents to free up


class LadderRuntime:
    """One ladder inside a referee."""

    def __init__(self, spec: LadderSpec, store: Store, start: StartMatch,
                 rng: random.Random | None = None) -> None:
        self.spec = spec
        self.rules = spec.rules()
        self.clock = spec.clock()
        self.store = store
        self._start = start
        self.rng = rng or random.Random()
        self.history = History(spec.repeat_window)
        self.waiting: list = []  # sessions (one entry per free slot)
        self.running: dict[str, list[int]] = {}  # match id -> bot ids by seat
        self._since: dict[int, float] = {}
        self._commits: set[asyncio.Task[None]] = set()
        self._retry: asyncio.TimerHandle | None = None

    def join(self, session) -> None:
        """Queue every free slot of an authenticated session."""
        if session.ladder_rated is not True:
            self.store.ensure_rating(self.spec.name, session.bot.id)
            session.ladder_rated = True
        missing = session.free_slots - self.waiting.count(session)
        self.waiting.extend([session] * max(missing, 0))
        self._since.setdefault(id(session), time.monotonic())
        self.drain()

    def forget(self, session) -> None:
        self.waiting = [s for s in self.waiting if s is not session]
        self._since.pop(id(session), None)

    def drain(self) -> None:
        """Start every match the waiting bots allow. A group that met within the repeat window
        is held back for up to ``PATIENCE_S`` in case other opponents free up."""
        while len(self.running) < self.spec.max_concurrent_matches:
            ratings = {s.name: s.ordinal for s in self.store.standings(self.spec.name)}
            entrants = [Entrant(s, s.bot.id, ratings.get(s.bot.name, 0.0),
                                self._since.get(id(s), 0.0))
                        for s in self.waiting if s.free_slots > 0]
            oldest = min((e.since for e in entrants), default=time.monotonic())
            patient = time.monotonic() - oldest < PATIENCE_S
            group = pick(entrants, self.spec.players, self.history, self.spec.rating_scale,
                         self.rng, allow_repeat=not patient)
            if group is None:
                if patient and len({e.bot_id for e in entrants}) >= self.spec.players:
                    self._retry_later()
                return
            for e in group:
                self.waiting.remove(e.key)
                self._since[id(e.key)] = time.monotonic()
            self._launch([e.key for e in group])

    def _retry_later(self) -> None:
        if self._retry is None or self._retry.cancelled():
            def again() -> None:
                self._retry = None
                self.drain()
            self._retry = asyncio.get_running_loop().call_later(PATIENCE_S / 4, again)

    def _launch(self, sessions: list) -> None:
        links: list[SeatLink] = [s.new_link() for s in sessions]
        for link, s in zip(links, sessions):
            link.name = s.bot.name
        runner = self._start(links, self.rules, self.spec.players, self.clock, new_seed(), "",
                             on_done=self._done)
        bots = [s.bot.id for s in sessions]
        self.running[runner.match_id] = bots
        self.history.record(bots)
        sides = runner.match.side_of
        self.store.start_match(runner.match_id, self.spec.name, self.spec.players,
                               [(seat, sides[seat], bot) for seat, bot in enumerate(bots)])

    def _done(self, runner: MatchRunner) -> None:
        """Called when a match task ends: commit its result (replay already on disk)."""
        bots = self.running.pop(runner.match_id, None)
        if bots is not None and runner.outcome is not None:
            task = asyncio.get_running_loop().create_task(self._commit(runner, bots))
            self._commits.add(task)
            task.add_done_callback(self._commits.discard)
        self.drain()

    async def _commit(self, runner: MatchRunner, bots: list[int]) -> None:
        outcome: MatchOutcome = runner.outcome  # type: ignore[assignment]
        if outcome.result.reason == pb.MATCH_END_REASON_ABORTED or not outcome.replay_id:
            await asyncio.to_thread(self.store.abort_match, runner.match_id)
            return
        await asyncio.to_thread(commit_result, self.store, runner.match_id, outcome.result,
                                str(outcome.replay_path), runner.match.side_of, bots,
                                self.rules.is_money)

    async def flush(self) -> None:
        """Wait for pending result commits (at shutdown)."""
        if self._commits:
            await asyncio.gather(*self._commits, return_exceptions=True)


def commit_result(store: Store, match_id: str, result: pb.MatchResult, replay_path: str,
                  side_of: tuple[int, ...], bots: list[int], money: bool) -> None:
    """Commit a finished match's result and rating update (its replay is on disk)."""
    forfeited_sides = sorted({side_of[f.seat] for f in result.forfeits})
    if money:
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
        seats=seats)


def recover(store: Store, replay_dir: Path) -> tuple[list[str], list[str]]:
    """After a crash: a match still marked running whose finished replay is on disk and
    verifies is committed now; the others are marked aborted. Returns (committed, aborted)."""
    committed, aborted = [], []
    for match_id, bots in store.running_matches().items():
        path = Path(replay_dir) / f"{match_id}.kzr"
        replay = None
        if path.exists():
            try:
                replay = read_replay(path)
            except (OSError, ValueError):
                replay = None
        if (replay is not None and replay.result.reason != pb.MATCH_END_REASON_ABORTED
                and verify_replay(replay) == []):
            rules = ruleset_from_pb(replay.ruleset)
            commit_result(store, match_id, replay.result, str(path),
                          rules.side_of(replay.players), bots, rules.is_money)
            committed.append(match_id)
        else:
            store.abort_match(match_id, "referee restarted")
            aborted.append(match_id)
    return committed, aborted
