"""The SQL of tournaments, shared by every referee serving them (and read by the web and the
command line).

Each referee serving an event polls (:func:`poll`): in one transaction it replaces its tickets
(its registered bots waiting for games), and, when it is the event's scheduler, recomputes the
event from its results (:func:`kozel.tournament.director.run`), puts the games that can be
played in the table, gives back those whose host was lost, and assigns what can start now
(:func:`kozel.tournament.assign.plan`); then it reads the games it hosts and the redirects of its
own bots. A host starts a game (:func:`start`) and commits its result after the replay is
written (:func:`finish`), idempotently; a game that could not be played goes back to pending
(:func:`give_back`) and is played again from the same seed.

One scheduler per event: on PostgreSQL the holder of the event's advisory lock (a connection
of its own: :class:`SchedulerLock`), replaced within a poll when its process dies; on SQLite
the referee named in the event's row while its lease lives.
"""

from __future__ import annotations

import contextlib
import secrets
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, select, text, update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from kozel.ladder.matchmaking import live_referees
from kozel.ladder.models import BotRow
from kozel.ladder.presence import SCHEDULER_NS, ladder_key
from kozel.ladder.store import Store, StoreError, db_now
from kozel.ladder.tournament_models import TournamentGameRow, TournamentRow, TournamentTicketRow
from kozel.tournament import assign
from kozel.tournament.director import EventState, run
from kozel.tournament.games import GameResult
from kozel.tournament.spec import TournamentSpec, spec_from_json, spec_json

EXPIRE_S = 30.0  # an assigned game its host has not started by then goes back to pending


@dataclass(frozen=True, slots=True)
class Ticket:
    """A waiting session of a registered bot, as its referee publishes it."""

    id: str
    bot_id: int
    slots: int


@dataclass(frozen=True, slots=True)
class SeatPlan:
    kind: str  # "house" | "command" | "ticket" | "absent"
    name: str  # the bot
    ticket: str = ""
    referee: str = ""  # where the ticket's bot waits
    ticket_pass: str = ""  # its one-time pass when it is redirected to the host


@dataclass(frozen=True, slots=True)
class GameAssignment:
    """A game assigned to a host, until it is started."""

    tournament: str
    key: str
    match_id: str
    host_id: str
    host_address: str
    seed: bytes
    seats: tuple[SeatPlan, ...]


@dataclass
class Polled:
    assignments: list[GameAssignment] = field(default_factory=list)
    public: list[str] = field(default_factory=list)  # its games whose replays may be shown now
    scheduled: bool = False  # this referee scheduled the event in this poll
    done: bool = False  # the event is over


@dataclass(frozen=True, slots=True)
class Stored:
    """An event as the store holds it."""

    spec: TournamentSpec
    seed: bytes
    seeding: list[str]
    ratings: dict[str, float]
    state: str
    created_at: datetime
    finished_at: datetime | None


# -- registration -------------------------------------------------------------------------------


def register(
    store: Store,
    spec: TournamentSpec,
    seed: bytes,
    seeding: Sequence[str],
    ratings: Mapping[str, float],
) -> Stored:
    """(Blocking.) Record an event the first time a referee serves it; afterwards its stored
    definition must be the same (a changed file would change a running event's schedule)."""
    with store.transaction() as s:
        row = s.get(TournamentRow, spec.name, with_for_update=True)
        if row is None:
            row = TournamentRow(
                name=spec.name,
                spec=spec_json(spec),
                seed=seed.hex(),
                seeding=list(seeding),
                ratings=dict(ratings),
                state="running",
                created_at=datetime.now(UTC),
            )
            s.add(row)
        elif (diff := _first_difference(row.spec, spec_json(spec))) is not None:
            raise StoreError(
                f"tournament {spec.name!r} is in the store with another definition "
                f"({diff}); an event's definition cannot change once it started: "
                "give the new one another name"
            )
        return _stored(row)


def _first_difference(old: Any, new: Any, where: str = "") -> str | None:
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            got = _first_difference(old.get(k), new.get(k), f"{where}.{k}" if where else k)
            if got is not None:
                return got
        return None
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new)):
            got = _first_difference(a, b, f"{where}.{i}")
            if got is not None:
                return got
        return None
    return None if old == new else f"{where or '(top)'}: {old!r} then, {new!r} now"


def _stored(row: TournamentRow) -> Stored:
    return Stored(
        spec_from_json(row.spec),
        bytes.fromhex(row.seed),
        list(row.seeding),
        dict(row.ratings or {}),
        row.state,
        row.created_at,
        row.finished_at,
    )


