"""A referee's part in ladders it shares with other referees (``referee.cluster``).

Every ``cluster_poll_s`` it publishes its status (load, admission, draining) and its waiting
ladder sessions as tickets, and reads the assignments that involve it and every ladder's state
(:func:`kozel.ladder.matchmaking.poll`). On PostgreSQL it holds its presence lock and tries the
scheduler lock of each shared ladder first (:mod:`kozel.ladder.presence`); the holder runs that
ladder's scheduler in the same poll. For an assignment it hosts, it waits for the assigned bots:
its own sessions at once, the others as they arrive with their redirect pass
(``Hello.redirect_ticket``), for at most the ladder's grace time. A match starts only with every
bot here; otherwise, or while this referee drains, the assignment is handed back unstarted and
its bots wait again (no seat is ever forfeited for a move it did not make). For a seat of its own
hosted elsewhere, it sends the session a ``Redirect`` and ends the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog

from kozel.core import messages
from kozel.ladder import matchmaking
from kozel.ladder.matchmaking import AssignedSeat, Assignment, Polled, Ticket
from kozel.ladder.plan import Policy
from kozel.ladder.presence import Presence
from kozel.ladder.store import Store, is_transient
from kozel.server import metrics
from kozel.server.ladder_runtime import LadderRuntime
from kozel.server.lobby import Lobby
from kozel.server.session import Session
from kozel.server.store_queue import cancel

log = structlog.get_logger("kozel.cluster")

MIN_GAP_S = 0.05  # the shortest time between two polls of one referee
ARRIVAL_WAIT_S = 5.0  # at most this long for the assignment of a pass not known yet


@dataclass
class Pending:
    """An assignment this referee hosts, waiting for its bots."""

    assignment: Assignment
    sessions: list[Session | None]  # by seat; None until the bot is here
    since: float  # loop time it was received (the grace of missing seats runs from here)
    timer: asyncio.TimerHandle | None = None
    passes: list[str] = field(default_factory=list)


class Cluster:
    """The shared ladders of one referee (see the module docstring)."""

    def __init__(
        self,
        lobby: Lobby,
        store: Store,
        referee_id: str,
        poll_s: float,
        status: Callable[[], dict[str, object]] = dict,
    ) -> None:
        self.lobby = lobby
        self.store = store
        self.referee_id = referee_id
        self.poll_s = poll_s
        self.presence = Presence(store, referee_id)
        self._status = status  # what this referee publishes at each poll
        self.pending: dict[str, Pending] = {}  # by match id
        self._passes: dict[str, tuple[Pending, int]] = {}  # redirect pass -> (match, seat)
        self._seen: set[str] = set()  # assignments already acted on
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()  # a bot waits anew: poll soon rather than at the next tick
        self._polls = 0  # polls handled so far
        self._polled = asyncio.Condition()  # notified after each handled poll
        self.ok = True  # the last poll succeeded
        self.scheduling: set[str] = set()  # ladders this referee schedules now
        self._stopped = False
        for rt in self.ladders.values():
            rt.on_waiting = self._wake.set

    @property
    def ladders(self) -> dict[str, LadderRuntime]:
        return {n: rt for n, rt in self.lobby.ladders.items() if rt.shared}

    def policies(self) -> dict[str, Policy]:
        return {name: rt.policy for name, rt in self.ladders.items()}

    # -- the poll loop -------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="cluster")

    async def drain(self) -> None:
        """The referee drains: hand every scheduler role over at once and every assignment it
        was to host back (its bots wait again, to be redirected to referees that play on).
        Polling goes on: its waiting bots are moved elsewhere meanwhile."""
        await asyncio.to_thread(self.presence.release_ladders)
        self.scheduling.clear()
        for p in list(self.pending.values()):
            self._hand_back(p, "the referee drains")
        self._wake.set()

    async def stop(self) -> None:
        """Stop polling and withdraw this referee's tickets and locks (no new match is
        assigned here; another referee schedules its ladders at its next poll)."""
        if self._stopped:
            return
        self._stopped = True
        await cancel(self._task)
        self._task = None
        for p in list(self.pending.values()):
            if p.timer is not None:
                p.timer.cancel()
        await asyncio.to_thread(self.presence.close)
        try:
            await asyncio.to_thread(matchmaking.drop_tickets, self.store, self.referee_id)
        except Exception:
            log.warning("tickets_not_withdrawn", exc_info=True)

    async def _run(self) -> None:
        policies = self.policies()
        while True:
            # At most every MIN_GAP_S, at least every poll_s, sooner when a bot waits anew.
            await asyncio.sleep(min(MIN_GAP_S, self.poll_s))
            # asyncio.timeout, not wait_for: on 3.11 wait_for loses a cancellation that arrives
            # as the event is set (the stop would then wait for this loop forever).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, self.poll_s - MIN_GAP_S)):
                    await self._wake.wait()
            self._wake.clear()
            try:
                polled = await self._poll(policies)
            except Exception as exc:
                # A store outage or a lost race is normal and retried quietly at the next
                # poll; anything else is a bug, logged with its traceback.
                transient = is_transient(exc) or _lost_race(exc)
                if transient:
                    log.info("cluster_poll_retried", error=type(exc).__name__)
                else:
                    log.exception("cluster_poll_failed")
                metrics.STORE_ERRORS.labels("transient" if transient else "refused").inc()
                self.ok = False
                continue
            self.ok = True
            try:
                self._apply(polled)
            except Exception:  # a bug must not stop this referee's part in its ladders
                log.exception("cluster_assignments_failed")
            async with self._polled:
                self._polls += 1
                self._polled.notify_all()

    async def _poll(self, policies: dict[str, Policy]) -> Polled:
        draining = self.lobby.draining
        schedule: set[str] | None = None
        if self.presence.enabled:
            wanted = [] if draining else sorted(policies)
            schedule = await asyncio.to_thread(self.presence.hold, wanted)
        return await asyncio.to_thread(
            matchmaking.poll,
            self.store,
            self.referee_id,
            self.tickets(),
            policies,
            schedule=schedule,
            status=self._status(),
            draining=draining,
        )

    def tickets(self) -> dict[str, list[Ticket]]:
        """This referee's waiting sessions, by shared ladder. Published while it drains too
        (the scheduler then moves them to another host) and while the ladder is stopped (the
        scheduler pairs nobody then; the cluster's status counts them); none while the store
        fails."""
        out: dict[str, list[Ticket]] = {}
        for name, rt in self.ladders.items():
            out[name] = []
            if not self.lobby.gate.rated_ok(name):
                continue
            out[name] = [
                Ticket(s.id, s.bot.id, n, s.max_matches) for s, n in rt.tickets().items() if n > 0
            ]
        return out

    def _apply(self, polled: Polled) -> None:
        """The ladders' states, then the assignments that involve this referee."""
        for name, state in polled.states.items():
            rt = self.lobby.ladders.get(name)
            if rt is not None and rt.shared:
                rt.apply_state(state)
        self.scheduling = set(polled.plans)
        for name, rt in self.ladders.items():
            plan = polled.plans.get(name)
            rt.stalled = plan.stalled if plan is not None else ""
            rt.capped = (plan.capped, plan.groups) if plan is not None else (0, 0)
            metrics.LADDER_STALLED.labels(name).set(int(plan is not None and plan.stuck))
        self.handle(polled.assignments)

    def handle(self, found: list[Assignment]) -> None:
        """Act once on every assignment that involves this referee."""
        self._seen &= {a.match_id for a in found}
        for a in found:
            if a.match_id in self._seen or a.ladder not in self.lobby.ladders:
                continue
            self._seen.add(a.match_id)
            if a.host_id == self.referee_id:
                self._host(a)
            else:
                for seat in a.seats:
                    if seat.referee_id == self.referee_id:
                        self._redirect(a, seat)

    # -- seats of this referee hosted elsewhere ------------------------------------------------

    def _redirect(self, a: Assignment, seat: AssignedSeat) -> None:
        rt = self.lobby.ladders[a.ladder]
        session = rt.waiting_session(seat.ticket)
        if session is None or session.stream is None:
            log.info("redirect_missed", match_id=a.match_id, bot=seat.name, note="bot gone")
            return
        if not a.host_address:
            log.error("redirect_without_address", match_id=a.match_id, host=a.host_id)
            return
        rt.forget(session)
        session.send(messages.redirect(a.host_address, seat.ticket_pass))
        session.leave()  # it plays nothing here: the stream ends after the Redirect
        metrics.REDIRECTS.labels("sent").inc()
        log.info("bot_redirected", match_id=a.match_id, bot=seat.name, host=a.host_id)

    # -- matches hosted here -------------------------------------------------------------------

    def _host(self, a: Assignment) -> None:
        rt = self.lobby.ladders[a.ladder]
        loop = asyncio.get_running_loop()
        p = Pending(a, [None] * len(a.seats), loop.time())
        self.pending[a.match_id] = p
        for i, seat in enumerate(a.seats):
            if seat.referee_id == self.referee_id:
                session = rt.waiting_session(seat.ticket)
                if session is not None:
                    self._seat(rt, p, i, session)
            else:
                self._passes[seat.ticket_pass] = (p, i)
                p.passes.append(seat.ticket_pass)
        if self.lobby.draining:
            self._hand_back(p, "the referee drains")
            return
        p.timer = loop.call_later(rt.clock.grace_ms / 1000, self._launch, p)
        if all(s is not None for s in p.sessions):
            self._launch(p)

    def _seat(self, rt: LadderRuntime, p: Pending, seat: int, session: Session) -> None:
        p.sessions[seat] = session
        rt.reserve(session)

    async def expects(self, ticket: str, bot_id: int, ladder: str) -> str | None:
        """Why a redirected Hello's pass is refused (None when this referee waits for it). A
        bot may come before this referee has read its assignment (the referee that sent it
        polled first): an unknown pass waits for up to two more polls."""
        if ticket not in self._passes and self._task is not None:
            self._wake.set()
            async with self._polled:
                target = self._polls + 2
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(ARRIVAL_WAIT_S):
                        await self._polled.wait_for(
                            lambda: self._polls >= target or ticket in self._passes
                        )
        entry = self._passes.get(ticket)
        if entry is None:
            return "unknown, used or expired redirect_ticket"
        p, seat = entry
        if p.assignment.seats[seat].bot_id != bot_id or p.assignment.ladder != ladder:
            return "this redirect_ticket was given to another bot or ladder"
        return None

    def arrive(self, ticket: str, session: Session) -> None:
        """A redirected bot is here (its pass was checked by :meth:`expects`)."""
        p, seat = self._passes.pop(ticket)
        rt = self.lobby.ladders[p.assignment.ladder]
        self._seat(rt, p, seat, session)
        metrics.REDIRECTS.labels("arrived").inc()
        metrics.REDIRECT_SECONDS.observe(asyncio.get_running_loop().time() - p.since)
        if all(s is not None for s in p.sessions):
            self._launch(p)

    def _release(self, p: Pending) -> LadderRuntime | None:
        """Take ``p`` out of the pending ones and free its reserved slots; None if it was
        launched or handed back already."""
        a = p.assignment
        if self.pending.pop(a.match_id, None) is None:
            return None
        if p.timer is not None:
            p.timer.cancel()
        for ticket in p.passes:
            self._passes.pop(ticket, None)
        rt = self.lobby.ladders[a.ladder]
        for here in p.sessions:
            if here is not None:
                rt.unreserve(here)
        return rt

    def _launch(self, p: Pending) -> None:
        """Start the match when every bot is here and this referee plays on; else give the
        assignment back."""
        missing = [i for i, here in enumerate(p.sessions) if here is None]
        stopped = not self.lobby.ladders[p.assignment.ladder].scheduling
        if missing or self.lobby.draining or stopped:
            for i in missing:
                metrics.REDIRECTS.labels("missed").inc()
                log.info(
                    "redirect_missed",
                    match_id=p.assignment.match_id,
                    bot=p.assignment.seats[i].name,
                    note="the bot did not arrive within the grace time: nothing is rated",
                )
            why = "bots missing" if missing else "the referee drains"
            self._hand_back(p, "the ladder is stopped" if stopped else why)
            return
        rt = self._release(p)
        if rt is None:
            return
        a = p.assignment
        now = asyncio.get_running_loop().time()
        sessions = [here for here in p.sessions if here is not None]
        # A bot that left meanwhile (its own doing) starts away: its grace runs from now.
        absent = {i: now for i, here in enumerate(sessions) if here.stream is None}
        rt.launch_assigned(sessions, a.seed, a.match_id, absent, a.twin_of, a.rotation)

    def _hand_back(self, p: Pending, why: str) -> None:
        """Give an unstarted assignment back: its local bots wait again here (from where the
        scheduler may move them), and the store forgets it so the scheduler pairs anew."""
        rt = self._release(p)
        if rt is None:
            return
        for here in p.sessions:
            if here is not None and here.stream is not None:
                rt.join(here)
        a = p.assignment
        if a.twin_of:
            rt.twin_dropped(a.twin_of)
        log.info("assignment_handed_back", match_id=a.match_id, why=why)
        metrics.ASSIGNMENTS_HANDED_BACK.inc()
        task = asyncio.get_running_loop().create_task(
            asyncio.to_thread(matchmaking.hand_back, self.store, a.match_id, self.referee_id)
        )
        task.add_done_callback(_log_failure)


def _log_failure(task: asyncio.Task[bool]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.info("hand_back_failed", error=repr(task.exception()), note="it expires instead")


def _lost_race(exc: BaseException) -> bool:
    """A row another referee changed meanwhile (a scheduler and a ticket's owner): the next
    poll reads it afresh."""
    from sqlalchemy.orm.exc import StaleDataError

    return isinstance(exc, StaleDataError)
