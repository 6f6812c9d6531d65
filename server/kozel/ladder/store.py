"""The ladder's persistent store, and its SQL (the shared-ladder tables' is in
:mod:`kozel.ladder.matchmaking`).

SQLite by default (a file in the data folder, WAL mode) or PostgreSQL by URL. The schema is
versioned with Alembic migrations (:meth:`Store.migrate`). A finished match's result, its
rating update and its replay reference are committed in one transaction, after the replay
file is on disk, so a crash at any moment loses no finished match and leaves no half-applied
rating. Every commit is idempotent (a retry after a lost connection records nothing twice).

Several referees may share one PostgreSQL store. Each has a lease row renewed on the
database's clock; each match row names its host; a ladder has at most one host at a time
(``ladder_hosts``). A running match whose host's lease has expired is an orphan that a live
referee serving the ladder claims (:meth:`Store.claim_orphans`, under row locks).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import and_, create_engine, delete, event, func, inspect, or_, select, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.orm import Session, sessionmaker

from kozel.ladder.models import (
    BotRow,
    LadderHostRow,
    LadderStateRow,
    MatchRow,
    MatchSeatRow,
    RatingResetRow,
    RatingRow,
    RefereeRow,
    ReplayRow,
)
from kozel.ladder.rating_order import aware, lock_ladder, rerate
from kozel.ladder.ratings import Rating

MIGRATIONS = Path(__file__).with_name("migrations")
BOT_STATUSES = ("active", "paused", "retired")
LADDER_STATES = ("running", "stopped")  # stopped: no new matches; running ones finish


class StoreError(ValueError):
    """A request the store refuses (duplicate name, unknown bot ...)."""


# Aborts that recovery wrote without knowing the result: a finished replay found later (its
# host came back, or the replay folder was restored) may still be committed over them.
RECOVERY_ABORTS = ("referee restarted", "host lost")
CONNECT_TIMEOUT_S = 5  # an unreachable PostgreSQL fails a call after this, not the OS's minutes
SQLITE_BUSY_S = 30  # how long a SQLite write waits for another writer (CLI, a busy machine)


def is_transient(exc: BaseException) -> bool:
    """Whether a store failure may pass by itself (connection refused or lost, timeout, lock
    or serialization conflict), so the call is worth retrying."""
    if isinstance(exc, (OperationalError, PoolTimeoutError)):
        return True
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    code = getattr(getattr(exc, "orig", None), "sqlstate", None)
    return code in ("40001", "40P01")  # serialization failure, deadlock


@dataclass(frozen=True, slots=True)
class HostedMatch:
    """A running match as its host (or the referee taking it over) needs it."""

    id: str
    ladder: str
    bot_ids: tuple[int, ...]  # by seat
    replay_path: str | None  # where its host writes the replay
    # When its host last published its status (database clock): a match whose host was lost
    # ended no later than that, so its bots, free since, never seem to play two at once.
    host_seen_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class LadderState:
    """A ladder's state for every referee serving it, and who set it last and why."""

    ladder: str
    state: str = "running"
    changed_at: datetime | None = None
    changed_by: str = ""
    reason: str = ""

    @property
    def running(self) -> bool:
        return self.state == "running"


@dataclass(frozen=True, slots=True)
class Bot:
    id: int
    name: str
    status: str
    plays_people: bool = False  # its author lets people play it in the browser


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