def load(store: Store, name: str) -> Stored | None:
    """(Blocking.) An event's definition and seed."""
    with store.transaction() as s:
        row = s.get(TournamentRow, name)
        return None if row is None else _stored(row)


def names(store: Store) -> list[str]:
    with store.transaction() as s:
        return list(s.scalars(select(TournamentRow.name).order_by(TournamentRow.created_at)))


# -- the poll -----------------------------------------------------------------------------------


def poll(
    store: Store,
    referee_id: str,
    name: str,
    tickets: Sequence[Ticket],
    *,
    schedule: bool | None,
    ready: bool = True,
    expire_s: float = EXPIRE_S,
) -> Polled:
    """(Blocking.) In one transaction: replace ``referee_id``'s tickets of event ``name``;
    schedule it when this referee holds its lock (``schedule``; None: as the event's row says,
    on SQLite); read the games it hosts and those its bots are redirected to."""
    out = Polled()
    with store.transaction() as s:
        now = db_now(s)
        # The event's row first: every poll of the event takes its locks in this order (the
        # scheduler's deletes other referees' tickets, so tickets first could deadlock).
        row = s.get(TournamentRow, name, with_for_update=True)
        if row is None:
            raise StoreError(f"no tournament {name!r} in the store")
        _replace_tickets(s, referee_id, name, tickets, now)
        live = live_referees(s, now)
        if schedule is None:
            sched = row.scheduler_id
            schedule = sched is None or sched == referee_id or sched not in live
        if schedule and referee_id in live:
            row.scheduler_id = referee_id
            out.scheduled = True
            _schedule(s, row, now, live, expire_s)
        out.done = row.state == "finished"
        out.public = _unseal(s, name, referee_id)
        out.assignments = _assignments(s, row, referee_id, live)
    return out


def _assignments(
    s: Session, row: TournamentRow, referee_id: str, live: Mapping[str, Any]
) -> list[GameAssignment]:
    """The games assigned to ``referee_id`` to host, and those its waiting bots are to be
    redirected to: also once their host has started them (it may start before this referee
    polls; the bots then still come, until the host's start timeout)."""
    out = []
    for game in s.scalars(
        select(TournamentGameRow).where(
            TournamentGameRow.tournament == row.name,
            TournamentGameRow.status.in_(("assigned", "running")),
        )
    ):
        hosts = game.status == "assigned" and game.host_id == referee_id
        redirects = any(p["referee"] == referee_id and p["pass"] for p in game.passes or [])
        if hosts or redirects:
            out.append(_assignment(row, game, live))
    return out


def _unseal(s: Session, name: str, referee_id: str) -> list[str]:
    """This referee's finished games no game of the same seed is still to be played with:
    their replays may be shown from now on."""
    rows = list(
        s.scalars(
            select(TournamentGameRow).where(
                TournamentGameRow.tournament == name,
                TournamentGameRow.host_id == referee_id,
                TournamentGameRow.status == "finished",
                TournamentGameRow.sealed.is_(True),
            )
        )
    )
    if not rows:
        return []
    busy = set(
        s.scalars(
            select(TournamentGameRow.seed).where(
                TournamentGameRow.tournament == name, TournamentGameRow.status != "finished"
            )
        )
    )
    out = []
    for g in rows:
        if g.seed not in busy:
            g.sealed = False
            out.append(g.match_id or "")
    return out


def sealed(store: Store, referee_id: str) -> list[str]:
    """(Blocking.) This referee's finished games whose replays are still sealed (at start)."""
    with store.transaction() as s:
        return [
            m or ""
            for m in s.scalars(
                select(TournamentGameRow.match_id).where(
                    TournamentGameRow.host_id == referee_id,
                    TournamentGameRow.status == "finished",
                    TournamentGameRow.sealed.is_(True),
                )
            )
        ]


def _replace_tickets(
    s: Session, referee_id: str, name: str, tickets: Sequence[Ticket], now: float
) -> None:
    keep = {t.id: t for t in tickets}
    s.execute(
        delete(TournamentTicketRow).where(
            TournamentTicketRow.referee_id == referee_id,
            TournamentTicketRow.tournament == name,
            TournamentTicketRow.id.not_in(list(keep)),
        )
    )
    known = set(
        s.scalars(
            select(TournamentTicketRow.id).where(
                TournamentTicketRow.referee_id == referee_id, TournamentTicketRow.tournament == name
            )
        )
    )
    spent = _redirecting(s, referee_id, name) if known else set()
    for tid, t in keep.items():
        if tid in spent:
            continue  # its bot is on its way to a game: no second one from this ticket
        if tid in known:
            s.execute(
                update(TournamentTicketRow)
                .where(TournamentTicketRow.id == tid)
                .values(slots=t.slots)
            )
        else:
            s.add(
                TournamentTicketRow(
                    id=tid,
                    tournament=name,
                    referee_id=referee_id,
                    bot_id=t.bot_id,
                    slots=t.slots,
                    since=now,
                )
            )
    s.flush()


