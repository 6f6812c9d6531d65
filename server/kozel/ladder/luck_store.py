"""Each finished ladder match's and tournament game's luck (docs/luck.md) in the store, and
what the pages make of it: a bot's, or a pair's, luck-corrected match score with its 95 %
interval. A tournament game's luck is kept with the game (``tournament_games.luck``) and its
result's ``luck_corrected``; :mod:`kozel.tournament.luck` makes the event's figures of them.

The figures are computed after a match from its replay (the referee's luck worker,
:mod:`kozel.server.luck_worker`) and written here; the rating stays OpenSkill on results. A
bot's corrected score is the mean over its finished matches of (its side's score minus the
score's luck); the matches of one duplicate group are not independent (one seed), so the
interval is cluster-robust over groups (a match outside a group is a group of its own)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kozel.ladder.matchmaking import live_referees
from kozel.ladder.models import BotRow, MatchLuckRow, MatchLuckSideRow, MatchRow, MatchSeatRow
from kozel.ladder.store import Store, db_now
from kozel.ladder.tournament_models import TournamentGameRow, TournamentRow
from kozel.tournament.intervals import estimate
from kozel.tournament.spec import spec_from_json

ERROR_CHARS = 256  # of why a replay gave no luck
# Why a finished match has no luck: the money game (no match score), no replay kept, a replay
# that cannot be read, one the engine does not re-play, a failure of the computation.
NO_LUCK = ("money_game", "no_replay", "unreadable", "not_replayable", "failed")


@dataclass(frozen=True, slots=True)
class SideFigures:
    """One side's figures in one match: its match score (1, 1/2, 0) and that score's luck;
    its card points over the deals (each deal's centred on the sides dealt in) and their
    luck."""

    side: int
    score: float
    score_luck: float
    points: float
    points_luck: float
    deals: int


@dataclass(frozen=True, slots=True)
class MatchLuck:
    """A match's luck: by side, and by deal (each side's centred card points and luck, None
    where it was not dealt in); or why its replay gave none (``error``, and ``reason``: one of
    :data:`NO_LUCK`, for the metrics)."""

    version: int
    sides: tuple[SideFigures, ...] = ()
    deals: tuple[dict[str, list[float | None]], ...] = ()
    error: str = ""
    reason: str = ""


# -- the worker's side -------------------------------------------------------------------------


def pending(
    store: Store,
    ladders: Sequence[str],
    referee_id: str | None,
    limit: int,
    skip: Collection[str] = (),
) -> list[str]:
    """(Blocking.) Up to ``limit`` finished matches of ``ladders`` whose luck is not stored
    yet, but those in ``skip``, the earliest ended first: those hosted by ``referee_id``, by
    no known referee, or by a referee that is gone (its lease lapsed or, on PostgreSQL, its
    process ended: :func:`_not_theirs`); any referee's if ``referee_id`` is None."""
    with store.transaction() as s:
        q = _ladder_pending(ladders, _others_live(s, referee_id))
        return _earliest(s, q, MatchRow.id, MatchRow.ended_at, skip, limit)


def _others_live(s: Session, referee_id: str | None) -> list[str] | None:
    """The live referees but ``referee_id`` (None: no referee's matches are left out)."""
    if referee_id is None:
        return None
    return sorted(set(live_referees(s, db_now(s))) - {referee_id})


def _not_theirs(host: Any, others: list[str]) -> Any:
    """Hosted by none of the ``others`` (live referees): by this referee, by no known one, or
    by one that is gone, whose matches nobody else would do (orphans). Several referees may
    then compute an orphan's luck at once: the result is the same (a function of the replay,
    which the shared store keeps) and the store keeps the first."""
    return host.is_(None) | host.not_in(others)


def _ladder_pending(ladders: Sequence[str], others: list[str] | None) -> Select:
    q = (
        select(MatchRow.id)
        .outerjoin(MatchLuckRow, MatchLuckRow.match_id == MatchRow.id)
        .where(
            MatchRow.ladder.in_(list(ladders)),
            MatchRow.status == "finished",
            MatchLuckRow.match_id.is_(None),
        )
    )
    if others is not None:
        q = q.where(_not_theirs(MatchRow.referee_id, others))
    return q