def standing_of(r: RatingRow, name: str) -> Standing:
    """A bot's line on a ladder from its rating row (the one place its figures are worked out)."""
    return Standing(
        name,
        Rating(r.mu, r.sigma).ordinal,
        r.mu,
        r.sigma,
        r.matches,
        r.wins,
        r.penalty_sum / r.matches if r.matches else 0.0,
        r.timeouts,
        r.forfeits,
    )


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
        connect_args: dict[str, Any] = {}
        if url.startswith("sqlite:///"):
            Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
            connect_args["timeout"] = SQLITE_BUSY_S
        elif url.startswith("postgresql"):
            connect_args["connect_timeout"] = CONNECT_TIMEOUT_S
        self.engine: Engine = create_engine(
            url, pool_pre_ping=True, connect_args=connect_args, pool_timeout=CONNECT_TIMEOUT_S
        )
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
            # SQLite transactions must really start at BEGIN (pysqlite would defer them to the
            # first write): IMMEDIATE takes the write lock at once, so two result commits can
            # never read the same rating and lose an update. PostgreSQL locks rows FOR UPDATE.
            # A snapshot read (``_snapshot``) begins deferred instead: in WAL mode it reads one
            # moment of the database and neither waits for writers nor holds them up.
            event.listen(
                self.engine,
                "begin",
                lambda conn: conn.exec_driver_sql(
                    "BEGIN" if conn.get_execution_options().get("snapshot") else "BEGIN IMMEDIATE"
                ),
            )
        self._session = sessionmaker(self.engine, expire_on_commit=False)
        # A shared (PostgreSQL) store keeps every ladder replay beside its result, so that every
        # referee can serve it; with SQLite the referee's replay folder is the only copy.
        self.keeps_replays = self.engine.dialect.name == "postgresql"

    def transaction(self) -> Any:
        """A session in one transaction (``with store.transaction() as s``), for the modules
        that keep their own tables' SQL beside this one (:mod:`kozel.ladder.matchmaking`)."""
        return self._session.begin()

    def close(self) -> None:
        """Close every connection. On SQLite a checkpoint first moves the WAL into the
        database file, so ``kozel.db`` alone is then a complete copy (no -wal file left)."""
        if self.engine.dialect.name == "sqlite":
            try:
                with self.engine.connect() as conn:
                    conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            except OperationalError:  # another process holds it: SQLite checkpoints later
                pass
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
                s.add(
                    BotRow(
                        name=name,
                        token_hash=hash_token(token),
                        status="active",
                        created_at=datetime.now(UTC),
                    )
                )
        except IntegrityError:
            raise StoreError(
                f"a bot named {name!r} exists; register a new version under a new name"
            ) from None
        return token

    def authenticate(self, token: str) -> Bot | None:
        """The active bot a token belongs to, or None."""
        with self._session() as s:
            row = s.scalar(select(BotRow).where(BotRow.token_hash == hash_token(token)))
            if row is None or row.status != "active":
                return None
            return _bot(row)

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
            return None if row is None else _bot(row)

    def set_plays_people(self, name: str, plays: bool, token: str | None = None) -> None:
        """Let people play bot ``name`` in the browser, or no longer. With ``token`` (its
        author's call) the token must be that bot's, active or paused; without it (the
        operator's) any bot may be changed."""
        with self._session.begin() as s:
            row = s.scalar(select(BotRow).where(BotRow.name == name))
            if row is None:
                raise StoreError(f"no bot named {name!r}")
            if token is not None and not secrets.compare_digest(row.token_hash, hash_token(token)):
                raise StoreError(f"this token is not bot {name!r}'s")
            row.plays_people = plays

    def playing_people(self, names: Sequence[str]) -> set[str]:
        """Which of ``names`` are active bots that play people."""
        if not names:
            return set()
        with self._session() as s:
            rows = s.scalars(
                select(BotRow.name).where(
                    BotRow.name.in_(list(names)),
                    BotRow.plays_people.is_(True),
                    BotRow.status == "active",
                )
            )
            return set(rows)

    def ensure_rating(self, ladder: str, bot_id: int) -> None:
        """Give a bot its starting rating on a ladder if it has none (call from one place at a
        time: result commits then only ever update existing rows)."""
        with self._session.begin() as s:
            exists = s.scalar(
                select(RatingRow.id).where(RatingRow.ladder == ladder, RatingRow.bot_id == bot_id)
            )
            if exists is None:
                s.add(_new_rating(ladder, bot_id))

    def reset_rating(self, ladder: str, name: str, by: str = "") -> None:
        """Start a bot again from the default rating on a ladder (its record is kept). The
        reset is an event in the order ratings take results: a result committed later that
        ended before it is rated before it."""
        bot = self.bot(name)
        if bot is None:
            raise StoreError(f"no bot named {name!r}")
        with self._session.begin() as s:
            lock_ladder(s, ladder)
            row = s.scalar(
                select(RatingRow).where(RatingRow.ladder == ladder, RatingRow.bot_id == bot.id)
            )
            if row is None:
                return
            at = datetime.now(UTC)
            s.add(RatingResetRow(ladder=ladder, bot_id=bot.id, at=at, by=by))
            s.flush()
            rerate(s, ladder, (at, ""), bots=[bot.id])

    # -- ladder state --------------------------------------------------------------------------

    def ladder_states(self) -> dict[str, LadderState]:
        """Every ladder's state that was ever set (a ladder without a row is running)."""
        with self._session() as s:
            return {r.ladder: _state(r) for r in s.scalars(select(LadderStateRow))}

    def set_ladder_state(
        self, ladder: str, state: str, by: str = "", reason: str = ""
    ) -> LadderState:
        """Start or stop a ladder for every referee serving it (each obeys within one poll)."""
        if state not in LADDER_STATES:
            raise StoreError(f"a ladder's state is one of {', '.join(LADDER_STATES)}")
        with self._session.begin() as s:
            row = lock_ladder(s, ladder)
            row.state, row.changed_at = state, datetime.now(UTC)
            row.changed_by, row.reason = by[:64], reason[:256]
            return _state(row)

    # -- matches -------------------------------------------------------------------------------

    def start_match(
        self,
        match_id: str,
        ladder: str,
        players: int,
        seats: Sequence[tuple[int, int, int]],
        *,
        referee_id: str | None = None,
        replay_path: str | None = None,
        started_at: datetime | None = None,
    ) -> None:
        """Record a running match hosted by ``referee_id``; ``seats`` holds (seat, side,
        bot_id); ``replay_path`` is where its host will write the replay. Recording a match
        that exists already does nothing (a retried call)."""
        with self._session.begin() as s:
            if s.get(MatchRow, match_id) is None:
                add_match(
                    s,
                    match_id,
                    ladder,
                    players,
                    seats,
                    referee_id,
                    replay_path,
                    started_at or datetime.now(UTC),
                )

    def finish_match(
        self,
        match_id: str,
        *,
        reason: str,
        replay_path: str,
        result: dict[str, Any],
        seats: Sequence[SeatResult],
        ended_at: datetime | None = None,
        ladder: str | None = None,
        start: tuple[str, int, str | None, datetime] | None = None,
        replay: bytes | None = None,
        after: Callable[[Session], None] | None = None,
    ) -> dict[int, Rating]:
        """Commit a finished match, its rating update and its replay reference at once.

        Call only after the replay file is safely on disk (``ladder``: its ladder, when the
        caller knows it). ``ended_at`` is when the match
        ended (its replay's end time; now if not given): ratings take results in that order,
        so a match committed after others that ended later is rated in its place and theirs
        again after it (:mod:`kozel.ladder.rating_order`). Returns this match's new rating per
        bot id (empty when it was committed already: a retry records nothing twice). A match
        that recovery marked aborted (its host seemed lost) is committed all the same; one
        the store does not know is recorded first when ``start`` gives its (ladder, players,
        referee id, start time), as when it is committed from its replay alone. ``replay``
        (the ``.kzr`` bytes) is kept in the store in the same transaction when given, and so is
        whatever ``after`` adds (a duplicate first half's twin).
        """
        with self._session.begin() as s:
            match = _finishing(s, match_id, ladder, seats, replay_path, start)
            if match is None:  # committed already
                return {}
            latest = _record(s, match, seats)
            match.status, match.reason = "finished", reason
            match.replay_path, match.result = replay_path, result
            match.committed_at = datetime.now(UTC)
            match.ended_at = ended_at or match.committed_at
            changes = rerate(s, match.ladder, (match.ended_at, match_id), latest=latest)
            if replay is not None:
                _keep_replay(s, match_id, replay)
            if after is not None:
                after(s)
        return {bot: change.after for bot, change in changes[match_id].items()}

    def void_match(self, match_id: str, by: str, reason: str) -> list[str]:
        """Take a finished match's result back (an operator knows it to be unfair): it becomes
        aborted (reason "voided", with who and why), its seats leave their bots' records, and
        every later match of its ladder is rated again without it. Returns its bots' names.
        Voiding a voided match does nothing; a running or aborted one is refused."""
        with self._session.begin() as s:
            ladder = s.scalar(select(MatchRow.ladder).where(MatchRow.id == match_id))
            if ladder is None:
                raise StoreError(f"no match {match_id!r}")
            lock_ladder(s, ladder)
            match = s.get_one(MatchRow, match_id, with_for_update=True)
            seats = list(s.scalars(select(MatchSeatRow).where(MatchSeatRow.match_id == match_id)))
            names = list(
                s.scalars(select(BotRow.name).where(BotRow.id.in_([x.bot_id for x in seats])))
            )
            if match.status == "aborted" and match.reason == "voided":
                return names
            if match.status != "finished" or match.ended_at is None:
                raise StoreError(
                    f"match {match_id} is {match.status}, not finished: only a rated result "
                    "can be voided (a running match is aborted by stopping its referee)"
                )
            _unrecord(s, ladder, seats)
            match.status, match.reason = "aborted", "voided"
            match.voided_at, match.voided_by, match.void_reason = datetime.now(UTC), by, reason
            rerate(s, ladder, (match.ended_at, match_id), bots=[x.bot_id for x in seats])
        return names

    def running_matches(self, referee_id: str | None = None) -> dict[str, HostedMatch]:
        """Matches marked running (those hosted by ``referee_id`` if given), by id."""
        with self._session() as s:
            q = select(MatchRow).where(MatchRow.status == "running")
            if referee_id is not None:
                q = q.where(MatchRow.referee_id == referee_id)
            return _hosted(s, list(s.scalars(q)))

    def abort_match(
        self,
        match_id: str,
        reason: str = "aborted",
        replay_path: str | None = None,
        replay: bytes | None = None,
        lost_at: datetime | None = None,
    ) -> None:
        """Mark one running match aborted, with no rating change (shutdown, crash, a lost
        host); ``replay_path`` names the aborted match's replay if it was written (``replay``:
        its bytes, kept in the store as for :meth:`finish_match`). ``lost_at``: when its lost
        host was last seen, its end (not before it started); else now."""
        with self._session.begin() as s:
            row = s.get(MatchRow, match_id, with_for_update=True)
            if row is not None and row.status == "running":
                now = datetime.now(UTC)
                ended = now if lost_at is None else max(aware(row.started_at), min(now, lost_at))
                row.status, row.reason, row.ended_at = "aborted", reason, ended
                row.replay_path = replay_path
                if replay is not None:
                    _keep_replay(s, match_id, replay)

    def keep_replay(self, match_id: str, data: bytes) -> None:
        """Keep a replay in the store (a duplicate first half, once its twin has ended)."""
        with self._session.begin() as s:
            _keep_replay(s, match_id, data)

    def replay_bytes(self, match_id: str, limit: int | None = None) -> bytes | None:
        """The replay the store keeps for ``match_id`` (``.kzr`` bytes), or None;
        ``OverflowError`` past ``limit`` bytes (its size is asked first, so a big one is
        never fetched)."""
        where = ReplayRow.match_id == match_id
        with self._session() as s:
            if limit is not None:
                size = s.scalar(select(func.length(ReplayRow.data)).where(where))
                if size is not None and size > limit:
                    raise OverflowError(limit)
            return s.scalar(select(ReplayRow.data).where(where))

    def settled_ids(self, match_ids: Sequence[str]) -> set[str]:
        """Those of ``match_ids`` the store holds as finished, or voided by an operator (which
        recovery must never commit again)."""
        out: set[str] = set()
        ids = list(match_ids)
        with self._session() as s:
            for i in range(0, len(ids), 500):
                out.update(
                    s.scalars(
                        select(MatchRow.id).where(
                            MatchRow.id.in_(ids[i : i + 500]),
                            or_(
                                MatchRow.status == "finished",
                                and_(MatchRow.status == "aborted", MatchRow.reason == "voided"),
                            ),
                        )
                    )
                )
        return out

    def bot_ids(self, names: Sequence[str]) -> dict[str, int]:
        """Bot ids by name, for the names the store knows."""
        with self._session() as s:
            return dict(
                s.execute(select(BotRow.name, BotRow.id).where(BotRow.name.in_(list(names)))).all()
            )

    # -- referees, leases, ladder hosts ----------------------------------------------------------

    def register_referee(
        self, referee_id: str, ladders: Sequence[str], lease_s: float, standby: bool = False
    ) -> dict[str, str]:
        """Start a referee's lease and make it the host of ``ladders``.

        A ladder whose host is another referee with a live lease is not taken: unless
        ``standby``, that refuses the start with a :class:`StoreError` naming the ladder and
        its host; with ``standby`` the referee waits for it (:meth:`claim_ladders`). Returns
        the ladders held by others, with their hosts.
        """
        with self._session.begin() as s:
            now = db_now(s)
            row = s.get(RefereeRow, referee_id, with_for_update=True)
            if row is None:
                s.add(
                    RefereeRow(
                        id=referee_id,
                        started_at=datetime.now(UTC),
                        lease_until=now + lease_s,
                        ladders=list(ladders),
                    )
                )
                s.flush()
            else:
                row.started_at, row.lease_until = datetime.now(UTC), now + lease_s
                row.ladders = list(ladders)
            others = _claim(s, referee_id, ladders, now)
            if others and not standby:
                ladder, host = next(iter(sorted(others.items())))
                raise StoreError(
                    f"ladder {ladder!r} is served by referee {host!r}, whose lease is live: "
                    "two referees must not schedule one ladder (give this one other ladders, "
                    "stop the other, or start this one with referee.standby to take over when "
                    "the other stops)"
                )
            return others

    def renew_lease(
        self,
        referee_id: str,
        lease_s: float,
        status: dict[str, Any] | None = None,
        draining: bool = False,
    ) -> tuple[set[str], dict[str, LadderState]]:
        """Extend a referee's lease to ``lease_s`` from now (the database's clock) and publish
        its ``status``; returns the ladders it still hosts (one it lost while its lease had
        lapsed is not among them) and every ladder's state."""
        with self._session.begin() as s:
            row = s.get(RefereeRow, referee_id)
            if row is None:
                raise StoreError(f"no referee {referee_id!r}")
            now = db_now(s)
            row.lease_until, row.draining = now + lease_s, draining
            if status is not None:
                row.status, row.status_at = status, now
            hosted = set(
                s.scalars(
                    select(LadderHostRow.ladder).where(LadderHostRow.referee_id == referee_id)
                )
            )
            return hosted, {r.ladder: _state(r) for r in s.scalars(select(LadderStateRow))}

    def claim_ladders(self, referee_id: str, ladders: Sequence[str]) -> dict[str, str]:
        """Take every ladder of ``ladders`` that has no live host; returns those held by
        other live referees, with their hosts."""
        with self._session.begin() as s:
            return _claim(s, referee_id, ladders, db_now(s))

    def ladder_hosts(self) -> dict[str, str]:
        """Which referee hosts (schedules) each ladder now, by ladder."""
        with self._session() as s:
            return dict(s.execute(select(LadderHostRow.ladder, LadderHostRow.referee_id)).all())

    def set_referee_address(self, referee_id: str, address: str) -> None:
        """Where bots reach ``referee_id`` (redirects to the matches it hosts)."""
        with self._session.begin() as s:
            row = s.get(RefereeRow, referee_id)
            if row is not None:
                row.address = address

    def release_referee(self, referee_id: str) -> None:
        """A clean stop: give up the lease and the ladders at once (a standby takes over)."""
        with self._session.begin() as s:
            s.execute(delete(LadderHostRow).where(LadderHostRow.referee_id == referee_id))
            row = s.get(RefereeRow, referee_id)
            if row is not None:
                row.lease_until = 0.0

    def claim_orphans(self, referee_id: str, ladders: Sequence[str]) -> dict[str, HostedMatch]:
        """Make ``referee_id`` the host of every running match of ``ladders`` whose host has
        no live lease (or is unknown). Rows are locked, skipping those another referee is
        claiming, so exactly one referee gets each orphan. Returns the claimed matches."""
        if not ladders:
            return {}
        with self._session.begin() as s:
            now = db_now(s)
            live = select(RefereeRow.id).where(RefereeRow.lease_until > now)
            q = (
                select(MatchRow)
                .where(
                    MatchRow.status == "running",
                    MatchRow.ladder.in_(list(ladders)),
                    or_(MatchRow.referee_id.is_(None), MatchRow.referee_id.not_in(live)),
                )
                .order_by(MatchRow.started_at)
                .limit(500)
                .with_for_update(skip_locked=True)
            )
            rows = list(s.scalars(q))
            out = _hosted(s, rows)  # with each lost host's last sign of life
            for row in rows:
                row.referee_id = referee_id
            return out

    # -- queries -------------------------------------------------------------------------------

    def check_consistency(self) -> list[str]:
        """Problems that a crash must never leave behind (empty when all is well), read in one
        snapshot (REPEATABLE READ on PostgreSQL), so matches finishing meanwhile raise no
        false alarm. Includes the rating chain: for every bot and ladder, each match's
        rating before equals the previous match's rating after."""
        problems: list[str] = []
        with self._snapshot() as s:
            finished = dict(
                s.execute(
                    select(MatchSeatRow.bot_id, func.count())
                    .join(MatchRow)
                    .where(MatchRow.status == "finished")
                    .group_by(MatchSeatRow.bot_id)
                ).all()
            )
            rated = dict(
                s.execute(
                    select(RatingRow.bot_id, func.sum(RatingRow.matches)).group_by(RatingRow.bot_id)
                ).all()
            )
            problems.extend(
                f"bot {bot}: {finished.get(bot, 0)} finished match seats "
                f"but {rated.get(bot) or 0} rated matches"
                for bot in set(finished) | set(rated)
                if finished.get(bot, 0) != (rated.get(bot) or 0)
            )
            half = s.scalar(
                select(func.count())
                .select_from(MatchSeatRow)
                .join(MatchRow)
                .where(MatchRow.status != "finished", MatchSeatRow.mu_after.is_not(None))
            )
            if half:
                problems.append(f"{half} seats of unfinished matches carry a rating change")
            missing = s.scalar(
                select(func.count())
                .select_from(MatchRow)
                .where(MatchRow.status == "finished", MatchRow.replay_path.is_(None))
            )
            if missing:
                problems.append(f"{missing} finished matches have no replay reference")
            problems += _chain_problems(s)
        return problems

    def _snapshot(self) -> Session:
        """A session whose reads all see one moment of the store."""
        if self.engine.dialect.name == "postgresql":
            return Session(self.engine.execution_options(isolation_level="REPEATABLE READ"))
        return Session(self.engine.execution_options(snapshot=True))  # SQLite: one read txn

    def standings(self, ladder: str) -> list[Standing]:
        """Bots on a ladder by ordinal (mu - 3 sigma), best first."""
        with self._session() as s:
            rows = s.execute(
                select(RatingRow, BotRow.name).join(BotRow).where(RatingRow.ladder == ladder)
            ).all()
        return sorted((standing_of(r, name) for r, name in rows), key=lambda x: -x.ordinal)

    def rated_ladders(self) -> list[str]:
        """The ladders on which some bot has a rating, by name."""
        with self._session() as s:
            return list(s.scalars(select(RatingRow.ladder).distinct().order_by(RatingRow.ladder)))

    def match_counts(self, ladder: str | None = None) -> dict[str, int]:
        """Matches per status (for tests and operators)."""
        with self._session() as s:
            q = select(MatchRow.status, func.count()).group_by(MatchRow.status)
            if ladder is not None:
                q = q.where(MatchRow.ladder == ladder)
            return dict(s.execute(q).all())

    def matches(
        self,
        *,
        ladder: str | None = None,
        bot: str | None = None,
        since: datetime | None = None,
        status: str | None = None,
        oldest_first: bool = False,
        limit: int = 100,
    ) -> list[MatchRow]:
        """Matches, newest first (or oldest), filtered by ladder, bot name, start time and
        status."""
        with self._session() as s:
            order = MatchRow.started_at.asc() if oldest_first else MatchRow.started_at.desc()
            q = select(MatchRow).order_by(order, MatchRow.id).limit(limit)
            if status is not None:
                q = q.where(MatchRow.status == status)
            if ladder is not None:
                q = q.where(MatchRow.ladder == ladder)
            if since is not None:
                q = q.where(MatchRow.started_at >= since)
            if bot is not None:
                q = q.where(
                    MatchRow.id.in_(
                        select(MatchSeatRow.match_id).join(BotRow).where(BotRow.name == bot)
                    )
                )
            return list(s.scalars(q))

    def match_detail(self, match_id: str) -> MatchDetail | None:
        """One match with its seats (bot names, ranks, rating changes), or None."""
        with self._session() as s:
            row = s.get(MatchRow, match_id)
            if row is None:
                return None
            seats = s.execute(
                select(MatchSeatRow, BotRow.name)
                .join(BotRow)
                .where(MatchSeatRow.match_id == match_id)
                .order_by(MatchSeatRow.seat)
            ).all()
            return MatchDetail(
                row.id,
                row.ladder,
                row.status,
                row.players,
                row.started_at,
                row.ended_at,
                row.reason,
                row.replay_path,
                row.result,
                tuple(
                    SeatDetail(
                        x.seat,
                        x.side,
                        name,
                        x.rank,
                        x.penalty,
                        x.mu_before,
                        x.mu_after,
                        x.sigma_after,
                    )
                    for x, name in seats
                ),
            )


