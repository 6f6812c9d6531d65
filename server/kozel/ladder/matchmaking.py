"""Matchmaking shared through the store, for ladders that several referees serve at once.

A waiting bot is a ticket row, kept by the referee that holds its stream. Each referee polls
(:func:`poll`): in one transaction it replaces its own tickets, and, if it holds the ladder's
host row (one referee at a time, taken over when its lease lapses), it runs the ladder's
scheduler over the tickets of every live referee, with the same policy as a referee alone
(:func:`kozel.ladder.scheduler.pick`: near in rating, longest waiting first, soft repeat window,
hard meeting cap, shuffled seats). The repeat window, the meeting cap and every bot's running
matches are read from the store at each pass, so they hold across referees and survive a new
scheduler. A formed match becomes an assignment: a host (a referee that holds one of its bots;
the one that holds a busy bot's other matches, if any), a seed, and a one-time pass for every
bot to be redirected there. The host starts it (:func:`start_assigned`), which turns it into a
running match in the same transaction.
"""

from __future__ import annotations

import random
import secrets
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from kozel.ladder.models import (
    AssignmentRow,
    BotRow,
    LadderHostRow,
    MatchRow,
    MatchSeatRow,
    RatingRow,
    RefereeRow,
    TicketRow,
)
from kozel.ladder.ratings import Rating
from kozel.ladder.scheduler import Entrant, History, MeetingCap, pick
from kozel.ladder.store import Store, add_match, db_now, seat_bots

HISTORY_LIMIT = 5000  # recent matches read per pass for the repeat window and meeting cap


@dataclass(frozen=True, slots=True)
class Ticket:
    """A waiting session as its referee publishes it."""

    id: str
    bot_id: int
    slots: int  # free match slots
    max_matches: int  # what the session declared


@dataclass(frozen=True, slots=True)
class Policy:
    """What the scheduler of one ladder needs from its definition."""

    players: int
    max_concurrent_matches: int
    repeat_window: int
    repeat_cap: int
    repeat_cap_window_s: float
    rating_scale: float
    patience_s: float = 1.0
    expire_s: float = 30.0  # an assignment its host has not started by then is dropped


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
    twin_of: str = ""  # the first half's match id, for a duplicate twin


def poll(
    store: Store,
    referee_id: str,
    tickets: Mapping[str, Sequence[Ticket]],
    policies: Mapping[str, Policy],
    rng: random.Random | None = None,
) -> tuple[list[Assignment], float]:
    """(Blocking.) Replace ``referee_id``'s tickets of each ladder in ``tickets``, schedule the
    ladders of ``policies`` it hosts, and return every pending assignment that involves it (as
    host or as the holder of a seat) with the database's time."""
    rng = rng or random.Random()
    with store.transaction() as s:
        now = db_now(s)
        for ladder, published in tickets.items():
            _replace_tickets(s, referee_id, ladder, published, now)
        live = dict(
            s.execute(
                select(RefereeRow.id, RefereeRow.address).where(RefereeRow.lease_until > now)
            ).all()
        )
        if referee_id in live:
            hosted = s.scalars(
                select(LadderHostRow.ladder)
                .where(
                    LadderHostRow.referee_id == referee_id,
                    LadderHostRow.ladder.in_(sorted(policies)),
                )
                .order_by(LadderHostRow.ladder)
                .with_for_update()  # two schedulers never overlap, even across a takeover
            )
            for ladder in list(hosted):
                _schedule(s, ladder, policies[ladder], now, live, rng)
        rows = s.scalars(
            select(AssignmentRow).where(AssignmentRow.ladder.in_(sorted(policies)))
        ).all()
        out = [
            _assignment(row, live)
            for row in rows
            if row.host_id == referee_id or any(x["referee"] == referee_id for x in row.seats)
        ]
    return out, now


