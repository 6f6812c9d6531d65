"""A ladder run inside a referee: authenticated sessions wait, the scheduler groups them, the
lobby starts their matches, and finished results are committed to the store after the replay is
on disk. The ladder's data and policy (store, ratings, scheduler, ladder files) are
:mod:`kozel.ladder`, which knows nothing of the referee."""

from __future__ import annotations

import asyncio
import functools
import random
import time
import weakref
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import structlog

from kozel.engine.shuffle import new_seed
from kozel.ladder.config import LadderSpec
from kozel.ladder.duplicates import record_group, rotate, rotations
from kozel.ladder.matchmaking import add_twin, start_assigned
from kozel.ladder.plan import CAPPED, Host, Policy, Snapshot, Waiting, plan
from kozel.ladder.scheduler import History, MeetingCap
from kozel.ladder.store import LadderState, Store
from kozel.server import metrics
from kozel.server.ladder_writes import LadderWrites
from kozel.server.replay.archive import ReplayArchive
from kozel.server.runner import FinishedMatch, MatchRunner
from kozel.server.running import MatchStart
from kozel.server.seats import SeatLink
from kozel.server.session import Session
from kozel.server.store_queue import StoreQueue
from kozel.v1 import game_pb2 as pb

log = structlog.get_logger("kozel.ladder")

StartMatch = Callable[[MatchStart, Callable[[MatchRunner], None]], MatchRunner]
PATIENCE_S = 1.0  # how long a repeat pairing waits for other opponents to free up
# A shared ladder's assignment its host has not started this long after its grace is dropped.
EXPIRE_MARGIN_S = 10.0
HERE = ""  # this referee, as the only host of a ladder it does not share
TWIN_PATIENCE_S = 60.0  # how long a duplicate twin waits for its bots before it is dropped


@dataclass
class Twin:
    """The next match of a duplicate group: the group's seed, the seats of its first match
    rotated by ``rotation`` (so that, over the group, every bot holds every side's cards)."""

    first: str  # the group's first match id (its matches stay sealed until the last ends)
    seated: list  # the first match's sessions by seat
    seed: bytes
    rotation: int
    ready_since: float | None = None  # when the match before it ended

    @property
    def sessions(self) -> list:
        """This match's sessions by seat."""
        return rotate(self.seated, self.rotation)

    @property
    def bot_ids(self) -> set[int]:
        return {s.bot.id for s in self.seated}


