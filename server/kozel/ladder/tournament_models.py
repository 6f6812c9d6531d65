"""The tournaments' tables (schema 5), used by :mod:`kozel.ladder.tournament_store` only.

The store keeps what cannot be recomputed: each event's definition, seed and seeding, and its
games as they are assigned, played and finished. Pairings, standings, brackets and winners are
recomputed from these by :mod:`kozel.tournament.director`.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from kozel.ladder.models import Base


class TournamentRow(Base):
    """One event: its definition (as validated JSON), seed and the first stage's seeding."""

    __tablename__ = "tournaments"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    spec: Mapped[dict] = mapped_column(JSON)
    seed: Mapped[str] = mapped_column(String(64))  # hex
    seeding: Mapped[list] = mapped_column(JSON)  # the bots in seed order
    ratings: Mapped[dict] = mapped_column(JSON)  # ratings read at registration (seeding)
    state: Mapped[str] = mapped_column(String(16), default="running")  # running | finished
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # The referee that scheduled it last (SQLite: the one that may, while its lease lives).
    scheduler_id: Mapped[str | None] = mapped_column(String(64), nullable=True)


class TournamentGameRow(Base):
    """One game of an event from the moment it can be played: pending (waiting for its bots),
    assigned (a host and, for bots waiting elsewhere, their redirect passes), running,
    finished (its result and replay). A game whose host was lost goes back to pending."""

    __tablename__ = "tournament_games"
    __table_args__ = (UniqueConstraint("tournament", "key"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tournament: Mapped[str] = mapped_column(String(64), index=True)
    key: Mapped[str] = mapped_column(String(96))  # kozel.tournament.games.Game.key
    seats: Mapped[list] = mapped_column(JSON)  # bot names by seat
    seed: Mapped[str] = mapped_column(String(64))  # hex (the director's; kept for the host)
    status: Mapped[str] = mapped_column(String(16), index=True)
    pending_since: Mapped[float] = mapped_column(Float)  # database clock
    host_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    match_id: Mapped[str | None] = mapped_column(String(64), nullable=True, unique=True)
    assigned_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    # By seat: {"kind", "ticket", "referee", "pass"} (pass: a redirected bot's one-time pass).
    passes: Mapped[list | None] = mapped_column(JSON, nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)  # starts lost with their host
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    result: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    # Its replay stays sealed (its seed and decks hidden) until every game of its seed is over.
    sealed: Mapped[bool] = mapped_column(Boolean, default=True)
    replay_path: Mapped[str | None] = mapped_column(String(512), nullable=True)
    # Its luck (schema 8, docs/luck.md), once computed from its replay: the version, each
    # side's figures and each deal's split, or why there is none; SQL NULL until then.
    luck: Mapped[dict | None] = mapped_column(JSON(none_as_null=True), nullable=True)


class TournamentTicketRow(Base):
    """A registered bot waiting for its games on one referee: one row per session, replaced by
    that referee at every poll."""

    __tablename__ = "tournament_tickets"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # the session's id
    tournament: Mapped[str] = mapped_column(String(64), index=True)
    referee_id: Mapped[str] = mapped_column(String(64), index=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"))
    slots: Mapped[int] = mapped_column(Integer)  # free game slots
    since: Mapped[float] = mapped_column(Float)  # database clock
