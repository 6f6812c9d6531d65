"""A tournament served by a referee: its registered bots wait here, its games are hosted here,
and, while this referee holds the event's scheduler role, its schedule is made here.

Every poll (``cluster_poll_s``, sooner when a bot arrives or a game ends) it publishes its
waiting sessions and reads the games assigned to it (:func:`kozel.ladder.tournament_store.poll`,
which also schedules the event when this referee holds its lock). For a game it hosts it seats
the house bots in-process, starts the command bots (each joins with ``{table}``, a one-game
table id), takes its own waiting sessions, and waits for redirected bots with their pass, for
at most ``forfeits.start_timeout_s``; then the match starts, and a seat still empty starts
absent (the core forfeits it after the clock's grace time). A bot of its own assigned to another
host is sent a ``Redirect``. Results are committed after the replay is written, through the
referee's write queue; a game cut short (a stop, an abort) is given back and played again.

At start it settles the games it hosted before a crash: committed from their replay when it was
written, otherwise given back (so a killed referee's event goes on from its last finished game).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from kozel.core import messages
from kozel.ladder import tournament_store as ts
from kozel.ladder.store import Store, is_transient
from kozel.server import errors
from kozel.server.house import HouseBots
from kozel.server.ladder_runtime import StartMatch
from kozel.server.replay.archive import ReplayArchive
from kozel.server.runner import MatchRunner
from kozel.server.running import MatchStart
from kozel.server.seats import LocalLink, SeatLink
from kozel.server.session import Session
from kozel.server.store_queue import StoreQueue, cancel
from kozel.server.tournament_seats import (
    AbsentLink,
    CommandRun,
    TournamentParts,
    bot_seed,
    house_player,
    result_of,
)
from kozel.tournament.spec import TournamentSpec
from kozel.v1 import game_pb2 as pb

log = structlog.get_logger("kozel.tournament")

MIN_GAP_S = 0.05
COMMAND_CHECK_S = 0.25  # how often a game waiting for its command bots checks they still run


@dataclass
class Hosting:
    """A game this referee hosts, gathering its seats."""

    game: ts.GameAssignment
    links: list[SeatLink | None]
    sessions: list[Session | None]
    commands: list[CommandRun] = field(default_factory=list)
    command_seats: dict[int, CommandRun] = field(default_factory=dict)  # not connected yet
    gone: set[int] = field(default_factory=set)  # command seats whose process ended early
    tables: list[str] = field(default_factory=list)  # the command seats' one-game table ids
    passes: list[str] = field(default_factory=list)
    timer: asyncio.TimerHandle | None = None
    runner: MatchRunner | None = None


class TournamentRuntime:
    """One event inside a referee (see the module docstring)."""

    def __init__(
        self,
        spec: TournamentSpec,
        store: Store,
        start: StartMatch,
        replays: ReplayArchive,
        queue: StoreQueue,
        referee_id: str,
        *,
        address: str,
        poll_s: float,
        house: HouseBots,
        parts: TournamentParts,
        log_dir: Path,
        draining: Any = lambda: False,
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.rules = spec.rules()
        self.store = store
        self._start = start
        self.replays = replays
        self.queue = queue
        self.referee_id = referee_id
        self.address = address  # where this referee's command bots connect
        self.poll_s = poll_s
        self.house = house
        self.parts = parts
        self.log_dir = log_dir
        self._draining = draining
        self.lock = ts.SchedulerLock(store, spec.name)
        self.waiting: list[Session] = []  # joined sessions of the event's registered bots
        self.reserved: Counter[Session] = Counter()  # slots held for hosted, unstarted games
        self.hosting: dict[str, Hosting] = {}  # by match id, until started
        self.running: dict[str, Hosting] = {}  # by match id
        self._passes: dict[str, tuple[Hosting, int]] = {}
        self._tables: dict[str, tuple[Hosting, int]] = {}
        self._seen: set[str] = set()
        self._wake = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._polls = 0
        self._polled = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self.scheduling = False
        self.done = False
        self.ok = True

    @property
    def entrants(self) -> set[str]:
        return set(self.spec.names)

    # -- sessions ------------------------------------------------------------------------------

    def join(self, session: Session) -> None:
        """A registered bot of the event is here (a new session, a resume, a match ended)."""
        if session.bot is None or session.bot.name not in self.entrants:
            raise errors.NotFound(
                f"bot {getattr(session.bot, 'name', '?')!r} is not in tournament {self.name!r}"
            )
        if self.done:
            raise errors.Conflict(f"tournament {self.name!r} is over")
        if session not in self.waiting:
            self.waiting.append(session)
        self._claim(session)
        self._wake.set()

    def rejoin(self, session: Session) -> None:
        """A session's match ended or it resumed: it waits for its next game (if any)."""
        if not self.done and session not in self.waiting and session.stream is not None:
            self.join(session)

    def forget(self, session: Session) -> None:
        if session in self.waiting:
            self.waiting.remove(session)

    def tickets(self) -> list[ts.Ticket]:
        out = []
        for s in self.waiting:
            free = s.free_slots - self.reserved[s]
            if free > 0 and s.stream is not None:
                out.append(ts.Ticket(s.id, s.bot.id, free))
        return out

    # -- the poll loop -------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"tournament-{self.name}"
        )

    async def drain(self) -> None:
        """The referee drains: the scheduler role goes to another referee, and the games
        assigned here but not started go back (to be played elsewhere or later)."""
        await asyncio.to_thread(self.lock.release)
        for h in list(self.hosting.values()):
            self._release(h)
            for cmd in h.commands:
                self._loop.run_in_executor(None, cmd.end)
            self.queue.submit(ts.give_back, self.store, h.game.match_id)
        self._wake.set()

    async def stop(self) -> None:
        await cancel(self._task)
        self._task = None
        for h in list(self.hosting.values()):
            self._release(h)
            self.queue.submit(ts.give_back, self.store, h.game.match_id)
        await asyncio.to_thread(self.lock.release)
        with contextlib.suppress(Exception):
            await asyncio.to_thread(ts.drop_tickets, self.store, self.referee_id)

    async def _run(self) -> None:
        await self._recover()
        while True:
            await asyncio.sleep(MIN_GAP_S)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, self.poll_s - MIN_GAP_S)):
                    await self._wake.wait()
            self._wake.clear()
            try:
                polled = await asyncio.to_thread(self._poll)
            except Exception as exc:
                self.ok = False
                if is_transient(exc):
                    log.info(
                        "tournament_poll_retried", tournament=self.name, error=type(exc).__name__
                    )
                else:
                    log.exception("tournament_poll_failed", tournament=self.name)
                continue
            self.ok = True
            if polled.done and not self.done:
                self._over()
            self.scheduling, self.done = polled.scheduled, polled.done
            for match_id in polled.public:
                self.replays.unseal(match_id)
                if self.store.keeps_replays:  # every referee serves it from now on
                    self.queue.submit(self._publish, match_id)
            try:
                self._apply(polled.assignments)
            except Exception:
                log.exception("tournament_assignments_failed", tournament=self.name)
            async with self._polled:
                self._polls += 1
                self._polled.notify_all()

    def _poll(self) -> ts.Polled:
        """(In a worker thread.)"""
        draining = self._draining()
        schedule = False if draining else self.lock.hold()
        if draining and self.lock.held:
            self.lock.release()
        return ts.poll(
            self.store,
            self.referee_id,
            self.name,
            [] if draining else self.tickets(),
            schedule=schedule,
        )

    async def _recover(self) -> None:
        """Settle the games this referee hosted before it stopped or crashed (and seal again
        the replays still to be hidden)."""
        try:
            for match_id in await asyncio.to_thread(ts.sealed, self.store, self.referee_id):
                self.replays.seal(match_id)
            games = await asyncio.to_thread(ts.hosted, self.store, self.referee_id)
        except Exception:
            log.warning("tournament_recovery_failed", tournament=self.name, exc_info=True)
            return
        for name, key, match_id in games:
            if name != self.name:
                continue
            replay = await asyncio.to_thread(self._finished_replay, match_id)
            if replay is None:
                await asyncio.to_thread(ts.give_back, self.store, match_id)
                log.info("tournament_game_given_back", tournament=name, key=key, match_id=match_id)
            else:
                result = result_of(self.rules, self.spec.players, replay.result)
                location = self.replays.location(match_id)
                self.replays.seal(match_id)
                await asyncio.to_thread(
                    ts.finish, self.store, name, key, match_id, result, location
                )
                log.info("tournament_game_recovered", tournament=name, key=key, match_id=match_id)

    def _finished_replay(self, match_id: str) -> Any:
        """(Blocking.) A match's replay when it was written and the match was not aborted."""
        try:
            replay = self.replays.read(match_id)
        except Exception:  # noqa: BLE001 - unreadable or missing: the game is played again
            return None
        if replay is None or replay.result.reason == pb.MATCH_END_REASON_ABORTED:
            return None
        return replay

    def _apply(self, found: list[ts.GameAssignment]) -> None:
        self._seen &= {a.match_id for a in found} | set(self.hosting) | set(self.running)
        for a in found:
            if a.match_id in self._seen:
                continue
            self._seen.add(a.match_id)
            if a.host_id == self.referee_id:
                self._host(a)
            else:
                for seat in a.seats:
                    if seat.referee == self.referee_id and seat.kind == "ticket":
                        self._redirect(a, seat)

    def _over(self) -> None:
        """The event ended: its waiting bots are told so (their streams end)."""
        log.info("tournament_over", tournament=self.name)
        for session in list(self.waiting):
            self.forget(session)
            if session.stream is not None and not session.links:
                session.stream.close(errors.Conflict(f"tournament {self.name!r} is over"))

    def _waiting_session(self, seat: ts.SeatPlan) -> Session | None:
        """The waiting session of a seat's ticket; else another waiting session of its bot
        (the ticket was published before the bot reconnected)."""
        mine = [s for s in self.waiting if s.bot is not None and s.bot.name == seat.name]
        return next((s for s in mine if s.id == seat.ticket), mine[-1] if mine else None)

    def _redirect(self, a: ts.GameAssignment, seat: ts.SeatPlan) -> None:
        session = self._waiting_session(seat)
        if session is None or session.stream is None or not a.host_address:
            log.info("tournament_redirect_missed", match_id=a.match_id, bot=seat.name)
            return
        self.forget(session)
        session.send(messages.redirect(a.host_address, seat.ticket_pass))
        session.leave()

    # -- games hosted here ---------------------------------------------------------------------

    def _host(self, a: ts.GameAssignment) -> None:
        loop = asyncio.get_running_loop()
        n = len(a.seats)
        h = Hosting(a, [None] * n, [None] * n)
        self.hosting[a.match_id] = h
        for i, seat in enumerate(a.seats):
            if seat.kind == "house":
                bot = self.spec.bot(seat.name)
                player = house_player(
                    self.parts, self.house, bot.house, bot.budget_ms, bot_seed(a.seed, i)
                )
                h.links[i] = LocalLink(seat.name, player)
            elif seat.kind == "command":
                self._command(h, i, seat.name)
            elif seat.kind == "ticket" and not seat.ticket_pass:
                session = self._waiting_session(seat)
                if session is not None:
                    self._seat(h, i, session)
            elif seat.kind == "ticket":
                self._passes[seat.ticket_pass] = (h, i)
                h.passes.append(seat.ticket_pass)
        h.timer = loop.call_later(self.spec.forfeits.start_timeout_s, self._launch, h)
        for session in [*self.waiting, *self.reserved]:
            if h.passes:
                self._claim(session)
        self._maybe_launch(h)
        self.queue.submit(ts.start, self.store, a.match_id, self.referee_id)

    def _command(self, h: Hosting, seat: int, name: str) -> None:
        table = f"t{h.game.match_id[:20]}s{seat}"
        self._tables[table] = (h, seat)
        h.tables.append(table)
        bot = self.spec.bot(name)
        if self.parts.launch is None:
            log.error("tournament_commands_unavailable", bot=name, note="the seat starts absent")
            return
        self.log_dir.mkdir(parents=True, exist_ok=True)
        path = self.log_dir / f"{h.game.key}-seat{seat}-{name}.log"
        try:
            run = self.parts.launch(bot.command, self.address, table, name, path)
        except OSError as exc:
            log.warning("tournament_command_failed", bot=name, error=str(exc))
            h.gone.add(seat)
            return
        h.commands.append(run)
        h.command_seats[seat] = run
        if len(h.command_seats) == 1:
            self._loop.call_later(COMMAND_CHECK_S, self._check_commands, h)

    def _check_commands(self, h: Hosting) -> None:
        """A command that ended before it connected leaves its seat absent at once."""
        if h.game.match_id not in self.hosting:
            return
        for seat, run in list(h.command_seats.items()):
            if h.links[seat] is None and not run.alive():
                log.info("tournament_command_ended", match_id=h.game.match_id, seat=seat)
                h.gone.add(seat)
                del h.command_seats[seat]
        if h.command_seats:
            self._loop.call_later(COMMAND_CHECK_S, self._check_commands, h)
        self._maybe_launch(h)

    def _seat(self, h: Hosting, seat: int, session: Session) -> None:
        h.sessions[seat] = session
        link = session.new_link()
        link.name = h.game.seats[seat].name
        h.links[seat] = link
        self.reserved[session] += 1

    def _maybe_launch(self, h: Hosting) -> None:
        """Start once every seat is filled, but for those the scheduler gave up on (absent)."""
        seats = enumerate(zip(h.links, h.game.seats))
        if all(x is not None or s.kind == "absent" or i in h.gone for i, (x, s) in seats):
            self._launch(h)

    # Redirected bots and command bots arrive through the servicer.

    async def expects(self, ticket: str, bot_id: int, event: str = "") -> str | None:
        """Why a redirected Hello's pass is refused (None when this referee waits for it)."""
        if ticket not in self._passes and self._task is not None:
            self._wake.set()
            async with self._polled:
                target = self._polls + 2
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(5.0):
                        await self._polled.wait_for(
                            lambda: self._polls >= target or ticket in self._passes
                        )
        entry = self._passes.get(ticket)
        if entry is None:
            return "unknown, used or expired redirect_ticket"
        h, seat = entry
        bot = h.game.seats[seat].name
        ids = {s.bot.id: s.bot.name for s in self.waiting if s.bot is not None}
        if ids.get(bot_id, bot) != bot:
            return "this redirect_ticket was given to another bot"
        return None

    def arrive(self, ticket: str, session: Session) -> None:
        """A redirected bot came with its pass. The pass may be spent meanwhile (its game
        started, or took this bot's other session here): the bot then waits as if it joined."""
        entry = self._passes.pop(ticket, None)
        if entry is None:
            self.join(session)
            return
        h, seat = entry
        if session.bot is None or session.bot.name != h.game.seats[seat].name:
            return
        self.forget(session)
        self._seat(h, seat, session)
        self._maybe_launch(h)
        self._claim(session)

    def _claim(self, session: Session) -> None:
        """Seat a bot that is here in the games here that wait for it by pass, while it has
        slots free: one Redirect carries one pass, the games of a pairing are often played
        at once, and a bot redirected here stays (its own referee cannot redirect it again)."""
        name = session.bot.name if session.bot is not None else None
        for ticket, (h, seat) in list(self._passes.items()):
            if session.stream is None or session.free_slots - self.reserved[session] <= 0:
                return
            if h.game.seats[seat].name == name and h.links[seat] is None:
                del self._passes[ticket]
                self._seat(h, seat, session)
                self._maybe_launch(h)

    def expects_table(self, table_id: str) -> bool:
        return table_id in self._tables

    def join_table(self, table_id: str, session: Session) -> None:
        """A command bot joined with its one-game table id."""
        h, seat = self._tables.pop(table_id)
        if h.runner is not None or h.links[seat] is not None:
            raise errors.Conflict(f"table {table_id!r} is taken")
        h.command_seats.pop(seat, None)
        self._seat(h, seat, session)
        self._maybe_launch(h)

    def _release(self, h: Hosting) -> None:
        self.hosting.pop(h.game.match_id, None)
        if h.timer is not None:
            h.timer.cancel()
        for p in h.passes:
            self._passes.pop(p, None)
        for t in h.tables:
            self._tables.pop(t, None)
        for s in h.sessions:
            if s is not None:
                self.reserved[s] -= 1
                if self.reserved[s] <= 0:
                    del self.reserved[s]

    def _launch(self, h: Hosting) -> None:
        """Start the game with whoever is here; empty seats start absent."""
        if h.game.match_id not in self.hosting:
            return
        self._release(h)
        now = asyncio.get_running_loop().time()
        absent: dict[int, float] = {}
        links: list[SeatLink] = []
        for i, here in enumerate(h.links):
            if here is None:  # an empty seat starts absent: its grace time runs from now
                name = h.game.seats[i].name
                absent[i] = now
                log.info("tournament_seat_absent", match_id=h.game.match_id, bot=name)
            links.append(here if here is not None else AbsentLink(h.game.seats[i].name))
        self.replays.seal(h.game.match_id)  # its seed and decks: hidden until its seed is over
        start = MatchStart(
            links,
            self.rules,
            self.spec.players,
            self.spec.time_control,
            h.game.seed,
            f"tournament:{self.name}:{h.game.key}",
            # Neither deal ends nor the match end tell the seed or the decks: the same seed is
            # being played at other seats (its replay tells them once its seed is over).
            reveal_seed=False,
            match_id=h.game.match_id,
            absent=absent,
        )
        h.runner = self._start(start, functools.partial(self._done, h))
        self.running[h.game.match_id] = h

    def _done(self, h: Hosting, runner: MatchRunner) -> None:
        self.running.pop(h.game.match_id, None)
        for cmd in h.commands:
            self._loop.run_in_executor(None, cmd.end)
        finishing = runner.finishing
        if runner.outcome is None and finishing is not None and not finishing.done():
            finishing.add_done_callback(lambda f: self._record(h, runner))
        else:
            self._record(h, runner)
        self._wake.set()

    def _record(self, h: Hosting, runner: MatchRunner) -> None:
        out = runner.outcome
        g = h.game
        if out is None or not out.replay_id or out.result.reason == pb.MATCH_END_REASON_ABORTED:
            self.queue.submit(ts.give_back, self.store, g.match_id)
            log.info("tournament_game_given_back", tournament=self.name, key=g.key)
            return
        result = result_of(self.rules, self.spec.players, out.result)
        self.queue.submit(self._finish, g, result, str(out.replay_path))

    def _finish(self, g: ts.GameAssignment, result: dict[str, Any], location: str) -> None:
        """(In the write queue's thread.)"""
        ts.finish(self.store, self.name, g.key, g.match_id, result, location)
        self._loop.call_soon_threadsafe(self._wake.set)  # the next round may be paired now

    def _publish(self, match_id: str) -> None:
        """(In the write queue's thread.) Keep an unsealed replay in a store that keeps them."""
        data = self.replays.read_bytes(match_id)
        if data is not None:
            self.store.keep_replay(match_id, data)

    def status(self) -> dict[str, object]:
        return {
            "waiting": len(self.waiting),
            "hosting": len(self.hosting),
            "running": len(self.running),
            "scheduling": self.scheduling,
            "done": self.done,
        }