def _earliest(s: Session, q: Any, ident: Any, ended: Any, skip: Collection[str], n: int) -> list:
    """The first ``n`` ids of query ``q`` by end time, but those in ``skip``."""
    q = q.order_by(ended, ident).limit(n)
    if skip:
        q = q.where(ident.not_in(sorted(skip)))
    return [x for x in s.scalars(q) if x]


def pending_count(
    store: Store, ladders: Sequence[str], events: Sequence[str], referee_id: str | None
) -> int:
    """(Blocking.) How many finished matches of ``ladders`` and games of the tournaments
    ``events`` :func:`pending` and :func:`pending_games` have still to give (those whose
    group is still played included)."""
    with store.transaction() as s:
        others = _others_live(s, referee_id)
        queries = [_ladder_pending(ladders, others)] if ladders else []
        queries += [_games_pending(events, others, sealed=True)] if events else []
        return sum(s.scalar(select(func.count()).select_from(q.subquery())) or 0 for q in queries)


def save(store: Store, match_id: str, luck: MatchLuck) -> bool:
    """(Blocking.) Store a match's luck; False when it was stored already (another referee,
    or a retried call)."""
    try:
        with store.transaction() as s:
            if s.get(MatchLuckRow, match_id) is not None:
                return False
            s.add(
                MatchLuckRow(
                    match_id=match_id,
                    version=luck.version,
                    computed_at=datetime.now(UTC),
                    deals=list(luck.deals),
                    error=luck.error[:ERROR_CHARS] or None,
                )
            )
            s.flush()
            for f in luck.sides:
                s.add(MatchLuckSideRow(match_id=match_id, **_fields(f)))
    except IntegrityError:  # stored meanwhile by someone else
        return False
    return True


def _fields(f: SideFigures) -> dict[str, Any]:
    return {
        "side": f.side,
        "score": f.score,
        "score_luck": f.score_luck,
        "points": f.points,
        "points_luck": f.points_luck,
        "deals": f.deals,
    }


# -- tournament games ---------------------------------------------------------------------------


def pending_games(
    store: Store,
    events: Sequence[str],
    referee_id: str | None,
    limit: int,
    skip: Collection[str] = (),
) -> list[str]:
    """(Blocking.) Up to ``limit`` finished games of the tournaments ``events`` whose replays
    are no longer sealed (their seed group is played) and whose luck is not stored yet, but
    those in ``skip``: their match ids, the earliest ended first; those hosted by
    ``referee_id`` or by a referee that is gone, as :func:`pending` (any host's if None)."""
    g = TournamentGameRow
    with store.transaction() as s:
        q = _games_pending(events, _others_live(s, referee_id))
        return _earliest(s, q, g.match_id, g.ended_at, skip, limit)


def _games_pending(events: Sequence[str], others: list[str] | None, sealed: bool = False) -> Select:
    g = TournamentGameRow
    q = select(g.match_id).where(
        g.tournament.in_(list(events)),
        g.status == "finished",
        g.luck.is_(None),
        g.match_id.is_not(None),
    )
    if not sealed:
        q = q.where(g.sealed.is_(False))
    if others is not None:
        q = q.where(_not_theirs(g.host_id, others))
    return q


def save_game(store: Store, match_id: str, luck: MatchLuck) -> bool:
    """(Blocking.) Store a tournament game's luck, and its result's ``luck_corrected`` (by
    seat: its points minus its side's score luck); False when it was stored already or the
    game is not a finished one."""
    with store.transaction() as s:
        g = s.scalar(
            select(TournamentGameRow)
            .where(TournamentGameRow.match_id == match_id)
            .with_for_update()
        )
        if g is None or g.luck is not None or g.status != "finished" or g.result is None:
            return False
        g.luck = luck_json(luck)
        if not luck.error:
            event = s.get(TournamentRow, g.tournament)
            assert event is not None  # a game's event is never deleted
            side_of = spec_from_json(event.spec).rules().side_of(len(g.seats))
            score_luck = {f.side: f.score_luck for f in luck.sides}
            corrected = [p - score_luck[side_of[i]] for i, p in enumerate(g.result["points"])]
            g.result = {**g.result, "luck_corrected": corrected}
    return True


def luck_json(luck: MatchLuck) -> dict[str, Any]:
    """A match's luck as a tournament game's row keeps it."""
    return {
        "version": luck.version,
        "error": luck.error[:ERROR_CHARS],
        "sides": [_fields(f) for f in luck.sides],
        "deals": list(luck.deals),
    }