def _redirecting(s: Session, referee_id: str, name: str) -> set[str]:
    """The tickets of ``referee_id`` whose bots are to be redirected to a game not yet over
    (their slots stay spent, whatever the referee publishes before it has sent them)."""
    games = s.scalars(
        select(TournamentGameRow.passes).where(
            TournamentGameRow.tournament == name,
            TournamentGameRow.status.in_(("assigned", "running")),
        )
    )
    return {
        p["ticket"]
        for passes in games
        for p in passes or []
        if p["pass"] and p["referee"] == referee_id
    }


def _schedule(
    s: Session, row: TournamentRow, now: float, live: Mapping[str, Any], expire_s: float
) -> None:
    """One scheduler pass: the event as its results make it, the games table brought in line
    with it, lost games given back, and the plan for what can start now."""
    stored = _stored(row)
    games = {
        g.key: g
        for g in s.scalars(
            select(TournamentGameRow).where(TournamentGameRow.tournament == row.name)
        )
    }
    state = run(stored.spec, stored.seed, _results(games.values()), stored.seeding, stored.ratings)
    if state.done:
        if row.state != "finished":
            row.state, row.finished_at = "finished", datetime.now(UTC)
        return
    for g in games.values():
        lost = g.status in ("assigned", "running") and g.host_id not in live
        stale = g.status == "assigned" and now - (g.assigned_at or now) > expire_s
        if lost or stale:
            _to_pending(g)
    pending = {g.key: g for g in state.pending}
    for key, g in list(games.items()):
        if g.status == "pending" and key not in pending:
            s.delete(g)
            del games[key]
    for key, game in pending.items():
        if key not in games:
            games[key] = TournamentGameRow(
                tournament=row.name,
                key=key,
                seats=list(game.seats),
                seed=game.seed.hex(),
                status="pending",
                pending_since=now,
            )
            s.add(games[key])
    s.flush()
    _assign(s, row, stored.spec, games, now, live)


def _to_pending(g: TournamentGameRow) -> None:
    g.status, g.host_id, g.match_id, g.passes, g.assigned_at = "pending", None, None, None, None
    g.attempts += 1


def _assign(
    s: Session,
    row: TournamentRow,
    spec: TournamentSpec,
    games: Mapping[str, TournamentGameRow],
    now: float,
    live: Mapping[str, Any],
) -> None:
    """Assign the games that can start now (:func:`kozel.tournament.assign.plan`): a host, a
    match id, and a one-time pass for each bot waiting on another referee."""
    snap = _snapshot(s, row.name, spec, games, now, live)
    for a in assign.plan(snap, spec.max_concurrent_games, spec.forfeits.absent_wait_s):
        g = games[a.key]
        g.status, g.host_id, g.assigned_at = "assigned", a.host, now
        g.match_id = uuid.uuid4().hex
        g.passes = [
            {
                "kind": seat.kind,
                "ticket": seat.ticket,
                "referee": seat.referee,
                "pass": secrets.token_urlsafe(24)
                if seat.kind == "ticket" and seat.referee != a.host
                else "",
            }
            for seat in a.seats
        ]
        for seat in a.seats:
            if seat.kind == "ticket":
                slots = TournamentTicketRow.slots - 1 if seat.referee == a.host else 0
                s.execute(
                    update(TournamentTicketRow)
                    .where(TournamentTicketRow.id == seat.ticket)
                    .values(slots=slots)
                )
    s.flush()