def start_assigned(
    store: Store,
    match_id: str,
    ladder: str,
    seats: Sequence[tuple[int, int, int]],
    host_id: str,
    replay_path: str | None,
) -> None:
    """(Blocking.) The host starts an assignment (``seats``: seat, side, bot id): it becomes a
    running match in the same transaction. A match whose assignment expired meanwhile is
    recorded all the same: it is being played, and its result counts."""
    with store.transaction() as s:
        row = s.get(AssignmentRow, match_id, with_for_update=True)
        redirected = sum(bool(x["pass"]) for x in row.seats) if row is not None else None
        if row is not None:
            s.delete(row)
        if s.get(MatchRow, match_id) is None:
            add_match(
                s, match_id, ladder, len(seats), seats, host_id, replay_path, datetime.now(UTC)
            )
            s.get_one(MatchRow, match_id).redirected = redirected


def add_twin(
    s: Session,
    first: str,
    ladder: str,
    host_id: str,
    seed: bytes,
    seats: Sequence[tuple[str, int, str]],
) -> None:
    """(In the transaction that commits the first half ``first`` of a duplicate pair.) Assign
    its twin to the same host: the same seed, ``seats`` (ticket, bot id, name) rotated by the
    caller. Its bots are busy from now on, so no scheduler pairs them elsewhere meanwhile."""
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
        )
    )


def drop_tickets(store: Store, referee_id: str) -> None:
    """(Blocking.) Remove every ticket of a referee (at its stop)."""
    with store.transaction() as s:
        s.execute(delete(TicketRow).where(TicketRow.referee_id == referee_id))


def _replace_tickets(
    s: Session, referee_id: str, ladder: str, published: Sequence[Ticket], now: float
) -> None:
    rows = {
        r.id: r
        for r in s.scalars(
            select(TicketRow).where(TicketRow.referee_id == referee_id, TicketRow.ladder == ladder)
        )
    }
    keep = {t.id: t for t in published}
    for tid, old in rows.items():
        if tid not in keep:
            s.delete(old)
    for tid, t in keep.items():
        row = rows.get(tid)
        if row is None:
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
        else:
            row.slots, row.max_matches = t.slots, t.max_matches
    s.flush()