class LadderRuntime:
    """One ladder inside a referee."""

    def __init__(
        self,
        spec: LadderSpec,
        store: Store,
        start: StartMatch,
        replays: ReplayArchive,
        rng: random.Random | None = None,
        admit: Callable[[], bool] = lambda: True,
        queue: StoreQueue | None = None,
        referee_id: str | None = None,
        shared: bool = False,
    ) -> None:
        self.spec = spec
        # Shared with other referees: the store's scheduler pairs the waiting sessions
        # (kozel.server.cluster publishes them and launches what it assigns), not drain().
        self.shared = shared
        self.on_waiting: Callable[[], None] = lambda: None  # a shared ladder's bots wait anew
        # A session waits anew: person tables waiting for its bot take its slots first.
        self.on_free: Callable[[Session], None] = lambda _: None
        self.rules = spec.rules()
        self.clock = spec.time_control
        self.store = store
        self._start = start
        self._admit = admit  # the referee may hold new matches back (overload, drain)
        self.rng = rng or random.Random()
        self.history = History(spec.repeat_window)
        self.cap = MeetingCap(spec.repeat_cap, spec.repeat_cap_window_s)
        # The ladder's state for every referee serving it (kozel ladder start/stop), as the
        # store holds it; scheduling follows it.
        self.state = LadderState(spec.name)
        self.excluded: set[int] = set()  # bots paused or retired while connected
        # Duplicate twins by the match id of the match before them in their group.
        self.twins: dict[str, Twin] = {}
        self.groups: dict[str, list[str]] = {}  # a group's first match id -> its matches so far
        self._group_of: dict[str, str] = {}  # a running duplicate match's id -> its group's
        # The referee's replays: a duplicate group's stay sealed until its last match is
        # played (the lobby and the web refuse them meanwhile).
        self.replays = replays
        self.waiting: list = []  # sessions (one entry per free slot)
        self.reserved: Counter = Counter()  # session -> slots held for assigned, unstarted matches
        self.running: dict[str, list[int]] = {}  # match id -> bot ids by seat
        self._since: dict[int, float] = {}
        # Store calls run in a worker thread, in order, retried through outages (the
        # referee's one queue, shared by its ladders; a private one in tests).
        self.queue = queue or StoreQueue()
        self.referee_id = referee_id
        # What runs in the store queue's worker thread (never on the event loop).
        self.writes = LadderWrites(spec.name, spec.players, self.rules, store, replays)
        self.stalled = ""  # why waiting bots get no match (a shared ladder: its scheduler's)
        self.capped = (0, 0)  # groups of the waiting bots at their meeting cap, of how many
        self._retry: asyncio.TimerHandle | None = None
        self._rated: weakref.WeakSet[Session] = weakref.WeakSet()  # rating rows ensured

    def join(self, session) -> None:
        """Queue every free slot of an authenticated session."""
        if session not in self._rated:
            self._write(
                self.writes.refresh_after,
                self.store.ensure_rating,
                self.spec.name,
                session.bot.id,
            )
            self._rated.add(session)
        missing = session.free_slots - self.reserved[session] - self.waiting.count(session)
        self.waiting.extend([session] * max(missing, 0))
        self._since.setdefault(id(session), time.monotonic())
        self.on_free(session)
        if self.shared:
            self.on_waiting()
        self.drain()

    @property
    def policy(self) -> Policy:
        """The ladder's scheduling policy (the shared scheduler's too)."""
        spec = self.spec
        return Policy(
            players=spec.players,
            max_concurrent_matches=spec.max_concurrent_matches,
            repeat_window=spec.repeat_window,
            repeat_cap=spec.repeat_cap,
            repeat_cap_window_s=spec.repeat_cap_window_s,
            rating_scale=spec.rating_scale,
            patience_s=PATIENCE_S,
            expire_s=self.clock.grace_ms / 1000 + EXPIRE_MARGIN_S,
        )

    @property
    def scheduling(self) -> bool:
        """Whether new matches are scheduled (the ladder is not stopped)."""
        return self.state.running

    def apply_state(self, state: LadderState) -> None:
        """The ladder was started or stopped (here or, as the store says, on any referee):
        a stopped ladder schedules no new match; running ones finish, bots wait."""
        was, self.state = self.state.running, state
        if state.running != was:
            log.info("ladder_state", ladder=self.spec.name, state=state.state, by=state.changed_by)
            if state.running:
                self.drain()

    def exclude(self, bot_id: int, excluded: bool = True) -> None:
        """Keep a connected bot out of new matches (paused, retired), or let it back in."""
        if excluded:
            self.excluded.add(bot_id)
        else:
            self.excluded.discard(bot_id)
            self.drain()

    def running_for(self, bot_id: int) -> int:
        return sum(bot_id in bots for bots in self.running.values())

    def _drop_twin(self, before: str) -> None:
        """The twin after match ``before`` will not be played: its group ends there."""
        twin = self.twins.pop(before, None)
        if twin is not None:
            self._end_group(twin.first)

    def _end_group(self, first: str) -> None:
        """A duplicate group is over (played, or cut short): its seed and replays are public
        now (on every referee, for a store that keeps replays)."""
        for match_id in self.groups.pop(first, None) or [first]:
            self.replays.unseal(match_id)
            if self.store.keeps_replays:
                self._write(self.writes.publish_replay, match_id)

    def twin_dropped(self, first: str) -> None:
        """A shared duplicate twin will not be played (its host gave it back)."""
        self._end_group(first)

    def forget(self, session) -> None:
        for before, twin in list(self.twins.items()):
            if session in twin.seated:
                self._drop_twin(before)
        self.waiting = [s for s in self.waiting if s is not session]
        self._since.pop(id(session), None)

    def drain(self) -> None:
        """Start every match the waiting bots allow, one at a time (each start spends the
        lobby's admission), with the shared scheduler's policy (:func:`kozel.ladder.plan.plan`):
        a group that met within the repeat window is held back for up to ``PATIENCE_S`` in case
        other opponents free up."""
        if self.shared:
            return
        reserved = self._start_twins()
        while (
            self.scheduling
            and self._admit()
            and len(self.running) < self.spec.max_concurrent_matches
        ):
            snap, sessions = self._snapshot(reserved)
            formed = plan(
                snap, replace(self.policy, max_concurrent_matches=snap.matches + 1), self.rng
            )
            self._stalled(formed.stalled if formed.stuck or not formed.formed else "")
            self.capped = (formed.capped, formed.groups)
            if not formed.formed:
                if len({w.bot_id for w in snap.waiting}) >= self.spec.players:
                    self._retry_later()  # held back (repeat window) or capped: look again soon
                return
            group = [sessions[t.ticket] for t in formed.formed[0].seats]
            for session in group:
                self.waiting.remove(session)
                self._since[id(session)] = time.monotonic()
            self._launch(group)

    def _snapshot(self, reserved: set[int]) -> tuple[Snapshot, dict[str, Session]]:
        """The waiting bots as the plan sees them (one host: this referee), and the sessions
        by ticket (session id)."""
        counts = Counter(
            s
            for s in self.waiting
            if s.free_slots > 0 and s.bot.id not in self.excluded and s.bot.id not in reserved
        )
        now = time.monotonic()
        waiting = [
            Waiting(s.id, s.bot.id, HERE, n, s.max_matches, self._since.get(id(s), 0.0))
            for s, n in counts.items()
        ]
        snap = Snapshot(
            now=now,
            wall=now,  # the meeting cap's times are this clock's here
            waiting=waiting,
            hosts={HERE: Host(HERE)},
            matches=len(self.running),
            ordinals={s.bot.id: self.ratings.get(s.bot.name, 0.0) for s in counts},
            history=self.history,
            cap=self.cap,
        )
        return snap, {s.id: s for s in counts}

    def _stalled(self, why: str) -> None:
        """Why waiting bots get no match ("" when they do or nobody waits): for ``kozel
        cluster status``, and the stall alert once only an operator (or new bots) can end it."""
        self.stalled = why
        metrics.LADDER_STALLED.labels(self.spec.name).set(int(why.startswith(CAPPED)))

    def _start_twins(self) -> set[int]:
        """Start every duplicate twin whose bots are all waiting; returns the bots reserved for
        pending twins (a pair is played back to back: they are not paired with anyone else
        meanwhile)."""
        now, reserved = time.monotonic(), set()
        for before, twin in list(self.twins.items()):
            if twin.ready_since is None:  # the match before it is still being played
                reserved |= twin.bot_ids
                continue
            if now - twin.ready_since > TWIN_PATIENCE_S or twin.bot_ids & self.excluded:
                self._drop_twin(before)
                continue
            free = all(s in self.waiting and s.free_slots > 0 for s in twin.sessions)
            if (
                free
                and self.scheduling
                and self._admit()
                and len(self.running) < self.spec.max_concurrent_matches
            ):
                del self.twins[before]
                for s in twin.seated:
                    self.waiting.remove(s)
                    self._since[id(s)] = now
                bots = [s.bot.id for s in twin.sessions]
                self.history.record(bots)  # (the plan records the matches it forms)
                self.cap.record(bots, now)
                self._launch(twin.sessions, twin.seed, twin.first, rotation=twin.rotation)
            else:
                reserved |= twin.bot_ids
                if self.scheduling:
                    self._retry_later()
        return reserved

    def _retry_later(self) -> None:
        if self._retry is None or self._retry.cancelled():

            def again() -> None:
                self._retry = None
                self.drain()

            self._retry = asyncio.get_running_loop().call_later(PATIENCE_S / 4, again)

    def launch_assigned(
        self,
        sessions: list,
        seed: bytes,
        match_id: str,
        absent: dict[int, float],
        twin_of: str = "",
        rotation: int = 0,
    ) -> MatchRunner:
        """Start a match the shared scheduler assigned to this referee (``absent``: seats whose
        bot has not arrived, with the loop time their grace period began; ``twin_of``: the
        first match of its duplicate group, ``rotation`` its place there). The sessions are
        out of ``waiting`` already (:mod:`kozel.server.cluster` reserved their slots)."""
        return self._launch(
            sessions, seed, twin_of, match_id=match_id, absent=absent, rotation=rotation
        )

    def _launch(
        self,
        sessions: list,
        seed: bytes | None = None,
        twin_of: str = "",
        match_id: str | None = None,
        absent: dict[int, float] | None = None,
        rotation: int = 0,
    ) -> MatchRunner:
        """Start a match of ``sessions`` (seated in this order), rotation ``rotation`` of the
        duplicate group that ``twin_of`` began (or a new group's first match, when the ladder
        plays duplicates), and record it as running (in the store too)."""
        links: list[SeatLink] = [s.new_link() for s in sessions]
        for link, s in zip(links, sessions):
            link.name = s.bot.name
        group_size = rotations(self.rules, self.spec.players) if self.spec.duplicate else 1
        sealed = rotation < group_size - 1  # its seed deals the group's later matches too
        seed = seed or new_seed()
        start = MatchStart(
            links,
            self.rules,
            self.spec.players,
            self.clock,
            seed,
            ladder=self.spec.name,
            reveal_seed=not sealed,
            match_id=match_id,
            absent=absent,
        )
        runner = self._start(start, self._done)
        bots = [s.bot.id for s in sessions]
        self.running[runner.match_id] = bots
        self._write(self._started_row(runner, bots, assigned=match_id is not None))
        if self.spec.duplicate:
            self._join_group(runner, twin_of or runner.match_id, rotation)
        if sealed:
            self.replays.seal(runner.match_id)
            first = twin_of or runner.match_id
            seated = rotate(sessions, -rotation)
            self.twins[runner.match_id] = Twin(first, seated, seed, rotation + 1)
        return runner

    def _join_group(self, runner: MatchRunner, first: str, rotation: int) -> None:
        """Count a duplicate match in its group, here and in the store."""
        self.groups.setdefault(first, []).append(runner.match_id)
        self._group_of[runner.match_id] = first
        self._write(record_group, self.store, runner.match_id, first, rotation)
        if rotation:
            runner.log.info("duplicate_twin_started", first_match=first, rotation=rotation)

    def _started_row(
        self, runner: MatchRunner, bots: list[int], assigned: bool
    ) -> Callable[[], object]:
        """The store call that records ``runner``'s match as running: the shared scheduler's
        assignment becomes running when ``assigned``, else a new match row is written."""
        sides = runner.match.side_of
        seats = [(seat, sides[seat], bot) for seat, bot in enumerate(bots)]
        location = self.replays.location(runner.match_id)
        now = datetime.now(UTC)  # the store's write may come later, behind others
        if assigned:
            return functools.partial(
                start_assigned,
                self.store,
                runner.match_id,
                self.spec.name,
                seats,
                self.referee_id or "",
                location,
                now,
            )
        return functools.partial(
            self.store.start_match,
            runner.match_id,
            self.spec.name,
            self.spec.players,
            seats,
            referee_id=self.referee_id,
            replay_path=location,
            started_at=now,
        )

    def _done(self, runner: MatchRunner) -> None:
        """Called when a match task ends: commit its result (replay already on disk)."""
        bots = self.running.pop(runner.match_id, None)
        aborted = (
            runner.outcome is None or runner.outcome.result.reason == pb.MATCH_END_REASON_ABORTED
        )
        twin = self.twins.get(runner.match_id)
        first = self._group_of.pop(runner.match_id, None)
        if twin is not None and aborted:
            self._drop_twin(runner.match_id)
        elif twin is not None:
            twin.ready_since = time.monotonic()
        elif first is not None:  # the group's last match: its seed and replays are public
            self._end_group(first)
        finishing = runner.finishing
        if (
            bots is not None
            and runner.outcome is None
            and finishing is not None
            and not finishing.done()
        ):  # cancelled while its replay is being written
            finishing.add_done_callback(
                lambda f: self._record(
                    runner,
                    bots,
                    None if (f.cancelled() or f.exception() is not None) else f.result(),
                )
            )
        elif bots is not None:
            self._record(runner, bots, runner.outcome)
        # No drain here: the lobby's own done callback, which runs next, drains every ladder.

    def _record(self, runner: MatchRunner, bots: list[int], outcome: FinishedMatch | None) -> None:
        """Queue the store write that settles an ended match."""
        if outcome is None:  # the match task crashed
            self._write(self.store.abort_match, runner.match_id, "referee error")
        else:
            if not outcome.replay_id:
                self._write(self.store.abort_match, runner.match_id, "replay not written")
            elif outcome.result.reason == pb.MATCH_END_REASON_ABORTED:
                self._write(self.writes.aborted, runner.match_id, str(outcome.replay_path))
            else:
                self._write(
                    self.writes.rated,
                    runner.match_id,
                    outcome.result,
                    str(outcome.replay_path),
                    bots,
                    self._shared_twin(runner),
                    outcome.ended_at,
                )

    def refresh_ratings(self) -> None:
        """Reload the ordinals the scheduler pairs by (after a rating reset)."""
        self._write(self.writes.refresh_after, lambda: None)

    def _shared_twin(self, runner: MatchRunner) -> Callable[..., None] | None:
        """For a finished first half on a shared ladder: what adds its twin's assignment to
        the commit (so that its bots are never free in between), else None."""
        twin = self.twins.pop(runner.match_id, None) if self.shared else None
        if twin is None:
            return None
        seats = [(s.id, s.bot.id, s.bot.name) for s in twin.sessions]
        return functools.partial(
            add_twin,
            first=twin.first,
            ladder=self.spec.name,
            host_id=self.referee_id or "",
            seed=twin.seed,
            seats=seats,
            rotation=twin.rotation,
        )

    # -- slots the cluster's scheduler works with (shared ladders) ----------------------------

    def tickets(self) -> Counter:
        """The free slots of each waiting session that may play (not paused or retired)."""
        return Counter(
            s for s in self.waiting if s.free_slots > 0 and s.bot.id not in self.excluded
        )

    def waiting_session(self, session_id: str) -> Session | None:
        """The waiting session with this id (a ticket's), if any."""
        return next((s for s in self.waiting if s.id == session_id), None)

    def reserve(self, session: Session) -> None:
        """Hold one slot of ``session`` for an assigned match not started yet."""
        if session in self.waiting:
            self.waiting.remove(session)
        self.reserved[session] += 1

    def unreserve(self, session: Session) -> None:
        """Free a slot :meth:`reserve` held (the match started, or was handed back)."""
        self.reserved[session] -= 1
        if self.reserved[session] <= 0:
            del self.reserved[session]

    @property
    def ratings(self) -> dict[str, float]:
        """Bot name -> ordinal, as the worker thread last read them."""
        return self.writes.ratings

    def _write(self, call: Callable[..., object], *args) -> None:
        """Queue a store call behind the earlier ones (see ``queue``)."""
        self.queue.submit(call, *args)

    async def flush(self) -> None:
        """Wait for queued store calls (tests; the referee flushes its queue at stop)."""
        await self.queue.flush()