def _record(
    s: Session, match: MatchRow, seats: Sequence[SeatResult]
) -> tuple[dict[int, RatingRow], list[MatchSeatRow]]:
    """Add a finished match's seats to their bots' records (made on first use); the rating
    itself is :func:`~kozel.ladder.rating_order.rerate`'s. Returns the rating rows by bot id
    and the match's seat rows."""
    ratings = {
        r.bot_id: r
        for r in s.scalars(  # locked in one order: no deadlock
            select(RatingRow)
            .where(
                RatingRow.ladder == match.ladder,
                RatingRow.bot_id.in_([x.bot_id for x in seats]),
            )
            .order_by(RatingRow.bot_id)
            .with_for_update()
        )
    }
    seat_rows = {
        r.seat: r for r in s.scalars(select(MatchSeatRow).where(MatchSeatRow.match_id == match.id))
    }
    for x in seats:
        row = ratings.get(x.bot_id)
        if row is None:
            row = ratings[x.bot_id] = _new_rating(match.ladder, x.bot_id)
            s.add(row)
        row.matches += 1
        row.wins += int(x.won)
        row.penalty_sum += x.penalty
        row.timeouts += x.timeouts
        row.forfeits += int(x.forfeited)
        seat = seat_rows[x.seat]
        seat.rank, seat.penalty = x.rank, x.penalty
        seat.won, seat.timeouts, seat.forfeited = x.won, x.timeouts, x.forfeited
    s.flush()
    return ratings, list(seat_rows.values())


