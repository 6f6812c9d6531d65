"""The ladder's tables (SQLAlchemy 2 declarative), used by :mod:`kozel.ladder.store` and
:mod:`kozel.ladder.matchmaking` only."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class BotRow(Base):
    """A bot identity. A new version of a bot is a new row (a new name)."""

    __tablename__ = "bots"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)  # SHA-256 hex
    status: Mapped[str] = mapped_column(String(16), default="active")  # active|paused|retired
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # Its author lets people play it in the browser while it is connected (schema 7).
    plays_people: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class RatingRow(Base):
    """A bot's rating and record on one ladder."""

    __tablename__ = "ratings"
    __table_args__ = (UniqueConstraint("ladder", "bot_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    ladder: Mapped[str] = mapped_column(String(64), index=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"))
    mu: Mapped[float] = mapped_column(Float)
    sigma: Mapped[float] = mapped_column(Float)
    matches: Mapped[int] = mapped_column(Integer, default=0)
    wins: Mapped[int] = mapped_column(Integer, default=0)
    penalty_sum: Mapped[int] = mapped_column(Integer, default=0)
    timeouts: Mapped[int] = mapped_column(Integer, default=0)
    forfeits: Mapped[int] = mapped_column(Integer, default=0)


class MatchRow(Base):
    """A ladder match: running, finished (rated) or aborted (never rated)."""

    __tablename__ = "matches"
    __table_args__ = (Index("ix_matches_ladder_ended", "ladder", "ended_at"),)
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    ladder: Mapped[str] = mapped_column(String(64), index=True)
    status: Mapped[str] = mapped_column(String(16), index=True)  # running|finished|aborted
    players: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    # When the match ended, from its replay (ratings take results in this order); when its
    # result reached the store (late after an outage, a restore or an orphan's adoption).
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    committed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    reason: Mapped[str | None] = mapped_column(String(32), nullable=True)
    replay_path: Mapped[str | None] = mapped_column(String(512), nullable=True)
    result: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    # The referee hosting the match (its lease says whether it lives); None for matches from
    # before referee ids existed, which any live referee serving the ladder may take over.
    referee_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    # Seats whose bot the shared scheduler redirected here from another referee (schema 3).
    redirected: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # An operator voided the result (schema 4): status aborted, reason "voided", ratings
    # recomputed without it; who did it and why.
    voided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    voided_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    void_reason: Mapped[str | None] = mapped_column(String(256), nullable=True)
    # A duplicate match (schema 6): the first match of its group (the same seed, the seats
    # rotated) and which rotation this one is (0 for the first).
    dup_group: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    dup_rotation: Mapped[int | None] = mapped_column(Integer, nullable=True)


class MatchSeatRow(Base):
    """One seat of a match, with the rating change it caused."""

    __tablename__ = "match_seats"
    __table_args__ = (UniqueConstraint("match_id", "seat"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    match_id: Mapped[str] = mapped_column(ForeignKey("matches.id"), index=True)
    seat: Mapped[int] = mapped_column(Integer)
    side: Mapped[int] = mapped_column(Integer)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), index=True)
    rank: Mapped[int | None] = mapped_column(Integer, nullable=True)  # 1 = best
    penalty: Mapped[int | None] = mapped_column(Integer, nullable=True)
    mu_before: Mapped[float | None] = mapped_column(Float, nullable=True)
    mu_after: Mapped[float | None] = mapped_column(Float, nullable=True)
    sigma_after: Mapped[float | None] = mapped_column(Float, nullable=True)
    # This match is the bot's n-th rated match on the ladder (1-based): the order of the
    # rating chain, in which each mu_before equals the previous mu_after.
    rating_seq: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # What the seat added to its bot's record (schema 4; NULL before): so a voided match can
    # be taken out of it again.
    won: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    timeouts: Mapped[int | None] = mapped_column(Integer, nullable=True)
    forfeited: Mapped[bool | None] = mapped_column(Boolean, nullable=True)


class RefereeRow(Base):
    """A referee process sharing the store, with its lease (database clock, epoch seconds)."""

    __tablename__ = "referees"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    lease_until: Mapped[float] = mapped_column(Float)  # expired once the db clock passes it
    ladders: Mapped[list | None] = mapped_column(JSON, nullable=True)  # configured ladders
    # host:port where bots reach it (redirects of shared ladders); None before schema 3
    address: Mapped[str | None] = mapped_column(String(255), nullable=True)
    # Draining: it hosts no new match (schema 4); the scheduler moves its bots elsewhere.
    draining: Mapped[bool] = mapped_column(Boolean, default=False)
    # What it published at its last poll (running matches, capacity, streams, waiting bots,
    # admission), and when (database clock): for the scheduler's choice of hosts and for
    # ``kozel cluster status``.
    status: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    status_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    # Its PostgreSQL advisory lock key: held on a connection of its own while it lives, so
    # other referees see a crash at once (the lease only after it lapses).
    lock_key: Mapped[int | None] = mapped_column(Integer, nullable=True)


