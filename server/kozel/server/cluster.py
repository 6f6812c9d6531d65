"""A referee's part in ladders it shares with other referees (``referee.cluster``).

Every ``cluster_poll_s`` it publishes its waiting ladder sessions as tickets and reads the
assignments that involve it (:func:`kozel.ladder.matchmaking.poll`; the referee holding a
ladder's host row runs that ladder's scheduler in the same call). For an assignment it hosts, it
waits for the assigned bots: its own sessions at once, the others as they arrive with their
redirect pass (``Hello.redirect_ticket``), for at most the ladder's grace time; a bot that has
not arrived by then forfeits as a missed connection would (its seat starts the match away, its
grace already spent). For a seat of its own hosted elsewhere, it sends the session a
``Redirect`` and ends the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from dataclasses import dataclass, field

import structlog

from kozel.core import messages
from kozel.ladder import matchmaking
from kozel.ladder.matchmaking import AssignedSeat, Assignment, Policy, Ticket
from kozel.ladder.store import Bot, Store, is_transient
from kozel.server import metrics
from kozel.server.ladder_runtime import PATIENCE_S, LadderRuntime
from kozel.server.lobby import Lobby
from kozel.server.session import Session
from kozel.server.store_queue import cancel
from kozel.v1 import referee_pb2 as rpb

log = structlog.get_logger("kozel.cluster")

MIN_GAP_S = 0.05  # the shortest time between two polls of one referee
ARRIVAL_WAIT_S = 5.0  # at most this long for the assignment of a pass not known yet
# An assignment its host has not started this long after its grace time is dropped.
EXPIRE_MARGIN_S = 10.0


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

    def __init__(self, lobby: Lobby, store: Store, referee_id: str, poll_s: float) -> None:
        self.lobby = lobby
        self.store = store
        self.referee_id = referee_id
        self.poll_s = poll_s
        self.pending: dict[str, Pending] = {}  # by match id
        self._passes: dict[str, tuple[Pending, int]] = {}  # redirect pass -> (match, seat)
        self._seen: set[str] = set()  # assignments already acted on
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()  # a bot waits anew: poll soon rather than at the next tick
        self._polls = 0  # polls handled so far
        self._polled = asyncio.Condition()  # notified after each handled poll
        self.ok = True  # the last poll succeeded
        for rt in self.ladders.values():
            rt.on_waiting = self._wake.set

    @property
    def ladders(self) -> dict[str, LadderRuntime]:
        return {n: rt for n, rt in self.lobby.ladders.items() if rt.shared}

    def policies(self) -> dict[str, Policy]:
        return {
            name: Policy(
                players=rt.spec.players,
                max_concurrent_matches=rt.spec.max_concurrent_matches,
                repeat_window=rt.spec.repeat_window,
                repeat_cap=rt.spec.repeat_cap,
                repeat_cap_window_s=rt.spec.repeat_cap_window_s,
                rating_scale=rt.spec.rating_scale,
                patience_s=PATIENCE_S,
                expire_s=rt.clock.grace_ms / 1000 + EXPIRE_MARGIN_S,
            )
            for name, rt in self.ladders.items()
        }

    # -- the poll loop -------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="cluster")

    async def stop(self) -> None:
        """Stop polling and withdraw this referee's tickets (no new match is assigned here)."""
        await cancel(self._task)
        self._task = None
        for p in list(self.pending.values()):
            if p.timer is not None:
                p.timer.cancel()
        try:
            await asyncio.to_thread(matchmaking.drop_tickets, self.store, self.referee_id)
        except Exception:
            log.warning("tickets_not_withdrawn", exc_info=True)

    async def _run(self) -> None:
        policies = self.policies()
        while True:
            # At most every MIN_GAP_S, at least every poll_s, sooner when a bot waits anew.
            await asyncio.sleep(min(MIN_GAP_S, self.poll_s))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(0.0, self.poll_s - MIN_GAP_S))
            self._wake.clear()
            tickets = self.tickets()
            try:
                found, _ = await asyncio.to_thread(
                    matchmaking.poll, self.store, self.referee_id, tickets, policies
                )
            except Exception as exc:
                if not is_transient(exc):
                    log.exception("cluster_poll_failed")
                metrics.STORE_ERRORS.labels("transient" if is_transient(exc) else "refused").inc()
                self.ok = False
                continue
            self.ok = True
            try:
                self.handle(found)
            except Exception:  # a bug must not stop this referee's part in its ladders
                log.exception("cluster_assignments_failed")
            async with self._polled:
                self._polls += 1
                self._polled.notify_all()

    def tickets(self) -> dict[str, list[Ticket]]:
        """This referee's waiting sessions, by shared ladder (none while it takes no matches)."""
        out: dict[str, list[Ticket]] = {}
        for name, rt in self.ladders.items():
            out[name] = []
            if not (rt.scheduling and self.lobby.admits() and self.lobby.rated_ok(name)):
                continue
            slots = Counter(
                s for s in rt.waiting if s.free_slots > 0 and s.bot.id not in rt.excluded
            )
            out[name] = [
                Ticket(s.id, s.bot.id, n, s.max_matches) for s, n in slots.items() if n > 0
            ]
        return out

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
        session = _find(rt, seat.ticket)
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
                session = _find(rt, seat.ticket)
                if session is not None:
                    self._seat(rt, p, i, session)
            else:
                self._passes[seat.ticket_pass] = (p, i)
                p.passes.append(seat.ticket_pass)
        p.timer = loop.call_later(rt.clock.grace_ms / 1000, self._launch, p)
        if all(s is not None for s in p.sessions):
            self._launch(p)

    def _seat(self, rt: LadderRuntime, p: Pending, seat: int, session: Session) -> None:
        p.sessions[seat] = session
        if session in rt.waiting:
            rt.waiting.remove(session)
        rt.reserved[session] += 1

    async def expects(self, ticket: str, bot_id: int, ladder: str) -> str | None:
        """Why a redirected Hello's pass is refused (None when this referee waits for it). A
        bot may come before this referee has read its assignment (the referee that sent it
        polled first): an unknown pass waits for up to two more polls."""
        if ticket not in self._passes and self._task is not None:
            self._wake.set()
            async with self._polled:
                target = self._polls + 2
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        self._polled.wait_for(
                            lambda: self._polls >= target or ticket in self._passes
                        ),
                        ARRIVAL_WAIT_S,
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

    def _launch(self, p: Pending) -> None:
        a = p.assignment
        if self.pending.pop(a.match_id, None) is None:
            return
        if p.timer is not None:
            p.timer.cancel()
        for ticket in p.passes:
            self._passes.pop(ticket, None)
        rt = self.lobby.ladders[a.ladder]
        now = asyncio.get_running_loop().time()
        sessions: list[Session] = []
        absent: dict[int, float] = {}
        for i, (seat, here) in enumerate(zip(a.seats, p.sessions)):
            if here is None:  # never arrived: away from the start, its grace spent
                absent[i] = p.since
                sessions.append(_placeholder(a.ladder, seat))
                metrics.REDIRECTS.labels("missed").inc()
                continue
            rt.reserved[here] -= 1
            if rt.reserved[here] <= 0:
                del rt.reserved[here]
            if here.stream is None:  # left meanwhile: its grace starts now
                absent[i] = now
            sessions.append(here)
        rt.launch_assigned(sessions, a.seed, a.match_id, absent, a.twin_of)


def _find(rt: LadderRuntime, ticket: str) -> Session | None:
    for s in rt.waiting:
        if s.id == ticket:
            return s
    return None


def _placeholder(ladder: str, seat: AssignedSeat) -> Session:
    """A session for a bot that never arrived: it has no stream, so its seat starts away."""
    hello = rpb.Hello(bot_name=seat.name, join_ladder=rpb.JoinLadder(ladder=ladder))
    session = Session(hello, 1, lambda _: None)
    session.bot = Bot(seat.bot_id, seat.name, "active")
    session.ladder = ladder
    return session
