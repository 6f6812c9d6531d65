"""Luck on the ladder pages (docs/luck.md): each bot's luck-corrected match score beside its
rating, a pair of bots' history (the matchup page), and each deal's luck and skill split on
the match page (a ladder match's or a tournament game's). The figures are the referee's luck
worker's (:mod:`kozel.ladder.luck_store`); this module only reads them. The rating stays
OpenSkill on results."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query
from fastapi import Path as PathParam
from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import Session, aliased

from kozel.ladder import luck_store
from kozel.ladder.models import BotRow, MatchRow, MatchSeatRow
from kozel.ladder.store import Store
from kozel.ladder.tournament_models import TournamentGameRow
from kozel.server.lobby import REPLAY_ID
from kozel.web.rows import LuckEstimate

MATCHUP_LIMIT = 200  # matches of one pair listed (the latest)
NAME = r"^[^\x00-\x1f\x7f]{1,64}$"  # bot and ladder names as the store allows them
MatchId = Annotated[
    str, PathParam(pattern=f"^{REPLAY_ID.pattern}$", description="8 to 64 hex digits")
]
LadderName = Annotated[str, PathParam(pattern=NAME, description="a ladder name")]
BotQuery = Annotated[str, Query(pattern=NAME, description="a bot name")]


class MatchupSeat(BaseModel):
    bot: str
    side: int
    rank: int | None
    penalty: int | None
    score: float | None  # the side's match score (1 win, 1/2 draw, 0 loss); null: luck unknown
    luck: float | None  # the score's luck
    corrected: float | None  # score minus luck


class MatchupMatch(BaseModel):
    match_id: str
    ended_at: Any
    group: str  # its duplicate group's first match (else its own id)
    seats: list[MatchupSeat]


class Matchup(BaseModel):
    ladder: str
    a: str
    b: str
    matches: list[MatchupMatch]  # the latest first, at most MATCHUP_LIMIT
    performance: dict[str, LuckEstimate]  # by bot, over the listed matches whose luck is known


class DealLuck(BaseModel):
    points: list[float | None]  # by side: card points, centred on the sides dealt in
    luck: list[float | None]  # by side: the part the cards gave


class SideLuck(BaseModel):
    side: int
    score: float  # the match score: 1 win, 1/2 draw, 0 loss
    score_luck: float  # the part of it the cards gave
    points: float  # card points over the deals, centred on the sides
    points_luck: float
    deals: int


class MatchLuck(BaseModel):
    match_id: str
    # computed; pending (a finished ladder match or tournament game whose luck the referee has
    # not computed yet, or a duplicate match or tournament game whose group is still being
    # played); none (not a finished ladder match or tournament game: no figures will come)
    status: str
    version: int | None = None
    error: str | None = None
    sides: list[SideLuck] = []
    deals: list[DealLuck] = []


def standings_luck(store: Store, ladder: str) -> dict[str, LuckEstimate]:
    """(Blocking.) Every bot's luck-corrected score on ``ladder``."""
    with Session(store.engine) as s:
        scores = luck_store.corrected_scores(s, ladder)
    return {bot: LuckEstimate(**figures) for bot, figures in scores.items()}


def matchup(store: Store, ladder: str, a: str, b: str) -> dict[str, Any]:
    """(Blocking.) The finished matches of ``ladder`` where bots ``a`` and ``b`` both sat,
    the latest first, with each seat's result and luck, and the pair's corrected scores."""
    sa, sb = aliased(MatchSeatRow), aliased(MatchSeatRow)
    ba, bb = aliased(BotRow), aliased(BotRow)
    with Session(store.engine) as s:
        ids = list(
            s.scalars(
                select(MatchRow.id)
                .join(sa, sa.match_id == MatchRow.id)
                .join(ba, (ba.id == sa.bot_id) & (ba.name == a))
                .join(sb, sb.match_id == MatchRow.id)
                .join(bb, (bb.id == sb.bot_id) & (bb.name == b))
                .where(MatchRow.ladder == ladder, MatchRow.status == "finished")
                .order_by(MatchRow.ended_at.desc(), MatchRow.id)
                .limit(MATCHUP_LIMIT)
            )
        )
        figures = luck_store.seat_figures(s, ladder, match_ids=ids) if ids else []
        rows = _seats(s, ids)
        performance = luck_store.corrected_scores(s, ladder, [a, b], ids) if ids else {}
    known = {(x.match_id, x.bot, x.figures.side): x for x in figures}
    matches = []
    for match_id in ids:
        m, seats = rows[match_id]
        out = []
        for bot, side, rank, penalty in seats:
            x = known.get((match_id, bot, side))
            out.append(
                {
                    "bot": bot,
                    "side": side,
                    "rank": rank,
                    "penalty": penalty,
                    "score": None if x is None else x.score,
                    "luck": None if x is None else round(x.figures.score_luck, 4),
                    "corrected": None if x is None else round(x.corrected, 4),
                }
            )
        matches.append(
            {"match_id": match_id, "ended_at": m.ended_at, "group": m.dup_group or match_id}
            | {"seats": out}
        )
    return {"ladder": ladder, "a": a, "b": b, "matches": matches, "performance": performance}


