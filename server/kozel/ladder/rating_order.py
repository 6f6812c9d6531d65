"""Ratings in the order matches ended, whatever the order their results reached the store.

A result committed late (after a store outage, a restore, an orphan's adoption, or just a
slower referee) is rated in its place: every finished match of its ladder that ended after it
is rated again, in end order, from the ratings its bots had just before (:func:`rerate`).
Operator resets are events in the same order. So a ladder's ratings are a function of its
results, their end times and its resets (:func:`kozel.ladder.ratings.replay`), and every
``rating_seq`` chain stays whole. A ladder's rating changes are serialised by a lock on its
``ladder_states`` row (:func:`lock_ladder`), taken before any rating row.

SQL only, in the caller's transaction (:mod:`kozel.ladder.store` calls it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime

from sqlalchemy import and_, exists, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from kozel.ladder.models import LadderStateRow, MatchRow, MatchSeatRow, RatingResetRow, RatingRow
from kozel.ladder.ratings import Change, RatedMatch, Rating, Reset, Standing, replay

Key = tuple[datetime, str]  # (end time, match id): the order ratings take results in


def aware(at: datetime) -> datetime:
    """A stored time in UTC (SQLite drops the zone)."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def lock_ladder(s: Session, ladder: str) -> LadderStateRow:
    """Lock ``ladder``'s state row (made on first use): rating changes of one ladder run one
    at a time, in every referee sharing the store."""
    row = s.get(LadderStateRow, ladder, with_for_update=True)
    if row is None:
        insert = pg_insert if s.get_bind().dialect.name == "postgresql" else sqlite_insert
        s.execute(
            insert(LadderStateRow)
            .values(ladder=ladder, state="running", changed_by="", reason="")
            .on_conflict_do_nothing()
        )
        row = s.get(LadderStateRow, ladder, with_for_update=True, populate_existing=True)
    assert row is not None
    return row


def rerate(
    s: Session,
    ladder: str,
    since: Key,
    bots: Iterable[int] = (),
    latest: tuple[Mapping[int, RatingRow], Sequence[MatchSeatRow]] | None = None,
) -> dict[str, dict[int, Change]]:
    """(Under :func:`lock_ladder`.) Rate again, in end order, every finished match of
    ``ladder`` that ended at ``since`` or later, with the resets among them; write each seat's
    change and each bot's final rating (also of ``bots``, whose last match may be gone).
    ``latest``: the rating rows (its record already counted in them) and the seats of the
    match at ``since``; when nothing ended or was reset after it (the usual commit), its bots
    start from those rows and nothing more is read. Returns the changes by match id and bot
    id."""
    if latest is not None and not _later(s, ladder, since, latest[0]):
        return _rate_latest(since[1], *latest)
    at, match_id = since
    tail = list(
        s.scalars(
            select(MatchRow)
            .where(
                MatchRow.ladder == ladder,
                MatchRow.status == "finished",
                or_(
                    MatchRow.ended_at > at,
                    and_(MatchRow.ended_at == at, MatchRow.id >= match_id),
                ),
            )
            .order_by(MatchRow.ended_at, MatchRow.id)
        )
    )
    seats = _seats(s, [m.id for m in tail])
    involved = {x.bot_id for rows in seats.values() for x in rows} | set(bots)
    resets = list(
        s.scalars(
            select(RatingResetRow).where(
                RatingResetRow.ladder == ladder,
                RatingResetRow.bot_id.in_(sorted(involved)),
                RatingResetRow.at > at,
            )
        )
    )
    involved |= {r.bot_id for r in resets}
    start = {bot: standing_before(s, ladder, bot, since) for bot in involved}
    events: list[tuple[Key, RatedMatch | Reset]] = [
        ((aware(m.ended_at or at), m.id), _rated(m.id, seats[m.id])) for m in tail
    ]
    events += [((aware(r.at), ""), Reset(r.bot_id)) for r in resets]
    events.sort(key=lambda e: e[0])
    changes, final = replay(start, [e for _, e in events])
    for m in tail:
        for x in seats[m.id]:
            _write_change(x, changes[m.id][x.bot_id])
    _write_final(s, ladder, final)
    return changes


