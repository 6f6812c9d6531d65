"""Where matches come from: named tables that bots join (:mod:`kozel.server.tables`), a queue
per ruleset and player count (:mod:`kozel.server.queues`) and ladders
(:mod:`kozel.server.ladder_runtime`); the lobby admits their matches under the adaptive match
cap (:mod:`kozel.server.match_cap`) and runs them (:mod:`kozel.server.running`)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Container
from typing import Protocol

import structlog

from kozel.engine.rules import Ruleset
from kozel.ladder.config import LadderSpec
from kozel.ladder.store import Store
from kozel.server import errors, metrics
from kozel.server.config import ServerConfig
from kozel.server.house import HouseBots
from kozel.server.ladder_runtime import LadderRuntime
from kozel.server.match_cap import MatchCap
from kozel.server.people import Lender
from kozel.server.queues import Queues
from kozel.server.replay.archive import FolderArchive, ReplayArchive, ReplaySealed
from kozel.server.runner import FinishedMatch, MatchRunner
from kozel.server.running import MatchStart, OnDone, RunningMatches
from kozel.server.session import Session
from kozel.server.store_queue import StoreQueue
from kozel.server.tables import LendSlot, Table, TableRequest, Tables
from kozel.server.tournament_runtime import TournamentRuntime

log = structlog.get_logger("kozel.lobby")

REPLAY_ID = re.compile(r"[0-9a-f]{8,64}")  # matched whole (fullmatch)


class LadderGate(Protocol):
    """Whether a ladder's rated matches may start here: the store answers and this referee
    hosts the ladder (not a standby waiting for another referee to let go of it)."""

    def rated_ok(self, ladder: str) -> bool: ...

    def standby_reason(self, ladder: str) -> str: ...


class OpenGate:
    """The gate of a referee without a shared store: always open."""

    def rated_ok(self, ladder: str) -> bool:
        return True

    def standby_reason(self, ladder: str) -> str:
        return ""


class Lobby:
    """Tables, queues, ladders and the running matches of one referee."""

    def __init__(
        self,
        config: ServerConfig,
        house_bots: HouseBots | None = None,
        replays: ReplayArchive | None = None,
        gate: LadderGate | None = None,
    ) -> None:
        self.config = config
        # Where matches' replays are kept, and which are sealed (duplicate first halves).
        self.replays: ReplayArchive = (
            replays
            if replays is not None
            else FolderArchive(config.replay_dir, config.replay_limits)
        )
        self.running = RunningMatches(config, self.replays, after=self._match_done)
        self.cap = MatchCap(
            config.max_running_matches,
            config.max_match_starts_per_s,
            config.admission_lag_ms / 1000,
            config.admission_busy,
        )
        self.tables = Tables(config, house_bots or {}, self._start_table, self.admits)
        self.queues = Queues(
            config.clock,
            self._start_queued,
            self.admits,
            self.running.by_unit,
            config.max_queue_matches_per_peer,
        )
        self.ladders: dict[str, LadderRuntime] = {}
        # Ladder bots' slots lent to person tables (kozel.server.people).
        self.lender = Lender(self.ladders, config.max_people_waiting_per_bot)
        # Tournaments served here (kozel.server.tournament_runtime): joined like ladders, by name.
        self.tournaments: dict[str, TournamentRuntime] = {}
        self.store: Store | None = None  # the ladders' store (one per referee), if any
        self.gate: LadderGate = gate or OpenGate()
        self.draining = False

    @property
    def matches(self) -> dict[str, asyncio.Task[FinishedMatch]]:
        """The running matches' tasks, by match id."""
        return self.running.tasks

    @property
    def runners(self) -> dict[str, MatchRunner]:
        """The running matches, by match id."""
        return self.running.runners

    @property
    def house_bots(self) -> HouseBots:
        """The in-process bots tables (and tournaments) may seat, by name."""
        return self.tables.house_bots

    @property
    def match_cap(self) -> int:
        return self.cap.cap

    @property
    def overloaded(self) -> bool:
        return self.cap.overloaded

    # -- ladders -------------------------------------------------------------------------------

    def serve_shared(self, gate: LadderGate) -> None:
        """Ladders are served from a shared store, which says when they may play here."""
        self.gate = gate

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
            self.start,
            self.replays,
            admit=lambda: self.admits() and self.gate.rated_ok(spec.name),
            queue=queue,
            referee_id=referee_id,
            shared=shared,
        )
        ladder.on_free = self.lender.offer
        self.ladders[spec.name] = ladder
        return ladder

    def join_ladder(self, name: str, session: Session) -> None:
        if name in self.tournaments:
            session.enter_ladder(name)
            self.tournaments[name].join(session)
            return
        ladder = self.ladders.get(name)
        if ladder is None:
            raise errors.NotFound(
                f"no ladder {name!r}; ladders: {', '.join(sorted(self.ladders)) or 'none'}"
            )
        if why := self.gate.standby_reason(name):
            raise errors.Unavailable(why)
        session.enter_ladder(name)
        ladder.join(session)

    # -- tables and queues ---------------------------------------------------------------------

    def check_length(self, rules: Ruleset) -> None:
        """Refuse a ruleset whose matches would outlast ``max_match_deals``."""
        cap = self.config.max_match_deals
        if rules.fixed_deals is not None and rules.fixed_deals > cap:
            raise errors.Invalid(
                f"fixed_deals {rules.fixed_deals} is above this referee's "
                f"limit of {cap} deals a match (limits.max_match_deals)"
            )

    def create_table(self, req: TableRequest, lend: LendSlot | None = None) -> Table:
        """Open a table (raises :class:`errors.Refused` saying why not); ``lend`` seats its
        ladder bots (:func:`kozel.server.people.lend`)."""
        req.rules.check_players(req.players)
        self.check_length(req.rules)
        if self.draining:
            raise errors.Unavailable("the referee is draining before it stops: it opens no tables")
        return self.tables.create(req, lend)

    def has_table(self, table_id: str) -> bool:
        """Whether a bot may join ``table_id`` here (a table, or a tournament game's seat)."""
        return table_id in self.tables or any(
            t.expects_table(table_id) for t in self.tournaments.values()
        )

    @property
    def joinable_tables(self) -> Container[str]:
        """The table ids :meth:`has_table` accepts, as a container (for admission)."""
        return _TableIds(self)

    def join_table(self, table_id: str, session: Session) -> None:
        for tournament in self.tournaments.values():
            if tournament.expects_table(table_id):
                tournament.join_table(table_id, session)
                return
        self.tables.join(table_id, session)

    async def wait_table(self, table_id: str) -> FinishedMatch:
        return await self.tables.wait(table_id)

    def join_queue(self, rules: Ruleset, players: int, session: Session) -> None:
        """Queue every free slot of ``session`` (see :meth:`Queues.join`)."""
        rules.check_players(players)
        self.check_length(rules)
        self.queues.join(rules, players, session)

    def requeue(self, session: Session) -> None:
        """Queue the free slots of a session again (after a match, or on resume)."""
        if session.ladder in self.tournaments:
            self.tournaments[session.ladder].rejoin(session)
        elif session.ladder is not None:
            self.ladders[session.ladder].join(session)
        else:
            self.queues.requeue(session)

    def forget(self, session: Session) -> None:
        """Take a session that cannot play now out of every queue and unstarted table."""
        if session.ladder in self.tournaments:
            self.tournaments[session.ladder].forget(session)
        elif session.ladder is not None:
            self.ladders[session.ladder].forget(session)
        self.queues.forget(session)
        self.tables.forget(session)

    # -- matches -------------------------------------------------------------------------------

    def start(self, start: MatchStart, on_done: OnDone | None = None) -> MatchRunner:
        """Run a queue or ladder match, spending the start budget."""
        self.cap.spend()
        return self.running.start(start, on_done)

    def start_game(self, start: MatchStart, on_done: OnDone | None = None) -> MatchRunner:
        """Run a tournament game, as a table's: when its seats are filled, with no budget."""
        return self.running.start(start, on_done)

    def _start_queued(self, start: MatchStart) -> MatchRunner:
        return self.start(start)

    def _start_table(self, start: MatchStart, on_done: OnDone | None, budget: bool) -> MatchRunner:
        """A table's match: on request, except that one with house bots spends the budget."""
        if budget:
            self.cap.spend()
        return self.running.start(start, on_done)

    def _match_done(self, match_id: str, task: asyncio.Task[FinishedMatch]) -> None:
        if self.admits():  # a slot under the cap freed up: waiting bots may start
            self.admit_waiting()

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
        """Whether a queue or ladder match may start now: not draining, and the match cap
        (:class:`MatchCap`) allows. (Tables are started on request.) Waiting bots keep their
        place: no clock runs for them."""
        return not self.draining and self.cap.admits(len(self.running))

    def observe_lag(self, lag_s: float, busy: float = 0.0, interval_s: float = 0.25) -> None:
        """One event-loop sample (see :meth:`MatchCap.observe`); starts what waits if the
        budget refilled, the cap grew or the lag passed."""
        cap = self.cap
        refill = cap.starts_left < 1
        switched = cap.observe(lag_s, busy, interval_s, len(self.running))
        if not cap.lag_limit_s:
            if refill:
                self.admit_waiting()
            return
        metrics.ADMISSION_CAP.set(cap.cap)
        if switched:
            metrics.ADMISSION_PAUSED.set(int(cap.overloaded))
            # INFO: pauses come and go under load (kozel_admission_paused shows them, and the
            # KozelAdmissionPausedLong alert fires when one lasts).
            log.info(
                "admission_paused" if cap.overloaded else "admission_resumed",
                loop_lag_ms=round(cap.lag_s * 1000, 1),
                running=len(self.running),
            )
        if self.admits():
            self.admit_waiting()

    def admit_waiting(self) -> None:
        """Start what waiting queue and ladder bots allow now."""
        self.queues.drain()
        for ladder in self.ladders.values():
            ladder.drain()
        # Then tables with house bots: one client can fill many, so they come last.
        self.tables.start_waiting()

    # -- drain ---------------------------------------------------------------------------------

    def start_drain(self) -> None:
        """Start no new matches (tables, queues, ladders: :meth:`admits` says no from now on);
        running ones go on. A ladder's own state (started or stopped) is not touched: on a
        shared ladder the waiting bots are still published, so the scheduler can move them to
        a referee that plays on."""
        self.draining = True

    async def wait_idle(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for running matches to end; returns how many still run."""
        return await self.running.wait_idle(timeout)

    async def shutdown(self) -> None:
        """Abort every running match (each writes an aborted replay) and wait for them."""
        await self.running.shutdown()


class _TableIds:
    """The ids of the tables a bot may join in a lobby, as a container."""

    def __init__(self, lobby: Lobby) -> None:
        self._lobby = lobby

    def __contains__(self, table_id: object) -> bool:
        return isinstance(table_id, str) and self._lobby.has_table(table_id)