def _seats(s: Session, ids: list[str]) -> dict[str, tuple[MatchRow, list[tuple]]]:
    """The matches ``ids`` with their seats (bot, side, rank, penalty) in seat order."""
    out: dict[str, tuple[MatchRow, list[tuple]]] = {
        m.id: (m, []) for m in s.scalars(select(MatchRow).where(MatchRow.id.in_(ids)))
    }
    for match_id, name, side, rank, penalty in s.execute(
        select(MatchSeatRow.match_id, BotRow.name, MatchSeatRow.side, MatchSeatRow.rank)
        .add_columns(MatchSeatRow.penalty)
        .join(BotRow, BotRow.id == MatchSeatRow.bot_id)
        .where(MatchSeatRow.match_id.in_(ids))
        .order_by(MatchSeatRow.match_id, MatchSeatRow.seat)
    ):
        out[match_id][1].append((name, side, rank, penalty))
    return out


def match_luck(store: Store | None, match_id: str) -> dict[str, Any]:
    """(Blocking.) A match's deals split into luck and the rest, or why there is none yet (a
    ladder match's, else a tournament game's)."""
    if store is None:
        return {"match_id": match_id, "status": "none"}
    with Session(store.engine) as s:
        row = luck_store.deal_split(s, match_id)
        if row is None:
            m = s.get(MatchRow, match_id)
            if m is None:
                return _game_luck(s, match_id)
            status = "pending" if m.status == "finished" else "none"
            return {"match_id": match_id, "status": status}
        sides = [
            {"side": x.side, "score": x.score, "score_luck": x.score_luck}
            | {"points": x.points, "points_luck": x.points_luck, "deals": x.deals}
            for x in luck_store.side_rows(s, match_id)
        ]
        return {
            "match_id": match_id,
            "status": "computed",
            "version": row.version,
            "error": row.error,
            "sides": sides,
            "deals": row.deals,
        }


def _game_luck(s: Session, match_id: str) -> dict[str, Any]:
    """A tournament game's luck (pending until its seed group is played and computed)."""
    g = s.scalar(select(TournamentGameRow).where(TournamentGameRow.match_id == match_id))
    if g is None or g.status != "finished":
        return {"match_id": match_id, "status": "none"}
    if g.luck is None:
        return {"match_id": match_id, "status": "pending"}
    luck = g.luck
    return {"match_id": match_id, "status": "computed", "version": luck["version"]} | {
        "error": luck["error"] or None,
        "sides": luck["sides"],
        "deals": luck["deals"],
    }


def luck_router(store: Store | None, ladder_names: Callable[[], Awaitable[list[str]]]) -> APIRouter:
    """The ``/api`` routes of the luck figures (``ladder_names``: the known ladders)."""
    r = APIRouter(prefix="/api")

    def need_store() -> Store:
        if store is None:
            raise HTTPException(404, "this web server has no ladder store")
        return store

    @r.get(
        "/ladders/{ladder}/matchup",
        response_model=Matchup,
        summary="Two bots' finished matches on a ladder, with results, luck and each bot's "
        "luck-corrected score (95 % interval)",
    )
    async def pair(ladder: LadderName, a: BotQuery, b: BotQuery) -> dict[str, Any]:
        st = need_store()
        if ladder not in await ladder_names():
            raise HTTPException(404, f"no ladder {ladder}")
        return await asyncio.to_thread(matchup, st, ladder, a, b)

    @r.get(
        "/matches/{match_id}/luck",
        response_model=MatchLuck,
        summary="Each deal's card points and the part the cards gave (luck), by side",
        description="Skill is the card points minus the luck. `status` is `pending` until the "
        "referee's luck worker has computed it (a duplicate match or a tournament game: once "
        "its group is played), `none` for a match that gets no figures (not a finished ladder "
        "match or tournament game).",
    )
    async def luck(match_id: MatchId) -> dict[str, Any]:
        return await asyncio.to_thread(match_luck, store, match_id)

    return r