def _snapshot(
    s: Session,
    name: str,
    spec: TournamentSpec,
    games: Mapping[str, TournamentGameRow],
    now: float,
    live: Mapping[str, Any],
) -> assign.Snapshot:
    """What the plan needs: pending games, waiting bots, hosts that admit games, load."""
    bot_ids = dict(
        s.execute(select(BotRow.name, BotRow.id).where(BotRow.name.in_(list(spec.names)))).all()
    )
    by_id = {v: k for k, v in bot_ids.items()}
    tickets = [
        assign.Ticket(t.id, by_id[t.bot_id], t.referee_id, t.slots)
        for t in s.scalars(
            select(TournamentTicketRow)
            .where(TournamentTicketRow.tournament == name)
            .order_by(TournamentTicketRow.since, TournamentTicketRow.id)
        )
        if t.bot_id in by_id
    ]
    snap = assign.Snapshot(
        now=now,
        games=[
            assign.Waiting(g.key, tuple(g.seats), g.pending_since)
            for g in sorted(games.values(), key=lambda g: g.key)
            if g.status == "pending"
        ],
        kinds={b.name: b.kind for b in spec.bots},
        concurrency={b.name: b.concurrency for b in spec.bots},
        tickets=tickets,
        hosts={
            rid: not r.draining and bool((r.status or {}).get("admits", True))
            for rid, r in live.items()
        },
    )
    for g in games.values():
        if g.status in ("assigned", "running"):
            snap.busy.update(g.seats)
            snap.load[g.host_id or ""] += 1
            snap.active += 1
    return snap


def _assignment(
    row: TournamentRow, g: TournamentGameRow, live: Mapping[str, Any]
) -> GameAssignment:
    host = live.get(g.host_id or "")
    return GameAssignment(
        row.name,
        g.key,
        g.match_id or "",
        g.host_id or "",
        (host.address or "") if host is not None else "",
        bytes.fromhex(g.seed),
        tuple(
            SeatPlan(p["kind"], name, p["ticket"], p["referee"], p["pass"])
            for p, name in zip(g.passes or [], g.seats)
        ),
    )


# -- a game's life ------------------------------------------------------------------------------


def start(store: Store, match_id: str, host_id: str) -> None:
    """(Blocking.) The host started the game (a retried call changes nothing)."""
    with store.transaction() as s:
        g = s.scalar(
            select(TournamentGameRow)
            .where(TournamentGameRow.match_id == match_id)
            .with_for_update()
        )
        if g is not None and g.status == "assigned":
            g.status, g.host_id, g.started_at = "running", host_id, datetime.now(UTC)


def finish(
    store: Store,
    tournament: str,
    key: str,
    match_id: str,
    result: dict[str, Any],
    replay_path: str,
) -> bool:
    """(Blocking; after the replay is written.) Commit a played game's result. The first
    result of a game counts: a game given back meanwhile (its host seemed lost) and assigned
    anew still takes it, a second one is ignored. Returns whether it was recorded."""
    with store.transaction() as s:
        g = s.scalar(
            select(TournamentGameRow)
            .where(TournamentGameRow.tournament == tournament, TournamentGameRow.key == key)
            .with_for_update()
        )
        if g is None or g.status == "finished":
            return False
        other = s.scalar(select(TournamentGameRow.id).where(TournamentGameRow.match_id == match_id))
        if other is not None and other != g.id:
            return False
        g.status, g.match_id, g.result = "finished", match_id, result
        g.replay_path, g.ended_at = replay_path, datetime.now(UTC)
        g.passes = None
        g.sealed = True
        return True


def give_back(store: Store, match_id: str) -> None:
    """(Blocking.) A game that was not played to its end (its host stopped, the match was
    aborted): it waits to be played again, from the same seed."""
    with store.transaction() as s:
        g = s.scalar(
            select(TournamentGameRow)
            .where(TournamentGameRow.match_id == match_id)
            .with_for_update()
        )
        if g is not None and g.status in ("assigned", "running"):
            _to_pending(g)


def hosted(store: Store, referee_id: str) -> list[tuple[str, str, str]]:
    """(Blocking.) The games marked assigned or running on ``referee_id``: (tournament, key,
    match id), for its recovery at start."""
    with store.transaction() as s:
        rows = s.execute(
            select(
                TournamentGameRow.tournament, TournamentGameRow.key, TournamentGameRow.match_id
            ).where(
                TournamentGameRow.host_id == referee_id,
                TournamentGameRow.status.in_(("assigned", "running")),
            )
        ).all()
    return [(t, k, m or "") for t, k, m in rows]


def drop_tickets(store: Store, referee_id: str) -> None:
    with store.transaction() as s:
        s.execute(delete(TournamentTicketRow).where(TournamentTicketRow.referee_id == referee_id))


# -- reading ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GameRow:
    """A game as the web and the command line show it."""

    key: str
    seats: tuple[str, ...]
    status: str
    host_id: str
    match_id: str
    attempts: int
    replay_path: str
    result: dict[str, Any] | None
    sealed: bool


@dataclass(frozen=True, slots=True)
class View:
    """An event for readers: its definition, the state its results make, and its game rows."""

    name: str
    stored: Stored
    state: EventState
    games: dict[str, GameRow]