def _unrecord(s: Session, ladder: str, seats: Sequence[MatchSeatRow]) -> None:
    """Take a voided match's seats out of their bots' records (timeouts and forfeits of a
    match from before schema 4 are not known: none are taken)."""
    ratings = {
        r.bot_id: r
        for r in s.scalars(
            select(RatingRow)
            .where(RatingRow.ladder == ladder, RatingRow.bot_id.in_([x.bot_id for x in seats]))
            .order_by(RatingRow.bot_id)
            .with_for_update()
        )
    }
    for x in seats:
        row = ratings[x.bot_id]
        row.matches -= 1
        row.wins -= int(bool(x.won))
        row.penalty_sum -= x.penalty or 0
        row.timeouts -= x.timeouts or 0
        row.forfeits -= int(bool(x.forfeited))
        x.mu_before = x.mu_after = x.sigma_after = None
        x.rating_seq = None
    s.flush()


def _bot(row: BotRow) -> Bot:
    return Bot(row.id, row.name, row.status, row.plays_people)


def _state(row: LadderStateRow) -> LadderState:
    return LadderState(row.ladder, row.state, row.changed_at, row.changed_by, row.reason)


def _new_rating(ladder: str, bot_id: int) -> RatingRow:
    return RatingRow(
        ladder=ladder,
        bot_id=bot_id,
        mu=Rating().mu,
        sigma=Rating().sigma,
        matches=0,
        wins=0,
        penalty_sum=0,
        timeouts=0,
        forfeits=0,
    )