# -- what the pages read -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SeatFigures:
    """One bot's seat in a finished match whose luck is known."""

    match_id: str
    group: str  # its duplicate group's first match id, else its own
    ended_at: datetime | None
    bot: str
    figures: SideFigures  # of the bot's side

    @property
    def score(self) -> float:
        return self.figures.score

    @property
    def corrected(self) -> float:
        """The score minus its luck."""
        return self.figures.score - self.figures.score_luck


def seat_figures(
    s: Session, ladder: str, bots: Sequence[str] | None = None, match_ids: Sequence[str] = ()
) -> list[SeatFigures]:
    """Every seat of the finished matches of ``ladder`` whose luck is known (only the seats
    of ``bots`` if given; only the matches ``match_ids`` if given), the latest ended first."""
    q = (
        select(MatchRow, MatchSeatRow.side, BotRow.name, MatchLuckSideRow)
        .join(MatchSeatRow, MatchSeatRow.match_id == MatchRow.id)
        .join(BotRow, BotRow.id == MatchSeatRow.bot_id)
        .join(
            MatchLuckSideRow,
            (MatchLuckSideRow.match_id == MatchRow.id)
            & (MatchLuckSideRow.side == MatchSeatRow.side),
        )
        .where(MatchRow.ladder == ladder, MatchRow.status == "finished")
        .order_by(MatchRow.ended_at.desc(), MatchRow.id, MatchSeatRow.seat)
    )
    if bots is not None:
        q = q.where(BotRow.name.in_(list(bots)))
    if match_ids:
        q = q.where(MatchRow.id.in_(list(match_ids)))
    return [
        SeatFigures(
            m.id,
            m.dup_group or m.id,
            m.ended_at,
            name,
            SideFigures(side, x.score, x.score_luck, x.points, x.points_luck, x.deals),
        )
        for m, side, name, x in s.execute(q).all()
    ]


def corrected_scores(
    s: Session, ladder: str, bots: Sequence[str] | None = None, match_ids: Sequence[str] = ()
) -> dict[str, dict[str, Any]]:
    """Each bot's luck-corrected match score on ``ladder`` (an
    :class:`~kozel.tournament.intervals.Estimate` as a dict, with ``plain``: the plain mean
    score of the same matches), clustered by duplicate group; only
    ``bots``, and only over ``match_ids``, if given. The store sums each group (a bot sits in
    one seat of a match: the scheduler seats distinct bots)."""
    group = func.coalesce(MatchRow.dup_group, MatchRow.id)
    x = MatchLuckSideRow
    q = (
        select(BotRow.name, func.count(), func.sum(x.score - x.score_luck), func.sum(x.score))
        .select_from(MatchRow)
        .join(MatchSeatRow, MatchSeatRow.match_id == MatchRow.id)
        .join(BotRow, BotRow.id == MatchSeatRow.bot_id)
        .join(x, (x.match_id == MatchRow.id) & (x.side == MatchSeatRow.side))
        .where(MatchRow.ladder == ladder, MatchRow.status == "finished")
        .group_by(BotRow.name, group)
    )
    if bots is not None:
        q = q.where(BotRow.name.in_(list(bots)))
    if match_ids:
        q = q.where(MatchRow.id.in_(list(match_ids)))
    by_bot: dict[str, list[tuple[int, float, float]]] = {}
    for name, n, corrected, plain in s.execute(q):
        by_bot.setdefault(name, []).append((n, corrected, plain))
    out = {}
    for name, rows in by_bot.items():
        est = estimate([(n, c) for n, c, _ in rows])
        if est is not None:
            plain = sum(p for _, _, p in rows) / est.matches
            out[name] = est.as_dict() | {"plain": round(plain, 4)}
    return out


def deal_split(s: Session, match_id: str) -> MatchLuckRow | None:
    """A match's stored luck row (its deals' split), None if not computed (yet)."""
    return s.get(MatchLuckRow, match_id)


def side_rows(s: Session, match_id: str) -> list[MatchLuckSideRow]:
    """A match's stored luck by side, in side order."""
    return list(
        s.scalars(
            select(MatchLuckSideRow)
            .where(MatchLuckSideRow.match_id == match_id)
            .order_by(MatchLuckSideRow.side)
        )
    )