def view(store: Store, name: str) -> View | None:
    """(Blocking.) The event ``name`` as it stands, or None."""
    with store.transaction() as s:
        row = s.get(TournamentRow, name)
        if row is None:
            return None
        stored = _stored(row)
        games = list(
            s.scalars(select(TournamentGameRow).where(TournamentGameRow.tournament == name))
        )
    state = run(stored.spec, stored.seed, _results(games), stored.seeding, stored.ratings)
    rows = {
        g.key: GameRow(
            g.key,
            tuple(g.seats),
            g.status,
            g.host_id or "",
            g.match_id or "",
            g.attempts,
            g.replay_path or "",
            g.result,
            g.sealed,
        )
        for g in games
    }
    return View(name, stored, state, rows)


def replays_of(store: Store, name: str) -> list[tuple[str, str, str]]:
    """(Blocking.) (key, match id, replay location) of every finished game of an event whose
    replay is no longer sealed."""
    with store.transaction() as s:
        rows = s.execute(
            select(TournamentGameRow.key, TournamentGameRow.match_id, TournamentGameRow.replay_path)
            .where(
                TournamentGameRow.tournament == name,
                TournamentGameRow.status == "finished",
                TournamentGameRow.sealed.is_(False),
            )
            .order_by(TournamentGameRow.key)
        ).all()
    return [(k, m or "", p or "") for k, m, p in rows]


def _results(rows: Sequence[TournamentGameRow] | Any) -> dict[str, GameResult]:
    out = {}
    for g in rows:
        if g.status == "finished" and g.result is not None:
            out[g.key] = result_from_json(g.key, tuple(g.seats), g.result, g.match_id or "")
    return out


def result_json(
    points: Sequence[float],
    forfeited: Sequence[bool],
    penalties: Sequence[int],
    reason: str,
    luck_corrected: Sequence[float] | None = None,
) -> dict[str, Any]:
    """A played game's result as the store keeps it."""
    return {
        "points": list(points),
        "forfeited": list(forfeited),
        "penalties": list(penalties),
        "reason": reason,
        "luck_corrected": list(luck_corrected) if luck_corrected is not None else None,
    }


def result_from_json(
    key: str, seats: tuple[str, ...], data: Mapping[str, Any], match_id: str
) -> GameResult:
    lc = data.get("luck_corrected")
    return GameResult(
        key,
        seats,
        tuple(float(x) for x in data["points"]),
        forfeited=tuple(bool(x) for x in data.get("forfeited", ())),
        penalties=tuple(int(x) for x in data.get("penalties", ())),
        match_id=match_id,
        reason=str(data.get("reason", "")),
        luck_corrected=tuple(float(x) for x in lc) if lc is not None else None,
    )


# -- one scheduler per event -----------------------------------------------------------------


class SchedulerLock:
    """The event's scheduler role on PostgreSQL: an advisory lock held on a connection of its
    own (released when the process dies). On SQLite :meth:`hold` returns None: the event's row
    decides (:func:`poll`). Blocking: one call at a time, from a worker thread."""

    def __init__(self, store: Store, name: str) -> None:
        self.store = store
        self.key = ladder_key("tournament:" + name)
        self.enabled = store.engine.dialect.name == "postgresql"
        self._conn: Connection | None = None
        self.held = False

    def hold(self) -> bool | None:
        if not self.enabled:
            return None
        try:
            if self._conn is None:
                self._conn = self.store.engine.connect()
                self._conn.execution_options(isolation_level="AUTOCOMMIT")
                self.held = False
            if not self.held:
                self.held = bool(
                    self._conn.execute(
                        text("SELECT pg_try_advisory_lock(:ns, :key)"),
                        {"ns": SCHEDULER_NS, "key": self.key},
                    ).scalar_one()
                )
            else:
                self._conn.exec_driver_sql("SELECT 1")
        except Exception:
            self.release()
            raise
        return self.held

    def release(self) -> None:
        conn, held, self._conn, self.held = self._conn, self.held, None, False
        if conn is None:
            return
        # A dead connection holds nothing either: errors are of no matter here.
        with contextlib.suppress(Exception):
            if held:  # at once: a closed connection's backend lets go only as it exits
                unlock = text("SELECT pg_advisory_unlock(:ns, :key)")
                conn.execute(unlock, {"ns": SCHEDULER_NS, "key": self.key})
        with contextlib.suppress(Exception):
            conn.invalidate()
            conn.close()


def counts(games: Sequence[GameRow]) -> Counter[str]:
    return Counter(g.status for g in games)
