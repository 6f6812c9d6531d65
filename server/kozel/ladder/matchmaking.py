"""Matchmaking shared through the store, for ladders that several referees serve at once.

A waiting bot is a ticket row, kept by the referee that holds its stream. Each referee polls
(:func:`poll`): in one transaction it publishes its status (load, admission, draining),
replaces its own tickets, and, for the ladders it schedules (one referee at a time: the holder
of the ladder's advisory lock on PostgreSQL, :mod:`kozel.ladder.presence`; else of its host
row), reads the ladder's snapshot, plans (:func:`kozel.ladder.plan.plan`, the single referee's
policy) and writes the plan. The repeat window, the meeting cap and every bot's running
matches are read from the store at each pass, so they hold across referees and survive a new
scheduler. A formed match becomes an assignment: a host, a seed, and a one-time pass for every
bot to be redirected there. The host starts it (:func:`start_assigned`), which turns it into a
running match in the same transaction, or gives it back (:func:`hand_back`: it drains, or a
bot never came).
"""

from __future__ import annotations

import random
import secrets
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from kozel.ladder import presence
from kozel.ladder.models import (
    AssignmentRow,
    BotRow,
    LadderHostRow,
    LadderStateRow,
    MatchRow,
    MatchSeatRow,
    RatingRow,
    RefereeRow,
    TicketRow,
)
from kozel.ladder.plan import Host, Plan, Policy, Snapshot, Waiting, plan
from kozel.ladder.rating_order import aware
from kozel.ladder.ratings import Rating
from kozel.ladder.scheduler import History, MeetingCap
from kozel.ladder.store import LadderState, Store, add_match, db_now, seat_bots

HISTORY_LIMIT = 5000  # recent matches read per pass for the repeat window and meeting cap


@dataclass(frozen=True, slots=True)
class Ticket:
    """A waiting session as its referee publishes it."""

    id: str
    bot_id: int
    slots: int  # free match slots
    max_matches: int  # what the session declared


@dataclass(frozen=True, slots=True)
class AssignedSeat:
    """One seat of an assignment."""

    bot_id: int
    name: str  # the bot's name
    ticket: str  # the ticket (session) id the seat was taken from
    referee_id: str  # the referee holding that session
    ticket_pass: str  # the one-time pass of a redirected bot ("" when the host holds it)


@dataclass(frozen=True, slots=True)
class Assignment:
    """A match the scheduler formed, until its host starts it."""

    match_id: str
    ladder: str
    host_id: str
    host_address: str
    seed: bytes
    created: float  # database clock
    seats: tuple[AssignedSeat, ...]
    twin_of: str = ""  # the first match id of its duplicate group, for a duplicate twin
    rotation: int = 0  # of the seats, in its duplicate group


@dataclass(frozen=True, slots=True)
class Polled:
    """What one poll read: the assignments that involve the referee, the database's time, and
    every ladder's state (running or stopped: every referee obeys it)."""

    assignments: list[Assignment]
    now: float
    states: dict[str, LadderState]
    plans: dict[str, Plan]  # by ladder scheduled in this poll: what its pass formed, why not more


def poll(
    store: Store,
    referee_id: str,
    tickets: Mapping[str, Sequence[Ticket]],
    policies: Mapping[str, Policy],
    *,
    schedule: Iterable[str] | None = None,
    status: Mapping[str, object] | None = None,
    draining: bool = False,
    rng: random.Random | None = None,
) -> Polled:
    """(Blocking.) In one transaction: publish ``referee_id``'s status and draining flag,
    replace its tickets of each ladder in ``tickets``, run the scheduler of the ladders of
    ``policies`` it schedules (``schedule``, the ladders whose advisory lock it holds; None:
    those whose host row it holds, as on SQLite), and read every pending assignment that
    involves it, with the ladders' states."""
    rng = rng or random.Random()
    with store.transaction() as s:
        now = db_now(s)
        _publish(s, referee_id, status, draining, now)
        for ladder, published in tickets.items():
            _replace_tickets(s, referee_id, ladder, published, now)
        live = live_referees(s, now)
        states = {
            r.ladder: LadderState(r.ladder, r.state, r.changed_at, r.changed_by, r.reason)
            for r in s.scalars(select(LadderStateRow))
        }
        plans: dict[str, Plan] = {}
        if referee_id in live:
            for ladder in _scheduled(s, referee_id, sorted(policies), schedule):
                if ladder not in states or states[ladder].running:
                    plans[ladder] = _schedule(s, ladder, policies[ladder], now, live, rng)
        rows = s.scalars(
            select(AssignmentRow).where(AssignmentRow.ladder.in_(sorted(policies)))
        ).all()
        out = [
            _assignment(row, live)
            for row in rows
            if row.host_id == referee_id or any(x["referee"] == referee_id for x in row.seats)
        ]
    return Polled(out, now, states, plans)


