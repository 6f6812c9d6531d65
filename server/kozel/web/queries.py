"""Read-only ladder queries for the web (bots, rating history, match lists with cursor paging,
results against each opponent). Reads the tables of :mod:`kozel.ladder.models` through the
ladder store's engine; writes nothing. Every query has a bound on the rows it returns."""

from __future__ import annotations

import base64
import binascii
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import overload

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session

from kozel.ladder.models import BotRow, MatchRow, MatchSeatRow, RatingRow
from kozel.ladder.store import Store, standing_of
from kozel.web.rows import (
    BotInfo,
    Ladder,
    LadderRating,
    MatchSummary,
    Opponent,
    RatingFigures,
    RatingPoint,
    SeatSummary,
)

OUTCOMES = ("wins", "losses", "draws")


class CursorError(ValueError):
    """A paging cursor this server did not hand out."""


@dataclass(frozen=True, slots=True)
class MatchFilter:
    """Filters of a match list (None: any)."""

    ladder: str | None = None
    bot: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    reason: str | None = None
    status: str | None = None


@overload
def _utc(when: datetime) -> datetime: ...
@overload
def _utc(when: None) -> None: ...
def _utc(when: datetime | None) -> datetime | None:
    """Datetimes as stored: SQLite gives them back naive (they were written in UTC)."""
    if when is None:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def encode_cursor(started_at: datetime, match_id: str) -> str:
    raw = f"{_utc(started_at).isoformat()}|{match_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        when, match_id = raw.split("|", 1)
        return datetime.fromisoformat(when), match_id
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise CursorError("the cursor is not one this server handed out") from None