class LadderHostRow(Base):
    """Which referee serves (schedules) a ladder: at most one at a time."""

    __tablename__ = "ladder_hosts"
    ladder: Mapped[str] = mapped_column(String(64), primary_key=True)
    referee_id: Mapped[str] = mapped_column(ForeignKey("referees.id"))


class TicketRow(Base):
    """A bot waiting on a ladder shared by several referees: one row per waiting session, kept
    by the referee that holds its stream (it replaces its rows at every poll)."""

    __tablename__ = "ladder_tickets"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # the session's id
    ladder: Mapped[str] = mapped_column(String(64), index=True)
    referee_id: Mapped[str] = mapped_column(String(64), index=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"))
    slots: Mapped[int] = mapped_column(Integer)  # free match slots of the session
    max_matches: Mapped[int] = mapped_column(Integer)  # what the session declared
    since: Mapped[float] = mapped_column(Float)  # waiting since (database clock)


class AssignmentRow(Base):
    """A match the ladder's scheduler formed and gave a host, until the host starts it (then it
    is a running ``matches`` row). ``seats`` holds, by seat: bot id, ticket id, the referee the
    bot waits on, and the one-time pass of a bot to be redirected (empty when local)."""

    __tablename__ = "ladder_assignments"
    match_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    ladder: Mapped[str] = mapped_column(String(64), index=True)
    host_id: Mapped[str] = mapped_column(String(64), index=True)
    seed: Mapped[str] = mapped_column(String(64))  # hex
    created: Mapped[float] = mapped_column(Float)  # database clock
    seats: Mapped[list] = mapped_column(JSON)
    # The first half's match id when this is a duplicate twin (same seed, seats rotated).
    twin_of: Mapped[str] = mapped_column(String(64), default="")
    rotation: Mapped[int] = mapped_column(Integer, default=0)  # of the seats, in its group


class MatchLuckRow(Base):
    """A finished match's luck (schema 6, docs/luck.md), computed from its replay after the
    match: ``deals`` holds, by deal, each side's card points and luck (None where not dealt
    in); ``error`` says why a replay gave none (then ``deals`` is empty)."""

    __tablename__ = "match_luck"
    match_id: Mapped[str] = mapped_column(ForeignKey("matches.id"), primary_key=True)
    version: Mapped[int] = mapped_column(Integer)  # kozel.analysis.luck.LUCK_VERSION
    computed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    deals: Mapped[list] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(String(256), nullable=True)


class MatchLuckSideRow(Base):
    """One side's luck in a finished match: its match score (1, 1/2, 0) and the score's luck,
    its card points and their luck (each deal's centred on the sides dealt in), over
    ``deals`` deals."""

    __tablename__ = "match_luck_sides"
    __table_args__ = (UniqueConstraint("match_id", "side"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    match_id: Mapped[str] = mapped_column(ForeignKey("matches.id"), index=True)
    side: Mapped[int] = mapped_column(Integer)
    score: Mapped[float] = mapped_column(Float)
    score_luck: Mapped[float] = mapped_column(Float)
    points: Mapped[float] = mapped_column(Float)
    points_luck: Mapped[float] = mapped_column(Float)
    deals: Mapped[int] = mapped_column(Integer)


class ReplayRow(Base):
    """A replay kept in the database (a shared store), so that every referee can serve it."""

    __tablename__ = "replays"
    match_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


class RatingResetRow(Base):
    """An operator started a bot again from the default rating on a ladder (schema 4): an
    event in the order ratings take results, so a late result is rated on the right side of
    it."""

    __tablename__ = "rating_resets"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    ladder: Mapped[str] = mapped_column(String(64), index=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), index=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    by: Mapped[str] = mapped_column(String(64), default="")


class LadderStateRow(Base):
    """A ladder's state for every referee serving it (schema 4): running, paused (no new
    matches; bots wait) or stopped (no new matches; bots are refused). Its row is also the
    lock that puts a ladder's rating changes in one order."""

    __tablename__ = "ladder_states"
    ladder: Mapped[str] = mapped_column(String(64), primary_key=True)
    state: Mapped[str] = mapped_column(String(16), default="running")
    changed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    changed_by: Mapped[str] = mapped_column(String(64), default="")
    reason: Mapped[str] = mapped_column(String(256), default="")