def _later(s: Session, ladder: str, since: Key, bots: Iterable[int]) -> bool:
    """Whether a match of ``ladder`` ended, or one of ``bots`` was reset, after ``since``
    (one round trip: the usual commit reads nothing else)."""
    at, match_id = since
    later_match = exists().where(
        MatchRow.ladder == ladder,
        MatchRow.status == "finished",
        or_(MatchRow.ended_at > at, and_(MatchRow.ended_at == at, MatchRow.id > match_id)),
    )
    later_reset = exists().where(
        RatingResetRow.ladder == ladder,
        RatingResetRow.bot_id.in_(sorted(bots)),
        RatingResetRow.at > at,
    )
    return bool(s.scalar(select(or_(later_match, later_reset))))


def _rate_latest(
    match_id: str, rows: Mapping[int, RatingRow], seats: Sequence[MatchSeatRow]
) -> dict[str, dict[int, Change]]:
    """The usual commit: the newest match of its ladder, rated from its bots' rows."""
    start = {b: Standing(Rating(r.mu, r.sigma), r.matches - 1) for b, r in rows.items()}
    changes, final = replay(start, [_rated(match_id, list(seats))])
    for x in seats:
        _write_change(x, changes[match_id][x.bot_id])
    for bot, standing in final.items():
        rows[bot].mu, rows[bot].sigma = standing.rating.mu, standing.rating.sigma
    return changes


def standing_before(s: Session, ladder: str, bot: int, since: Key) -> Standing:
    """A bot's rating and rated-match count just before ``since``: after its last finished
    match before it, unless an operator reset it after that match."""
    at, match_id = since
    prev = s.execute(
        select(
            MatchSeatRow.mu_after,
            MatchSeatRow.sigma_after,
            MatchSeatRow.rating_seq,
            MatchRow.ended_at,
        )
        .join(MatchRow, MatchRow.id == MatchSeatRow.match_id)
        .where(
            MatchRow.ladder == ladder,
            MatchRow.status == "finished",
            MatchSeatRow.bot_id == bot,
            or_(MatchRow.ended_at < at, and_(MatchRow.ended_at == at, MatchRow.id < match_id)),
        )
        .order_by(MatchRow.ended_at.desc(), MatchRow.id.desc())
        .limit(1)
    ).first()
    reset = s.scalar(
        select(RatingResetRow.at)
        .where(
            RatingResetRow.ladder == ladder,
            RatingResetRow.bot_id == bot,
            RatingResetRow.at <= at,
        )
        .order_by(RatingResetRow.at.desc())
        .limit(1)
    )
    if prev is None:
        return Standing()
    mu, sigma, seq, ended = prev
    if (reset is not None and ended is not None and aware(reset) > aware(ended)) or mu is None:
        return Standing(Rating(), seq or 0)
    return Standing(Rating(mu, sigma or Rating().sigma), seq or 0)


def _seats(s: Session, match_ids: list[str]) -> dict[str, list[MatchSeatRow]]:
    out: dict[str, list[MatchSeatRow]] = {m: [] for m in match_ids}
    for i in range(0, len(match_ids), 500):
        for row in s.scalars(
            select(MatchSeatRow)
            .where(MatchSeatRow.match_id.in_(match_ids[i : i + 500]))
            .order_by(MatchSeatRow.match_id, MatchSeatRow.seat)
        ):
            out[row.match_id].append(row)
    return out


def _rated(match_id: str, seats: list[MatchSeatRow]) -> RatedMatch:
    sides = sorted({x.side for x in seats})
    return RatedMatch(
        match_id,
        tuple(tuple(x.bot_id for x in seats if x.side == side) for side in sides),
        tuple(next(x.rank or 0 for x in seats if x.side == side) for side in sides),
    )


def _write_change(seat: MatchSeatRow, change: Change) -> None:
    seat.mu_before = change.before.mu
    seat.mu_after, seat.sigma_after = change.after.mu, change.after.sigma
    seat.rating_seq = change.seq


def _write_final(s: Session, ladder: str, final: dict[int, Standing]) -> None:
    if not final:
        return
    rows = s.scalars(
        select(RatingRow)
        .where(RatingRow.ladder == ladder, RatingRow.bot_id.in_(sorted(final)))
        .order_by(RatingRow.bot_id)
        .with_for_update()
    )
    for row in rows:
        standing = final[row.bot_id]
        row.mu, row.sigma = standing.rating.mu, standing.rating.sigma
