"""The ladder's persistent store: the only module that speaks SQL.

SQLite by default (a file in the data folder, WAL mode) or PostgreSQL by URL. The schema is
versioned with Alembic migrations (:meth:`Store.migrate`). A finished match's result, its
rating update and its replay reference are committed in one transaction, after the replay
file is on disk, so a crash at any moment loses no finished match and leaves no half-applied
rating; matches that were running when the process died are marked aborted on restart.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, event, func, inspect, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import sessionmaker

from kozel.ladder.models import BotRow, MatchRow, MatchSeatRow, RatingRow
from kozel.ladder.ratings import Rating, rate

MIGRATIONS = Path(__file__).with_name("migrations")
BOT_STATUSES = ("active", "paused", "retired")


class StoreError(ValueError):
    """A request the store refuses (duplicate name, unknown bot ...)."""


@dataclass(frozen=True, slots=True)
class Bot:
    id: int
    name: str
    status: str


@dataclass(frozen=True, slots=True)
class Standing:
    """One line of a ladder's standings."""

    name: str
    ordinal: float
    mu: float
    sigma: float
    matches: int
    wins: int
    avg_penalty: float
    timeouts: int
    forfeits: int


@dataclass(frozen=True, slots=True)
class SeatResult:
    """What a finished match says about one seat."""

    seat: int
    side: int
    bot_id: int
    rank: int  # of its side, 1 is best
    penalty: int
    won: bool
    timeouts: int
    forfeited: bool


@dataclass(frozen=True, slots=True)
class SeatDetail:
    """One seat of a stored match; rank, penalty and rating fields are set once it is rated."""

    seat: int
    side: int
    bot: str
    rank: int | None
    penalty: int | None
    mu_before: float | None
    mu_after: float | None
    sigma_after: float | None


@dataclass(frozen=True, slots=True)
class MatchDetail:
    """A stored ladder match with its seats."""

    id: str
    ladder: str
    status: str
    players: int
    started_at: datetime
    ended_at: datetime | None
    reason: str | None
    replay_path: str | None
    result: dict[str, Any] | None
    seats: tuple[SeatDetail, ...]


# A fixed prefix makes tokens easy for secret scanners to spot, and means a token never starts
# with "-", which a command line would take for an option.
TOKEN_PREFIX = "kzb_"


def hash_token(token: str) -> str:
    """Tokens are 256-bit random strings, so a plain SHA-256 is a safe, fast lookup key."""
    return hashlib.sha256(token.encode()).hexdigest()


def default_url(data_dir: Path) -> str:
    return f"sqlite:///{Path(data_dir) / 'kozel.db'}"