def add_match(
    s: Session,
    match_id: str,
    ladder: str,
    players: int,
    seats: Sequence[tuple[int, int, int]],
    referee_id: str | None,
    replay_path: str | None,
    started_at: datetime,
) -> None:
    """Add a running match and its seats (``seats``: seat, side, bot id) in session ``s``."""
    s.add(
        MatchRow(
            id=match_id,
            ladder=ladder,
            status="running",
            players=players,
            started_at=started_at,
            referee_id=referee_id,
            replay_path=replay_path,
        )
    )
    s.flush()
    for seat, side, bot_id in seats:
        s.add(MatchSeatRow(match_id=match_id, seat=seat, side=side, bot_id=bot_id))
    s.flush()


def seat_bots(s: Session, match_ids: Sequence[str]) -> dict[str, list[int]]:
    """The bot ids of each of ``match_ids`` in seat order (read 500 matches at a time)."""
    ids = list(match_ids)
    bots: dict[str, list[int]] = {i: [] for i in ids}
    for i in range(0, len(ids), 500):
        for match_id, bot_id in s.execute(
            select(MatchSeatRow.match_id, MatchSeatRow.bot_id)
            .where(MatchSeatRow.match_id.in_(ids[i : i + 500]))
            .order_by(MatchSeatRow.match_id, MatchSeatRow.seat)
        ):
            bots[match_id].append(bot_id)
    return bots


