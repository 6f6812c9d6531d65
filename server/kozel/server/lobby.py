"""Where matches come from: named tables that bots join, and a simple queue per ruleset and
player count (the ladder replaces the queue with its scheduler)."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import structlog

from kozel.core.clock import Clock
from kozel.engine.rules import Ruleset
from kozel.engine.shuffle import new_seed
from kozel.ladder.config import LadderSpec
from kozel.ladder.store import Store
from kozel.server import errors, metrics
from kozel.server.config import ServerConfig
from kozel.server.house import HouseBots
from kozel.server.ladder_runtime import LadderRuntime
from kozel.server.replay.archive import FolderArchive, ReplayArchive, ReplaySealed
from kozel.server.runner import FinishedMatch, MatchRunner
from kozel.server.seats import LocalLink, SeatLink
from kozel.server.session import Session
from kozel.server.spectators import SpectatorCount, SpectatorHub
from kozel.server.store_queue import StoreQueue
from kozel.server.tournament_runtime import TournamentRuntime

log = structlog.get_logger("kozel.lobby")

REPLAY_ID = re.compile(r"[0-9a-f]{8,64}")  # use fullmatch
CAP_START = 32  # adaptive match cap: where it starts ...
CAP_MIN = 4  # ... and how low it may go
BUSY_ROOM = 0.9  # the cap grows only while the loop is less busy than this share of its target


@dataclass(slots=True)
class Table:
    """A named table: house bots sit at their seats, remote bots fill the others in join
    order; the match starts when all are taken."""

    id: str
    rules: Ruleset
    players: int
    clock: Clock
    seed: bytes
    links: list[SeatLink] = field(default_factory=list)  # remote seats, in join order
    house_at: dict[int, SeatLink] = field(default_factory=dict)  # in-process bots by seat
    runner: MatchRunner | None = None
    done: asyncio.Future[FinishedMatch] | None = None
    owner: str = ""  # the address that created it (tables per address are capped)

    @property
    def house(self) -> bool:
        """Whether house bots sit at it (then its match needs admission, like queue ones)."""
        return bool(self.house_at)

    @property
    def joined(self) -> bool:
        """Whether a remote bot has taken a seat."""
        return bool(self.links)  # remote seats only: house bots are in house_at


class Lobby:
    """Tables, queues and the running matches of one referee."""

    def __init__(
        self,
        config: ServerConfig,
        house_bots: HouseBots | None = None,
        replays: ReplayArchive | None = None,
    ) -> None:
        self.config = config
        self.house_bots = house_bots or {}
        self.tables: dict[str, Table] = {}
        self.queues: dict[str, deque[Session]] = {}
        self._queue_rules: dict[str, tuple[Ruleset, int]] = {}
        self.matches: dict[str, asyncio.Task[FinishedMatch]] = {}
        self.runners: dict[str, MatchRunner] = {}  # running matches (details, spectators)
        self.ladders: dict[str, LadderRuntime] = {}
        # Tournaments served here (kozel.server.tournament_runtime): joined like ladders, by name.
        self.tournaments: dict[str, TournamentRuntime] = {}
        self.store: Store | None = None  # the ladders' store (one per referee), if any
        # Whether a ladder's rated matches may start: the store answers and this referee hosts
        # the ladder (not a standby waiting for another referee to let go of it).
        self.rated_ok: Callable[[str], bool] = lambda ladder: True
        self.standby_reason: Callable[[str], str] = lambda ladder: ""
        self.draining = False
        self.overloaded = False  # the event loop lags: queue and ladder matches wait
        self._lag = 0.0  # smoothed event-loop lag, seconds
        self._busy = 0.0  # smoothed share of the time the event loop's thread is on the CPU
        self._starts_left = config.max_match_starts_per_s  # queue/ladder starts allowed now
        # How many matches may run: with lag-based admission it starts low, grows by one per
        # lag sample while it is the binding limit and the loop keeps time with room to spare,
        # drops to 90 % of the running matches when the loop starts to lag, and to the share
        # of them that would keep the loop admission_busy busy when it is busier (additive
        # increase, multiplicative decrease); never above max_running_matches.
        self.match_cap = (
            min(config.max_running_matches, CAP_START)
            if config.admission_lag_ms
            else config.max_running_matches
        )
        # Where matches' replays are kept, and which are sealed (duplicate first halves).
        self.replays: ReplayArchive = (
            replays if replays is not None else FolderArchive(config.replay_dir)
        )
        self._waiting_tables: deque[Table] = deque()  # full tables with house bots, not admitted
        self.spectating = SpectatorCount(config.max_spectators)  # WatchMatch streams in all

    def add_ladder(
        self,
        spec: LadderSpec,
        store: Store,
        queue: StoreQueue | None = None,
        referee_id: str | None = None,
        shared: bool = False,
    ) -> LadderRuntime:
        """Serve a ladder from its definition; its results go to ``store`` through ``queue``."""
        self.store = store
        ladder = LadderRuntime(
            spec,
            store,
            self._start,
            self.replays,
            admit=lambda: self.admits() and self.rated_ok(spec.name),
            queue=queue,
            referee_id=referee_id,
            shared=shared,
        )
        self.ladders[spec.name] = ladder
        return ladder

    def join_ladder(self, name: str, session: Session) -> None:
        if name in self.tournaments:
            session.ladder = name
            self.tournaments[name].join(session)
            return
        ladder = self.ladders.get(name)
        if ladder is None:
            raise errors.NotFound(
                f"no ladder {name!r}; ladders: {', '.join(sorted(self.ladders)) or 'none'}"
            )
        why = self.standby_reason(name)
        if why:
            raise errors.Unavailable(why)
        session.ladder = name
        ladder.join(session)

    # -- tables --------------------------------------------------------------------------------

    def check_length(self, rules: Ruleset) -> None:
        """Refuse a ruleset whose matches would outlast ``max_match_deals``."""
        cap = self.config.max_match_deals
        if rules.fixed_deals is not None and rules.fixed_deals > cap:
            raise errors.Invalid(
                f"fixed_deals {rules.fixed_deals} is above this referee's "
                f"limit of {cap} deals a match (limits.max_match_deals)"
            )

    def create_table(
        self,
        table_id: str,
        rules: Ruleset,
        players: int,
        clock: Clock,
        seed: bytes | None = None,
        house: list[str] | None = None,
        owner: str = "",
    ) -> Table:
        rules.check_players(players)
        self.check_length(rules)
        if self.draining:
            raise errors.Unavailable("the referee is draining before it stops: it opens no tables")
        open_tables = [t for t in self.tables.values() if t.done is None or not t.done.done()]
        if len(open_tables) >= self.config.max_tables:
            raise errors.Exhausted(f"the referee already has {self.config.max_tables} open tables")
        cap = self.config.max_tables_per_peer
        if owner and sum(1 for t in open_tables if t.owner == owner) >= cap:
            raise errors.Exhausted(
                f"your address already has {cap} open tables "
                "(limits.max_tables_per_peer); play or let them expire first"
            )
        table_id = table_id or uuid.uuid4().hex[:10]
        if table_id in self.tables:
            raise errors.AlreadyExists(f"table {table_id!r} exists")
        if seed is not None and len(seed) != 32:
            raise errors.Invalid("a seed is exactly 32 bytes")
        house = list(house or [])  # by seat; "" leaves a seat to a remote bot
        unknown = [h for h in house if h and h not in self.house_bots]
        if unknown or len(house) > players:
            raise errors.Invalid(
                f"house bots must be at most {players} of "
                f'{sorted(self.house_bots)} ("" for a remote seat); '
                f"got {house}"
            )
        table = Table(table_id, rules, players, clock, seed or new_seed(), owner=owner)
        table.done = asyncio.get_running_loop().create_future()
        self.tables[table_id] = table
        for i, name in enumerate(house):
            if name:
                table.house_at[i] = LocalLink(f"{name}-{i}", self.house_bots[name]())
        self._maybe_start_table(table)
        loop = asyncio.get_running_loop()
        loop.call_later(self.config.table_linger_s, self._expire, table)
        if len(table.house_at) < players:  # nobody may come: an empty table goes sooner
            loop.call_later(self.config.empty_table_linger_s, self._expire, table, True)
        return table

    def _expire(self, table: Table, if_empty: bool = False) -> None:
        """A table that never filled (or, ``if_empty``, that no remote bot joined) is closed;
        its waiting bots are told why."""
        if table.runner is not None or self.tables.get(table.id) is not table:
            return
        if if_empty and table.joined:
            return
        del self.tables[table.id]
        if table in self._waiting_tables:
            self._waiting_tables.remove(table)
        for link in table.links:
            session = getattr(link, "session", None)
            if session is not None and session.stream is not None:
                session.stream.close(
                    errors.Expired(
                        f"table {table.id!r} did not fill within {self.config.table_linger_s:g} s"
                    )
                )
        if table.done is not None and not table.done.done():
            table.done.set_exception(errors.Expired(f"table {table.id!r} never filled"))
            table.done.exception()  # retrieved: nobody may be waiting

    def has_table(self, table_id: str) -> bool:
        """Whether a bot may join ``table_id`` here (a table, or a tournament game's seat)."""
        return table_id in self.tables or any(
            t.expects_table(table_id) for t in self.tournaments.values()
        )

    def join_table(self, table_id: str, session: Session) -> None:
        for tournament in self.tournaments.values():
            if tournament.expects_table(table_id):
                tournament.join_table(table_id, session)
                return
        table = self.tables.get(table_id)
        if table is None:
            raise errors.NotFound(f"no table {table_id!r}")
        if table.runner is not None or len(table.links) + len(table.house_at) >= table.players:
            raise errors.Conflict(f"table {table_id!r} is full")
        table.links.append(session.new_link())
        self._maybe_start_table(table)

    def _maybe_start_table(self, table: Table) -> None:
        if len(table.links) + len(table.house_at) < table.players or table.runner is not None:
            return
        if table.house and not self.admits():
            # One client alone can fill a table with house bots: such matches wait for
            # admission like queue matches (its remote bots wait too; no clock runs).
            if table not in self._waiting_tables:
                self._waiting_tables.append(table)
            return
        remote = iter(table.links)
        links = [
            table.house_at[s] if s in table.house_at else next(remote) for s in range(table.players)
        ]
        runner = self._start(
            links, table.rules, table.players, table.clock, table.seed, table.id, budget=table.house
        )
        table.runner = runner
        self.matches[runner.match_id].add_done_callback(lambda _: self._table_done(table))

    def _table_done(self, table: Table) -> None:
        _settle(table)
        # Keep a finished table for WaitTable a while, then free its place.
        asyncio.get_running_loop().call_later(
            self.config.table_linger_s, self.tables.pop, table.id, None
        )

    async def wait_table(self, table_id: str) -> FinishedMatch:
        table = self.tables.get(table_id)
        if table is None or table.done is None:
            raise errors.NotFound(f"no table {table_id!r}")
        return await asyncio.shield(table.done)

    # -- queue ---------------------------------------------------------------------------------

    def join_queue(self, rules: Ruleset, players: int, session: Session) -> None:
        """Queue every free slot of ``session`` for matches of ``rules`` at ``players`` seats;
        it is queued again whenever a slot frees up, until it leaves."""
        rules.check_players(players)
        self.check_length(rules)
        key = json.dumps([rules.name, players, rules.to_options()], sort_keys=True)
        self._queue_rules[key] = (rules, players)
        session.queue_key = key
        self.requeue(session)

    def requeue(self, session: Session) -> None:
        """Queue the free slots of a session that queued (after a match, or on resume)."""
        if session.ladder in self.tournaments:
            self.tournaments[session.ladder].rejoin(session)
            return
        if session.ladder is not None:
            self.ladders[session.ladder].join(session)
            return
        key = session.queue_key
        if key is None:
            return
        queue = self.queues.setdefault(key, deque())
        queue.extend([session] * (session.free_slots - queue.count(session)))
        self._drain_queue(key)

    def forget(self, session: Session) -> None:
        """Take a session that cannot play now out of every queue and unstarted table."""
        if session.ladder in self.tournaments:
            self.tournaments[session.ladder].forget(session)
        elif session.ladder is not None:
            self.ladders[session.ladder].forget(session)
        for key, queue in list(self.queues.items()):
            while session in queue:
                queue.remove(session)
            if not queue:
                del self.queues[key]
        for table in self.tables.values():
            if table.runner is None:
                table.links = [
                    link for link in table.links if getattr(link, "session", None) is not session
                ]

    def _drain_queue(self, key: str) -> None:
        rules, players = self._queue_rules[key]
        queue = self.queues[key]
        while self.admits():
            picked: list[Session] = []
            for s in list(queue):
                if s not in picked and s.free_slots > 0:
                    picked.append(s)
                if len(picked) == players:
                    break
            if len(picked) < players:
                return
            for s in picked:
                queue.remove(s)
            self._start(
                [s.new_link() for s in picked], rules, players, self.config.clock, new_seed(), ""
            )

    # -- matches -------------------------------------------------------------------------------

    def _start(
        self,
        links: Sequence[SeatLink],
        rules: Ruleset,
        players: int,
        clock: Clock,
        seed: bytes,
        table_id: str,
        on_done: Callable[[MatchRunner], None] | None = None,
        ladder: str = "",
        reveal_seed: bool = True,
        budget: bool = False,
        match_id: str | None = None,
        absent: dict[int, float] | None = None,
    ) -> MatchRunner:
        if not table_id or budget:  # queue, ladder and house-bot matches spend the budget
            self._starts_left -= 1
        runner = MatchRunner(
            rules=rules,
            players=players,
            seed=seed,
            clock=clock,
            links=links,
            replays=self.replays,
            table_id=table_id,
            ladder=ladder,
            reveal_seed=reveal_seed,
            max_deals=self.config.max_match_deals,
            match_id=match_id,
            absent=absent,
        )
        runner.spectators = SpectatorHub(
            runner,
            delay_s=self.config.spectator_delay_s,
            max_spectators=self.config.max_spectators_per_match,
            total=self.spectating,
        )
        self.runners[runner.match_id] = runner
        for link in links:
            session = getattr(link, "session", None)
            if session is not None:
                session.register(link)
        task = asyncio.get_running_loop().create_task(runner.run(), name=runner.match_id)
        self.matches[runner.match_id] = task
        if on_done is not None:  # first: its owner settles the match (a ladder frees its slot)
            task.add_done_callback(lambda _: on_done(runner))
        # then the lobby lets waiting bots in, every queue and ladder at once
        task.add_done_callback(lambda t: self._match_done(runner.match_id, t))
        runner.log.info(
            "match_started",
            rules=rules.name,
            players=players,
            table=table_id,
            seats=[link.name for link in links],
        )
        return runner

    def _match_done(self, match_id: str, task: asyncio.Task[FinishedMatch]) -> None:
        self.matches.pop(match_id, None)
        self.runners.pop(match_id, None)
        if self.admits():  # a slot under the cap freed up: waiting bots may start
            self.admit_waiting()
        if not task.cancelled() and task.exception() is not None:
            log.error("match_crashed", match_id=match_id, exc_info=task.exception())

    async def replay_bytes(self, replay_id: str) -> bytes:
        """A finished match's replay file, unless it is unknown or sealed (a duplicate first
        half whose twin is still to be played: the file holds the seed of the twin's decks)."""
        if not REPLAY_ID.fullmatch(replay_id):
            raise errors.Invalid("a replay id is 8 to 64 lowercase hex digits")
        try:
            data = await asyncio.to_thread(self.replays.public_bytes, replay_id)
        except ReplaySealed:
            raise errors.Conflict(
                f"replay {replay_id} is sealed until its duplicate twin match has been played"
            ) from None
        if data is None:
            raise errors.NotFound(f"no replay {replay_id}")
        return data

    # -- admission -----------------------------------------------------------------------------

    def admits(self) -> bool:
        """Whether a queue or ladder match may start now: not draining, under
        ``max_running_matches``, and the event loop keeping time. (Tables are started on
        request.) Waiting bots keep their place: no clock runs for them."""
        return (
            not self.draining
            and not self.overloaded
            and self._starts_left >= 1
            and len(self.matches) < self.match_cap
        )

    def observe_lag(self, lag_s: float, busy: float = 0.0, interval_s: float = 0.25) -> None:
        """One event-loop sample (taken every ``interval_s``: how late it ran, and the share
        of the time its thread was busy): refill the match-start budget, pause or resume
        admission on the smoothed lag, and move the match cap."""
        rate = self.config.max_match_starts_per_s
        refill = self._starts_left < 1
        self._starts_left = min(self._starts_left + rate * interval_s, max(rate, 1.0))
        limit = self.config.admission_lag_ms / 1000
        if not limit:
            if refill:
                self.admit_waiting()
            return
        self._lag = 0.7 * self._lag + 0.3 * lag_s
        self._busy = 0.7 * self._busy + 0.3 * busy
        target = self.config.admission_busy
        was, self.overloaded = self.overloaded, self._lag > limit
        running = len(self.matches)
        if self.overloaded and not was:  # once per episode; meanwhile nothing starts
            self.match_cap = max(CAP_MIN, int(min(self.match_cap, running) * 0.9))
        elif target and self._busy > target:
            # Matches end slowly, so this only stops new ones until enough have ended; it is
            # recomputed from what runs, so a steady overload does not ratchet it down to zero.
            fit = int(running * target / self._busy)
            self.match_cap = max(CAP_MIN, min(self.match_cap, fit))
        elif (
            not self.overloaded
            and running >= self.match_cap - 1
            and (not target or self._busy < target * BUSY_ROOM)
        ):
            self.match_cap = min(self.match_cap + 1, self.config.max_running_matches)
        metrics.ADMISSION_CAP.set(self.match_cap)
        if was != self.overloaded:
            metrics.ADMISSION_PAUSED.set(int(self.overloaded))
            # INFO: pauses come and go under load (kozel_admission_paused shows them, and the
            # KozelAdmissionPausedLong alert fires when one lasts).
            log.info(
                "admission_paused" if self.overloaded else "admission_resumed",
                loop_lag_ms=round(self._lag * 1000, 1),
                running=len(self.matches),
            )
        if self.admits():  # the budget refilled, the cap grew or the lag passed
            self.admit_waiting()

    def admit_waiting(self) -> None:
        """Start what waiting queue and ladder bots allow now."""
        for key in list(self.queues):
            self._drain_queue(key)
        for ladder in self.ladders.values():
            ladder.drain()
        # Then tables with house bots: one client can fill many, so they come last.
        while self._waiting_tables and self.admits():
            self._maybe_start_table(self._waiting_tables.popleft())

    def start_drain(self) -> None:
        """Start no new matches (tables, queues, ladders: :meth:`admits` says no from now on);
        running ones go on. A ladder's own state (started or stopped) is not touched: on a
        shared ladder the waiting bots are still published, so the scheduler can move them to
        a referee that plays on."""
        self.draining = True

    async def wait_idle(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for running matches to end; returns how many still run."""
        tasks = list(self.matches.values())
        if tasks and timeout > 0:
            await asyncio.wait(tasks, timeout=timeout)
        return len(self.matches)

    async def shutdown(self) -> None:
        """Abort every running match (each writes an aborted replay) and wait for them."""
        tasks = list(self.matches.values())
        runners = list(self.runners.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # A match cancelled again while it wrote its replay still finishes that write (it is
        # shielded); wait for it, so its result is settled before the store closes.
        ending = [r.finishing for r in runners if r.finishing is not None]
        await asyncio.gather(*ending, return_exceptions=True)
        await asyncio.sleep(0)  # their done callbacks queue the store writes


def _settle(table: Table) -> None:
    fut = table.done
    if fut is None or fut.done():
        return
    outcome = table.runner.outcome if table.runner else None
    if outcome is not None:  # finished, or aborted with its replay written
        fut.set_result(outcome)
    else:
        fut.set_exception(errors.Aborted("the match ended without a result"))
        fut.exception()  # retrieved: nobody may be waiting