def _schedule(
    s: Session,
    ladder: str,
    policy: Policy,
    now: float,
    live: Mapping[str, str | None],
    rng: random.Random,
) -> None:
    """One scheduler pass over a ladder (the caller holds its host row)."""
    pending = list(s.scalars(select(AssignmentRow).where(AssignmentRow.ladder == ladder)))
    for row in pending:  # its host died or never started it: the bots wait again
        if row.host_id not in live or now - row.created > policy.expire_s:
            s.delete(row)
    pending = [r for r in pending if r.host_id in live and now - r.created <= policy.expire_s]
    running = s.execute(
        select(MatchRow.id, MatchRow.referee_id, MatchSeatRow.bot_id)
        .join(MatchSeatRow, MatchSeatRow.match_id == MatchRow.id)
        .where(MatchRow.ladder == ladder, MatchRow.status == "running")
    ).all()
    busy: Counter[int] = Counter()  # bot -> matches running or assigned
    hosts: dict[int, set[str]] = {}  # bot -> referees hosting those
    for _, host, bot in running:
        busy[bot] += 1
        hosts.setdefault(bot, set()).add(host or "")
    moved: set[str] = set()  # tickets whose session is being redirected
    for row in pending:
        for x in row.seats:
            busy[x["bot"]] += 1
            hosts.setdefault(x["bot"], set()).add(row.host_id)
            if x["pass"]:
                moved.add(x["ticket"])
    matches = len({m for m, _, _ in running}) + len(pending)
    if matches >= policy.max_concurrent_matches:
        return
    tickets = list(
        s.scalars(
            select(TicketRow)
            .join(BotRow, BotRow.id == TicketRow.bot_id)
            .where(
                TicketRow.ladder == ladder,
                TicketRow.slots > 0,
                TicketRow.referee_id.in_(list(live)),
                BotRow.status == "active",
            )
            .order_by(TicketRow.since, TicketRow.id)
        )
    )
    tickets = [t for t in tickets if t.id not in moved]
    names = dict(
        s.execute(
            select(BotRow.id, BotRow.name).where(BotRow.id.in_(sorted({t.bot_id for t in tickets})))
        ).all()
    )
    declared: dict[int, int] = {}
    for t in tickets:
        declared[t.bot_id] = max(declared.get(t.bot_id, 0), t.max_matches)
    history, cap = _recent(s, ladder, policy)
    ordinals = _ordinals(s, ladder, {t.bot_id for t in tickets})
    load: Counter[str] = Counter(h or "" for _, h in {(m, h) for m, h, _ in running})
    for row in pending:
        load[row.host_id] += 1
    wall = datetime.now(UTC).timestamp()
    entrants = [Entrant(t, t.bot_id, ordinals[t.bot_id], t.since) for t in tickets]
    while matches < policy.max_concurrent_matches:
        free = [e for e in entrants if e.key.slots > 0 and busy[e.bot_id] < declared[e.bot_id]]  # type: ignore[attr-defined]
        if len({e.bot_id for e in free}) < policy.players:
            return
        patient = now - min(e.since for e in free) < policy.patience_s
        group = pick(
            free,
            policy.players,
            history,
            policy.rating_scale,
            rng,
            allow_repeat=not patient,
            blocked=lambda ids: cap.blocked(ids, now=wall),
        )
        if group is None:
            return
        chosen: list[TicketRow] = [e.key for e in group]  # type: ignore[misc]
        # A session that plays matches on its referee cannot move: the match goes there.
        pinned = {t.referee_id for t in chosen if t.referee_id in hosts.get(t.bot_id, ())}
        if len(pinned) > 1:  # busy on two referees: leave those tickets to a later pass
            stuck = {t.id for t in chosen if t.referee_id in hosts.get(t.bot_id, ())}
            entrants = [e for e in entrants if e.key.id not in stuck]  # type: ignore[attr-defined]
            continue
        host = _host(chosen, pinned, load, rng)
        seats = [
            {
                "bot": t.bot_id,
                "name": names[t.bot_id],
                "ticket": t.id,
                "referee": t.referee_id,
                "pass": "" if t.referee_id == host else secrets.token_urlsafe(24),
            }
            for t in chosen
        ]
        s.add(
            AssignmentRow(
                match_id=uuid.uuid4().hex,
                ladder=ladder,
                host_id=host,
                seed=secrets.token_bytes(32).hex(),
                created=now,
                seats=seats,
            )
        )
        ids = [t.bot_id for t in chosen]
        for t, e in zip(chosen, group):
            # A redirected session moves to the host: it has no other slot here.
            t.slots = t.slots - 1 if t.referee_id == host else 0
            t.since = e.since = now
            busy[t.bot_id] += 1
            hosts.setdefault(t.bot_id, set()).add(host)
        history.record(ids)
        cap.record(ids, wall)
        load[host] += 1
        matches += 1
    s.flush()


def _host(
    chosen: Sequence[TicketRow], pinned: set[str], load: Counter[str], rng: random.Random
) -> str:
    """The referee that hosts a group: the one its busy bots play on, else the one holding
    most of its bots, the least loaded of those, else any of those."""
    if pinned:
        return next(iter(pinned))
    held = Counter(t.referee_id for t in chosen)
    most = max(held.values())
    best = [r for r, n in held.items() if n == most]
    least = min(load[r] for r in best)
    return rng.choice(sorted(r for r in best if load[r] == least))


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
    for m in sorted(started, key=lambda m: _aware(started[m])):
        history.record(groups[m])
        cap.record(groups[m], _aware(started[m]).timestamp())
    for row in s.scalars(select(AssignmentRow).where(AssignmentRow.ladder == ladder)):
        bots = [x["bot"] for x in row.seats]
        history.record(bots)
        cap.record(bots, datetime.now(UTC).timestamp())
    return history, cap


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)  # SQLite drops the zone


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


def _assignment(row: AssignmentRow, live: Mapping[str, str | None]) -> Assignment:
    return Assignment(
        match_id=row.match_id,
        ladder=row.ladder,
        host_id=row.host_id,
        host_address=live.get(row.host_id) or "",
        seed=bytes.fromhex(row.seed),
        created=row.created,
        seats=tuple(
            AssignedSeat(x["bot"], x["name"], x["ticket"], x["referee"], x["pass"])
            for x in row.seats
        ),
        twin_of=row.twin_of or "",
    )