class WebQueries:
    """Queries over one ladder store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _session(self) -> Session:
        return Session(self.store.engine)

    def ladders(self) -> list[Ladder]:
        """Every ladder the store has matches or ratings for, with counts."""
        with self._session() as s:
            bots = dict(
                s.execute(select(RatingRow.ladder, func.count()).group_by(RatingRow.ladder)).all()
            )
            last = dict(
                s.execute(
                    select(MatchRow.ladder, func.max(MatchRow.ended_at))
                    .where(MatchRow.status == "finished")
                    .group_by(MatchRow.ladder)
                ).all()
            )
            counts: dict[str, dict[str, int]] = {}
            for ladder, status, n in s.execute(
                select(MatchRow.ladder, MatchRow.status, func.count()).group_by(
                    MatchRow.ladder, MatchRow.status
                )
            ):
                counts.setdefault(ladder, {})[status] = n
        names = sorted(set(bots) | set(counts))
        return [
            Ladder(
                name=n,
                bots=bots.get(n, 0),
                matches=counts.get(n, {}),
                last_match_at=_utc(last.get(n)),
            )
            for n in names
        ]

    def bot(self, name: str) -> BotInfo | None:
        """A bot and its rating on each ladder, or None."""
        with self._session() as s:
            row = s.scalar(select(BotRow).where(BotRow.name == name))
            if row is None:
                return None
            ratings = s.scalars(
                select(RatingRow).where(RatingRow.bot_id == row.id).order_by(RatingRow.ladder)
            ).all()
            return BotInfo(
                name=row.name,
                status=row.status,
                created_at=_utc(row.created_at),
                plays_people=row.plays_people,
                ladders=[
                    LadderRating(ladder=r.ladder, **RatingFigures.figures(standing_of(r, name)))
                    for r in ratings
                ],
            )

    def rating_history(self, name: str, ladder: str, limit: int) -> list[RatingPoint]:
        """The bot's rating after each of its last ``limit`` rated matches, oldest first."""
        with self._session() as s:
            rows = s.execute(
                select(
                    MatchRow.id, MatchRow.ended_at, MatchSeatRow.mu_after, MatchSeatRow.sigma_after
                )
                .join(MatchSeatRow, MatchSeatRow.match_id == MatchRow.id)
                .join(BotRow, BotRow.id == MatchSeatRow.bot_id)
                .where(
                    BotRow.name == name,
                    MatchRow.ladder == ladder,
                    MatchRow.status == "finished",
                    MatchSeatRow.mu_after.is_not(None),
                )
                .order_by(MatchRow.ended_at.desc(), MatchRow.id.desc())
                .limit(limit)
            ).all()
        return [
            RatingPoint(match_id=m, at=_utc(at), mu=mu, sigma=sigma)
            for m, at, mu, sigma in reversed(rows)
        ]

    def matches(
        self, f: MatchFilter, limit: int, cursor: str | None = None
    ) -> tuple[list[MatchSummary], str | None]:
        """Matches newest first, one page of at most ``limit``; returns (page, next cursor)."""
        q = select(MatchRow)
        if f.ladder is not None:
            q = q.where(MatchRow.ladder == f.ladder)
        if f.status is not None:
            q = q.where(MatchRow.status == f.status)
        if f.reason is not None:
            q = q.where(MatchRow.reason == f.reason)
        if f.since is not None:
            q = q.where(MatchRow.started_at >= f.since)
        if f.until is not None:
            q = q.where(MatchRow.started_at < f.until)
        if f.bot is not None:
            q = q.where(
                MatchRow.id.in_(
                    select(MatchSeatRow.match_id).join(BotRow).where(BotRow.name == f.bot)
                )
            )
        if cursor:
            when, last = decode_cursor(cursor)
            if self.store.engine.dialect.name == "sqlite":
                when = when.astimezone(UTC).replace(tzinfo=None)
            q = q.where(
                or_(
                    MatchRow.started_at < when,
                    and_(MatchRow.started_at == when, MatchRow.id < last),
                )
            )
        q = q.order_by(MatchRow.started_at.desc(), MatchRow.id.desc()).limit(limit + 1)
        with self._session() as s:
            rows = list(s.scalars(q))
            seats = self._seats(s, [r.id for r in rows[:limit]])
        page = [_match(r, seats.get(r.id, [])) for r in rows[:limit]]
        more = len(rows) > limit
        return page, encode_cursor(rows[limit - 1].started_at, rows[limit - 1].id) if more else None

    @staticmethod
    def _seats(s: Session, ids: list[str]) -> dict[str, list[SeatSummary]]:
        out: dict[str, list[SeatSummary]] = {}
        if not ids:
            return out
        for x, name in s.execute(
            select(MatchSeatRow, BotRow.name)
            .join(BotRow)
            .where(MatchSeatRow.match_id.in_(ids))
            .order_by(MatchSeatRow.match_id, MatchSeatRow.seat)
        ):
            out.setdefault(x.match_id, []).append(
                SeatSummary(
                    seat=x.seat,
                    side=x.side,
                    bot=name,
                    rank=x.rank,
                    penalty=x.penalty,
                    mu_before=x.mu_before,
                    mu_after=x.mu_after,
                )
            )
        return out

    def opponents(self, name: str, limit: int) -> list[Opponent]:
        """Results against each opponent over the bot's last ``limit`` finished matches: a win
        is a better rank than the opponent's, a loss a worse one (teammates are skipped)."""
        with self._session() as s:
            bot_id = s.scalar(select(BotRow.id).where(BotRow.name == name))
            if bot_id is None:
                return []
            ids = list(
                s.scalars(
                    select(MatchRow.id)
                    .join(MatchSeatRow, MatchSeatRow.match_id == MatchRow.id)
                    .where(MatchSeatRow.bot_id == bot_id, MatchRow.status == "finished")
                    .order_by(MatchRow.started_at.desc())
                    .limit(limit)
                )
            )
            seats = self._seats(s, ids)
        tally: dict[str, Counter[str]] = {}
        for match_seats in seats.values():
            me = next((x for x in match_seats if x.bot == name), None)
            if me is None or me.rank is None:
                continue
            for x in match_seats:
                if x.side == me.side or x.rank is None:
                    continue
                won = "wins" if me.rank < x.rank else "losses" if me.rank > x.rank else "draws"
                tally.setdefault(x.bot, Counter())[won] += 1
        table = [
            Opponent(opponent=bot, matches=c.total(), **{k: c[k] for k in OUTCOMES})
            for bot, c in tally.items()
        ]
        return sorted(table, key=lambda t: (-t.matches, t.opponent))


def _match(r: MatchRow, seats: list[SeatSummary]) -> MatchSummary:
    return MatchSummary(
        match_id=r.id,
        ladder=r.ladder,
        status=r.status,
        reason=r.reason,
        players=r.players,
        started_at=_utc(r.started_at),
        ended_at=_utc(r.ended_at),
        seats=seats,
    )