def _hosted(s: Session, rows: Sequence[MatchRow]) -> dict[str, HostedMatch]:
    bots = seat_bots(s, [r.id for r in rows])
    hosts = {r.referee_id for r in rows if r.referee_id is not None}
    query = select(RefereeRow.id, RefereeRow.status_at).where(RefereeRow.id.in_(hosts))
    seen: dict[str | None, float | None] = dict(s.execute(query).all())
    return {
        r.id: HostedMatch(
            r.id, r.ladder, tuple(bots[r.id]), r.replay_path, _epoch(seen.get(r.referee_id))
        )
        for r in rows
    }


def _epoch(at: float | None) -> datetime | None:
    return None if at is None else datetime.fromtimestamp(at, UTC)


def _keep_replay(s: Session, match_id: str, data: bytes) -> None:
    if s.get(ReplayRow, match_id) is None:
        s.add(ReplayRow(match_id=match_id, data=data, created_at=datetime.now(UTC)))


def db_now(s: Session) -> float:
    """The database's clock in epoch seconds: leases of processes on different machines are
    compared on one clock, so clock skew cannot make two hosts overlap."""
    if s.get_bind().dialect.name == "postgresql":
        return float(s.execute(text("SELECT extract(epoch from clock_timestamp())")).scalar_one())
    return float(s.execute(text("SELECT (julianday('now') - 2440587.5) * 86400.0")).scalar_one())