def hand_back(store: Store, match_id: str, host_id: str) -> bool:
    """(Blocking.) Give an assignment back unstarted (its host drains, or a redirected bot
    never came): its bots wait again and the scheduler pairs them anew. False if it is gone
    already (started, expired)."""
    with store.transaction() as s:
        row = s.get(AssignmentRow, match_id, with_for_update=True)
        if row is None or row.host_id != host_id:
            return False
        s.delete(row)
        return True


def start_assigned(
    store: Store,
    match_id: str,
    ladder: str,
    seats: Sequence[tuple[int, int, int]],
    host_id: str,
    replay_path: str | None,
    started_at: datetime | None = None,
) -> None:
    """(Blocking.) The host starts an assignment (``seats``: seat, side, bot id) at
    ``started_at`` (else now): it becomes a running match in the same transaction. A match
    whose assignment expired meanwhile is recorded all the same: it is being played, and its
    result counts."""
    with store.transaction() as s:
        row = s.get(AssignmentRow, match_id, with_for_update=True)
        redirected = sum(bool(x["pass"]) for x in row.seats) if row is not None else None
        if row is not None:
            s.delete(row)
        if s.get(MatchRow, match_id) is None:
            add_match(
                s,
                match_id,
                ladder,
                len(seats),
                seats,
                host_id,
                replay_path,
                started_at or datetime.now(UTC),
            )
            s.get_one(MatchRow, match_id).redirected = redirected


def add_twin(
    s: Session,
    first: str,
    ladder: str,
    host_id: str,
    seed: bytes,
    seats: Sequence[tuple[str, int, str]],
    rotation: int = 1,
) -> None:
    """(In the transaction that commits a match of the duplicate group that ``first``
    began.) Assign the group's next match, rotation ``rotation``, to the same host: the same
    seed, ``seats`` (ticket, bot id, name) rotated by the caller. Its bots are busy from now
    on, so no scheduler pairs them elsewhere meanwhile."""
    s.add(
        AssignmentRow(
            match_id=uuid.uuid4().hex,
            ladder=ladder,
            host_id=host_id,
            seed=seed.hex(),
            created=db_now(s),
            seats=[
                {"bot": bot, "name": name, "ticket": ticket, "referee": host_id, "pass": ""}
                for ticket, bot, name in seats
            ],
            twin_of=first,
            rotation=rotation,
        )
    )


def drop_tickets(store: Store, referee_id: str) -> None:
    """(Blocking.) Remove every ticket of a referee (at its stop)."""
    with store.transaction() as s:
        s.execute(delete(TicketRow).where(TicketRow.referee_id == referee_id))


def _replace_tickets(
    s: Session, referee_id: str, ladder: str, published: Sequence[Ticket], now: float
) -> None:
    """Make ``referee_id``'s tickets of ``ladder`` those ``published``. Plain statements, not
    ORM deletes: a scheduler on another referee updates these rows concurrently, and a row it
    changed or a twin's commit removed must not fail the poll (an ORM delete expects its row)."""
    keep = {t.id: t for t in published}
    s.execute(
        delete(TicketRow).where(
            TicketRow.referee_id == referee_id,
            TicketRow.ladder == ladder,
            TicketRow.id.not_in(list(keep)),
        )
    )
    known = set(
        s.scalars(
            select(TicketRow.id).where(
                TicketRow.referee_id == referee_id, TicketRow.ladder == ladder
            )
        )
    )
    for tid, t in keep.items():
        if tid in known:
            s.execute(
                update(TicketRow)
                .where(TicketRow.id == tid)
                .values(slots=t.slots, max_matches=t.max_matches)
            )
        else:
            s.add(
                TicketRow(
                    id=tid,
                    ladder=ladder,
                    referee_id=referee_id,
                    bot_id=t.bot_id,
                    slots=t.slots,
                    max_matches=t.max_matches,
                    since=now,
                )
            )
    s.flush()