class Store:
    """Open with a SQLAlchemy URL; call :meth:`migrate` once at start."""

    def __init__(self, url: str) -> None:
        if url.startswith("sqlite:///"):
            Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        self.engine: Engine = create_engine(url, pool_pre_ping=True)
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
            # SQLite transactions must really start at BEGIN (pysqlite would defer them to the
            # first write): IMMEDIATE takes the write lock at once, so two result commits can
            # never read the same rating and lose an update. PostgreSQL locks rows FOR UPDATE.
            event.listen(self.engine, "begin",
                         lambda conn: conn.exec_driver_sql("BEGIN IMMEDIATE"))
        self._session = sessionmaker(self.engine, expire_on_commit=False)

    def close(self) -> None:
        self.engine.dispose()

    # -- schema --------------------------------------------------------------------------------

    def migrate(self) -> str:
        """Bring the schema to the newest version; returns that version."""
        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        with self.engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
        return self.schema_version()

    def schema_version(self) -> str:
        with self.engine.connect() as conn:
            if not inspect(conn).has_table("alembic_version"):
                return ""
            return conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() or ""

    # -- bots ----------------------------------------------------------------------------------

    def register_bot(self, name: str) -> str:
        """Create a bot; returns its token, which is stored only as a hash."""
        if not 1 <= len(name) <= 64:
            raise StoreError("a bot name has 1 to 64 characters")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        try:
            with self._session.begin() as s:
                s.add(BotRow(name=name, token_hash=hash_token(token), status="active",
                             created_at=datetime.now(UTC)))
        except IntegrityError:
            raise StoreError(f"a bot named {name!r} exists; register a new version under a "
                             "new name") from None
        return token

    def authenticate(self, token: str) -> Bot | None:
        """The active bot a token belongs to, or None."""
        with self._session() as s:
            row = s.scalar(select(BotRow).where(BotRow.token_hash == hash_token(token)))
            if row is None or row.status != "active":
                return None
            return Bot(row.id, row.name, row.status)

    def set_status(self, name: str, status: str) -> None:
        if status not in BOT_STATUSES:
            raise StoreError(f"status must be one of {', '.join(BOT_STATUSES)}")
        with self._session.begin() as s:
            row = s.scalar(select(BotRow).where(BotRow.name == name))
            if row is None:
                raise StoreError(f"no bot named {name!r}")
            row.status = status

    def bot(self, name: str) -> Bot | None:
        with self._session() as s:
            row = s.scalar(select(BotRow).where(BotRow.name == name))
            return None if row is None else Bot(row.id, row.name, row.status)

    def ensure_rating(self, ladder: str, bot_id: int) -> None:
        """Give a bot its starting rating on a ladder if it has none (call from one place at a
        time: result commits then only ever update existing rows)."""
        with self._session.begin() as s:
            exists = s.scalar(select(RatingRow.id).where(RatingRow.ladder == ladder,
                                                         RatingRow.bot_id == bot_id))
            if exists is None:
                s.add(RatingRow(ladder=ladder, bot_id=bot_id, mu=Rating().mu,
                                sigma=Rating().sigma, matches=0, wins=0, penalty_sum=0,
                                timeouts=0, forfeits=0))

    def reset_rating(self, ladder: str, name: str) -> None:
        """Start a bot again from the default rating on a ladder (its record is kept)."""
        bot = self.bot(name)
        if bot is None:
            raise StoreError(f"no bot named {name!r}")
        with self._session.begin() as s:
            row = s.scalar(select(RatingRow).where(RatingRow.ladder == ladder,
                                                   RatingRow.bot_id == bot.id))
            if row is not None:
                row.mu, row.sigma = Rating().mu, Rating().sigma

    # -- matches -------------------------------------------------------------------------------

    def start_match(self, match_id: str, ladder: str, players: int,
                    seats: Sequence[tuple[int, int, int]]) -> None:
        """Record a running match; ``seats`` holds (seat, side, bot_id)."""
        with self._session.begin() as s:
            s.add(MatchRow(id=match_id, ladder=ladder, status="running", players=players,
                           started_at=datetime.now(UTC)))
            s.flush()
            for seat, side, bot_id in seats:
                s.add(MatchSeatRow(match_id=match_id, seat=seat, side=side, bot_id=bot_id))

    def finish_match(self, match_id: str, *, reason: str, replay_path: str,
                     result: dict[str, Any], seats: Sequence[SeatResult]) -> dict[int, Rating]:
        """Commit a finished match, its rating update and its replay reference at once.

        Call only after the replay file is safely on disk. Returns the new rating per bot id.
        """
        with self._session.begin() as s:
            match = s.get(MatchRow, match_id, with_for_update=True)
            if match is None or match.status != "running":
                raise StoreError(f"match {match_id} is not running")
            ratings = {r.bot_id: r for r in s.scalars(  # locked in one order: no deadlock
                select(RatingRow).where(RatingRow.ladder == match.ladder,
                                        RatingRow.bot_id.in_([x.bot_id for x in seats]))
                .order_by(RatingRow.bot_id).with_for_update())}
            for x in seats:
                if x.bot_id not in ratings:
                    row = RatingRow(ladder=match.ladder, bot_id=x.bot_id, mu=Rating().mu,
                                    sigma=Rating().sigma, matches=0, wins=0, penalty_sum=0,
                                    timeouts=0, forfeits=0)
                    s.add(row)
                    ratings[x.bot_id] = row
            sides = sorted({x.side for x in seats})
            teams = [[x for x in seats if x.side == side] for side in sides]
            new = rate([[Rating(ratings[x.bot_id].mu, ratings[x.bot_id].sigma) for x in team]
                        for team in teams], [team[0].rank for team in teams])
            out: dict[int, Rating] = {}
            seat_rows = {r.seat: r for r in s.scalars(
                select(MatchSeatRow).where(MatchSeatRow.match_id == match_id))}
            for team, rated in zip(teams, new):
                for x, r in zip(team, rated):
                    row = ratings[x.bot_id]
                    seat_row = seat_rows[x.seat]
                    seat_row.rank, seat_row.penalty = x.rank, x.penalty
                    seat_row.mu_before, seat_row.mu_after = row.mu, r.mu
                    seat_row.sigma_after = r.sigma
                    row.mu, row.sigma = r.mu, r.sigma
                    row.matches += 1
                    row.wins += int(x.won)
                    row.penalty_sum += x.penalty
                    row.timeouts += x.timeouts
                    row.forfeits += int(x.forfeited)
                    out[x.bot_id] = r
            match.status, match.reason = "finished", reason
            match.replay_path, match.result = replay_path, result
            match.ended_at = datetime.now(UTC)
        return out

    def running_matches(self) -> dict[str, list[int]]:
        """Matches marked running, with their bot ids by seat."""
        with self._session() as s:
            rows = s.execute(select(MatchSeatRow.match_id, MatchSeatRow.seat, MatchSeatRow.bot_id)
                             .join(MatchRow).where(MatchRow.status == "running")
                             .order_by(MatchSeatRow.match_id, MatchSeatRow.seat)).all()
        out: dict[str, list[int]] = {}
        for match_id, _seat, bot_id in rows:
            out.setdefault(match_id, []).append(bot_id)
        return out

    def abort_running(self, reason: str = "aborted") -> list[str]:
        """Mark every running match aborted (after a crash or restart); no rating changes."""
        with self._session.begin() as s:
            rows = list(s.scalars(select(MatchRow).where(MatchRow.status == "running")))
            for row in rows:
                row.status, row.reason, row.ended_at = "aborted", reason, datetime.now(UTC)
            return [row.id for row in rows]

    def abort_match(self, match_id: str, reason: str = "aborted") -> None:
        """Mark one running match aborted (shutdown, or its replay could not be written)."""
        with self._session.begin() as s:
            row = s.get(MatchRow, match_id)
            if row is not None and row.status == "running":
                row.status, row.reason, row.ended_at = "aborted", reason, datetime.now(UTC)

    # -- queries -------------------------------------------------------------------------------

    def check_consistency(self) -> list[str]:
        """Problems that a crash must never leave behind (empty when all is well)."""
        problems = []
        with self._session() as s:
            finished = dict(s.execute(
                select(MatchSeatRow.bot_id, func.count()).join(MatchRow)
                .where(MatchRow.status == "finished").group_by(MatchSeatRow.bot_id)).all())
            rated = dict(s.execute(select(RatingRow.bot_id, func.sum(RatingRow.matches))
                                   .group_by(RatingRow.bot_id)).all())
            for bot in set(finished) | set(rated):
                if finished.get(bot, 0) != (rated.get(bot) or 0):
                    problems.append(f"bot {bot}: {finished.get(bot, 0)} finished match seats "
                                    f"but {rated.get(bot) or 0} rated matches")
            half = s.scalar(select(func.count()).select_from(MatchSeatRow).join(MatchRow)
                            .where(MatchRow.status != "finished",
                                   MatchSeatRow.mu_after.is_not(None)))
            if half:
                problems.append(f"{half} seats of unfinished matches carry a rating change")
            missing = s.scalar(select(func.count()).select_from(MatchRow).where(
                MatchRow.status == "finished", MatchRow.replay_path.is_(None)))
            if missing:
                problems.append(f"{missing} finished matches have no replay reference")
        return problems

    def standings(self, ladder: str) -> list[Standing]:
        """Bots on a ladder by ordinal (mu - 3 sigma), best first."""
        with self._session() as s:
            rows = s.execute(select(RatingRow, BotRow.name).join(BotRow)
                             .where(RatingRow.ladder == ladder)).all()
        out = [Standing(name, Rating(r.mu, r.sigma).ordinal, r.mu, r.sigma, r.matches, r.wins,
                        r.penalty_sum / r.matches if r.matches else 0.0, r.timeouts, r.forfeits)
               for r, name in rows]
        return sorted(out, key=lambda x: -x.ordinal)

    def match_counts(self, ladder: str | None = None) -> dict[str, int]:
        """Matches per status (for tests and operators)."""
        with self._session() as s:
            q = select(MatchRow.status, func.count()).group_by(MatchRow.status)
            if ladder is not None:
                q = q.where(MatchRow.ladder == ladder)
            return {status: n for status, n in s.execute(q).all()}

    def matches(self, *, ladder: str | None = None, bot: str | None = None,
                since: datetime | None = None, limit: int = 100) -> list[MatchRow]:
        """Matches, newest first, filtered by ladder, bot name and start time."""
        with self._session() as s:
            q = select(MatchRow).order_by(MatchRow.started_at.desc()).limit(limit)
            if ladder is not None:
                q = q.where(MatchRow.ladder == ladder)
            if since is not None:
                q = q.where(MatchRow.started_at >= since)
            if bot is not None:
                q = q.where(MatchRow.id.in_(
                    select(MatchSeatRow.match_id).join(BotRow).where(BotRow.name == bot)))
            return list(s.scalars(q))

    def match_detail(self, match_id: str) -> MatchDetail | None:
        """One match with its seats (bot names, ranks, rating changes), or None."""
        with self._session() as s:
            row = s.get(MatchRow, match_id)
            if row is None:
                return None
            seats = s.execute(select(MatchSeatRow, BotRow.name).join(BotRow)
                              .where(MatchSeatRow.match_id == match_id)
                              .order_by(MatchSeatRow.seat)).all()
            return MatchDetail(
                row.id, row.ladder, row.status, row.players, row.started_at, row.ended_at,
                row.reason, row.replay_path, row.result,
                tuple(SeatDetail(x.seat, x.side, name, x.rank, x.penalty, x.mu_before,
                                 x.mu_after, x.sigma_after) for x, name in seats))


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.isolation_level = None  # transactions are begun explicitly (see Store)
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=FULL")  # a committed match survives a power cut
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


__all__ = ["Bot", "MatchDetail", "SeatDetail", "SeatResult", "Standing", "Store", "StoreError",
           "default_url", "hash_token"]