def _claim(s: Session, referee_id: str, ladders: Sequence[str], now: float) -> dict[str, str]:
    """Host ``ladders`` unless a live referee hosts them; returns those it does, by ladder."""
    others: dict[str, str] = {}
    for ladder in sorted(ladders):  # locked in one order: no deadlock between two claimers
        host = s.get(LadderHostRow, ladder, with_for_update=True)
        if host is None:
            s.add(LadderHostRow(ladder=ladder, referee_id=referee_id))
            s.flush()
        elif host.referee_id != referee_id:
            lease = s.scalar(select(RefereeRow.lease_until).where(RefereeRow.id == host.referee_id))
            if lease is not None and lease > now:
                others[ladder] = host.referee_id
            else:
                host.referee_id = referee_id
    return others


def _chain_problems(s: Session) -> list[str]:
    """Breaks in the rating chains: per bot and ladder, matches in rating order must be numbered
    1, 2, 3 ... and each one's rating before must be the previous one's rating after (or the
    starting rating, after a reset)."""
    rows = s.execute(
        select(
            MatchSeatRow.bot_id,
            MatchRow.ladder,
            MatchSeatRow.rating_seq,
            MatchSeatRow.mu_before,
            MatchSeatRow.mu_after,
            MatchRow.id,
        )
        .join(MatchRow)
        .where(MatchRow.status == "finished")
        .order_by(MatchSeatRow.bot_id, MatchRow.ladder, MatchSeatRow.rating_seq)
    ).all()
    problems: list[str] = []
    start = Rating().mu
    prev: tuple[int, str] | None = None
    seq, last_after = 0, start
    for bot_id, ladder, n, before, after, match_id in rows:
        if (bot_id, ladder) != prev:
            prev, seq, last_after = (bot_id, ladder), 0, start
        seq += 1
        if n != seq:
            problems.append(
                f"bot {bot_id} on {ladder}: match {match_id} is rated match {n}, expected {seq}"
            )
        elif before is None or not (abs(before - last_after) < 1e-9 or abs(before - start) < 1e-9):
            problems.append(
                f"bot {bot_id} on {ladder}: match {match_id} starts from mu "
                f"{before} but the previous match left {last_after}"
            )
        last_after = after if after is not None else last_after
    return problems


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.isolation_level = None  # transactions are begun explicitly (see Store)
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=FULL")  # a committed match survives a power cut
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