def _publish(
    s: Session,
    referee_id: str,
    status: Mapping[str, object] | None,
    draining: bool,
    now: float,
) -> None:
    values: dict[str, object] = {"draining": draining}
    if status is not None:
        values.update(status=dict(status), status_at=now)
    s.execute(update(RefereeRow).where(RefereeRow.id == referee_id).values(**values))


def live_referees(s: Session, now: float) -> dict[str, RefereeRow]:
    """The referees whose lease is live and, on PostgreSQL, whose process still holds its
    presence lock (:mod:`kozel.ladder.presence`): a killed referee drops out at once, not when
    its lease lapses."""
    rows = list(s.scalars(select(RefereeRow).where(RefereeRow.lease_until > now)))
    held = presence.held_keys(s)
    return {r.id: r for r in rows if held is None or r.lock_key is None or r.lock_key in held}


def _scheduled(
    s: Session, referee_id: str, ladders: list[str], schedule: Iterable[str] | None
) -> list[str]:
    """The ladders this pass schedules, their host rows locked and naming this referee (two
    schedulers never overlap, even across a takeover)."""
    if schedule is None:  # host rows decide (SQLite, or no presence connection)
        return list(
            s.scalars(
                select(LadderHostRow.ladder)
                .where(LadderHostRow.referee_id == referee_id, LadderHostRow.ladder.in_(ladders))
                .order_by(LadderHostRow.ladder)
                .with_for_update()
            )
        )
    mine = sorted(set(schedule) & set(ladders))
    for ladder in mine:
        row = s.get(LadderHostRow, ladder, with_for_update=True)
        if row is None:
            s.add(LadderHostRow(ladder=ladder, referee_id=referee_id))
        elif row.referee_id != referee_id:
            row.referee_id = referee_id
    s.flush()
    return mine


def _schedule(
    s: Session,
    ladder: str,
    policy: Policy,
    now: float,
    live: Mapping[str, RefereeRow],
    rng: random.Random,
) -> Plan:
    """One scheduler pass over a ladder: read its snapshot, plan, write the assignments."""
    snap = snapshot(s, ladder, policy, now, live)
    names = dict(
        s.execute(
            select(BotRow.id, BotRow.name).where(
                BotRow.id.in_(sorted({t.bot_id for t in snap.waiting}))
            )
        ).all()
    )
    out = plan(snap, policy, rng)
    for formed in out.formed:
        s.add(
            AssignmentRow(
                match_id=uuid.uuid4().hex,
                ladder=ladder,
                host_id=formed.host,
                seed=secrets.token_bytes(32).hex(),
                created=now,
                seats=[
                    {
                        "bot": t.bot_id,
                        "name": names[t.bot_id],
                        "ticket": t.ticket,
                        "referee": t.referee,
                        "pass": "" if t.referee == formed.host else secrets.token_urlsafe(24),
                    }
                    for t in formed.seats
                ],
            )
        )
        for t in formed.seats:
            # A redirected session moves to the host: it has no other slot where it was.
            slots = TicketRow.slots - 1 if t.referee == formed.host else 0
            s.execute(
                update(TicketRow).where(TicketRow.id == t.ticket).values(slots=slots, since=now)
            )
    s.flush()
    return out