__all__ = [
    "RECOVERY_ABORTS",
    "Bot",
    "HostedMatch",
    "LadderState",
    "MatchDetail",
    "SeatDetail",
    "SeatResult",
    "Standing",
    "Store",
    "StoreError",
    "default_url",
    "hash_token",
    "is_transient",
]


def _finishing(
    s: Session,
    match_id: str,
    ladder: str | None,
    seats: Sequence[SeatResult],
    replay_path: str,
    start: tuple[str, int, str | None, datetime] | None,
) -> MatchRow | None:
    """The match row to finish, its ladder locked (recorded first from ``start`` when the
    store does not know it); None when it is finished already."""
    if ladder is None:  # (the caller may know it: one round trip less)
        ladder = s.scalar(select(MatchRow.ladder).where(MatchRow.id == match_id))
        ladder = ladder or (start[0] if start is not None else None)
    if ladder is None:
        raise StoreError(f"match {match_id} is not running")
    lock_ladder(s, ladder)
    match = s.get(MatchRow, match_id, with_for_update=True)
    if match is not None and match.ladder != ladder:
        raise StoreError(f"match {match_id} is of ladder {match.ladder!r}, not {ladder!r}")
    if match is None and start is not None:
        _, players, referee_id, started_at = start
        seated = [(x.seat, x.side, x.bot_id) for x in seats]
        add_match(s, match_id, ladder, players, seated, referee_id, replay_path, started_at)
        match = s.get(MatchRow, match_id, with_for_update=True)
    if match is not None and match.status == "finished":
        return None
    if match is None or not (
        match.status == "running" or (match.status == "aborted" and match.reason in RECOVERY_ABORTS)
    ):
        raise StoreError(f"match {match_id} is not running")
    return match