def snapshot(
    s: Session, ladder: str, policy: Policy, now: float, live: Mapping[str, RefereeRow]
) -> Snapshot:
    """One ladder as the scheduler sees it (assignments whose host died or that expired are
    dropped on the way: their bots wait again)."""
    pending = []
    for row in s.scalars(select(AssignmentRow).where(AssignmentRow.ladder == ladder)):
        if row.host_id not in live or now - row.created > policy.expire_s:
            s.delete(row)
        else:
            pending.append(row)
    running = s.execute(
        select(MatchRow.id, MatchRow.referee_id, MatchSeatRow.bot_id)
        .join(MatchSeatRow, MatchSeatRow.match_id == MatchRow.id)
        .where(MatchRow.ladder == ladder, MatchRow.status == "running")
    ).all()
    running = [r for r in running if (r.referee_id or "") in live]  # a dead host's bots are free
    history, cap = _recent(s, ladder, policy)
    snap = Snapshot(
        now=now,
        wall=datetime.now(UTC).timestamp(),
        waiting=_waiting(s, ladder, live),
        hosts=hosts_of(live),
        history=history,
        cap=cap,
    )
    for _, host, bot in running:
        snap.busy[bot] += 1
        snap.busy_on.setdefault(bot, set()).add(host or "")
    for host in [h for _, h in {(m, h or "") for m, h, _ in running}]:
        snap.load[host] += 1
    for row in pending:
        snap.load[row.host_id] += 1
        for x in row.seats:
            snap.busy[x["bot"]] += 1
            snap.busy_on.setdefault(x["bot"], set()).add(row.host_id)
            if x["pass"]:
                snap.moving.add(x["ticket"])
    snap.matches = len({m for m, _, _ in running}) + len(pending)
    snap.ordinals = _ordinals(s, ladder, {t.bot_id for t in snap.waiting})
    return snap


def _waiting(s: Session, ladder: str, live: Mapping[str, RefereeRow]) -> list[Waiting]:
    rows = s.execute(
        select(TicketRow)
        .join(BotRow, BotRow.id == TicketRow.bot_id)
        .where(
            TicketRow.ladder == ladder,
            TicketRow.slots > 0,
            TicketRow.referee_id.in_(list(live)),
            BotRow.status == "active",
        )
        .order_by(TicketRow.since, TicketRow.id)
    ).scalars()
    return [Waiting(t.id, t.bot_id, t.referee_id, t.slots, t.max_matches, t.since) for t in rows]


def hosts_of(live: Mapping[str, RefereeRow]) -> dict[str, Host]:
    """Hosts from what each live referee published (no status yet: it may host)."""
    return {
        rid: Host(rid, draining=bool(r.draining), admits=bool((r.status or {}).get("admits", True)))
        for rid, r in live.items()
    }


def _recent(s: Session, ladder: str, policy: Policy) -> tuple[History, MeetingCap]:
    """The repeat window and the meeting cap as the store's recent matches give them."""
    history = History(policy.repeat_window)
    cap = MeetingCap(policy.repeat_cap, policy.repeat_cap_window_s)
    since = datetime.now(UTC) - timedelta(seconds=max(policy.repeat_cap_window_s, 3600.0))
    rows = s.execute(
        select(MatchRow.id, MatchRow.started_at)
        .where(MatchRow.ladder == ladder, MatchRow.started_at >= since)
        .order_by(MatchRow.started_at.desc())
        .limit(HISTORY_LIMIT)
    ).all()
    if not rows:
        return history, cap
    started: dict[str, datetime] = dict(rows)
    groups = seat_bots(s, list(started))
    for m in sorted(started, key=lambda m: aware(started[m])):
        history.record(groups[m])
        cap.record(groups[m], aware(started[m]).timestamp())
    for row in s.scalars(select(AssignmentRow).where(AssignmentRow.ladder == ladder)):
        bots = [x["bot"] for x in row.seats]
        history.record(bots)
        cap.record(bots, datetime.now(UTC).timestamp())
    return history, cap


def _ordinals(s: Session, ladder: str, bots: set[int]) -> dict[int, float]:
    """Each bot's ordinal on the ladder (a bot with no rating row yet has the starting one)."""
    start = Rating().ordinal
    rows = s.execute(
        select(RatingRow.bot_id, RatingRow.mu, RatingRow.sigma).where(
            RatingRow.ladder == ladder, RatingRow.bot_id.in_(sorted(bots))
        )
    ).all()
    found = {bot: Rating(mu, sigma).ordinal for bot, mu, sigma in rows}
    return {bot: found.get(bot, start) for bot in bots}


def _assignment(row: AssignmentRow, live: Mapping[str, RefereeRow]) -> Assignment:
    host = live.get(row.host_id)
    return Assignment(
        match_id=row.match_id,
        ladder=row.ladder,
        host_id=row.host_id,
        host_address=(host.address if host is not None else None) or "",
        seed=bytes.fromhex(row.seed),
        created=row.created,
        seats=tuple(
            AssignedSeat(x["bot"], x["name"], x["ticket"], x["referee"], x["pass"])
            for x in row.seats
        ),
        twin_of=row.twin_of or "",
        rotation=row.rotation or 0,
    )
