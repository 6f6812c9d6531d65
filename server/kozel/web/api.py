"""The read-only HTTP JSON API (``/api/...``, OpenAPI schema at ``/api/openapi.json``).

Nothing here needs a token and nothing shows more than a public spectator may see: replays of
sealed duplicate halves are refused, live streams are the spectator hub's (public view, or the
full view held back by the referee's delay). Every list has a bounded size.
"""

import asyncio
import hashlib
import json
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, Response
from google.protobuf.json_format import MessageToDict
from pydantic import BaseModel
from sqlalchemy.exc import SQLAlchemyError
from sse_starlette.sse import EventSourceResponse
from starlette.background import BackgroundTask

from kozel.analysis.review import Settings
from kozel.ladder.cluster_status import read_status
from kozel.ladder.store import Store
from kozel.server.lobby import REPLAY_ID
from kozel.server.match_details import match_details
from kozel.server.replay.file import ReplayError, decode_replay
from kozel.server.replay.limits import ReplayLimits
from kozel.server.settings import WebLimitSettings
from kozel.web.analysis import AnalysisError
from kozel.web.analysis_jobs import AnalysisJobs, Busy, Job
from kozel.web.cpu import CpuBudget, CpuGate
from kozel.web.luck import standings_luck
from kozel.web.queries import CursorError, MatchFilter, WebQueries
from kozel.web.replay_json import JSON_FORMAT, replay_to_json
from kozel.web.rows import (
    BotInfo,
    Ladder,
    MatchSummary,
    Opponent,
    RatingPoint,
    RunningMatch,
    Standing,
)
from kozel.web.sources import LiveError, Sources

NAME = r"^[^\x00-\x1f\x7f]{1,64}$"  # bot and ladder names as the store allows them
# Anchored: a path parameter's pattern is searched for, not matched (use fullmatch in Python).
MATCH_ID = f"^{REPLAY_ID.pattern}$"
MatchId = Annotated[str, PathParam(pattern=MATCH_ID, description="8 to 64 hex digits")]
BotName = Annotated[str, PathParam(pattern=NAME, description="a bot name")]
LadderName = Annotated[str, PathParam(pattern=NAME, description="a ladder name")]


class WebLimits(WebLimitSettings):
    """Every bound of the web (listed in docs/web.md), declared with their defaults and
    ranges in the referee's settings (``web`` section), validated on construction."""

    @property
    def default_page(self) -> int:
        return min(50, self.max_page)


# -- response models (the OpenAPI schema) ------------------------------------------------------


class Standings(BaseModel):
    ladder: str
    standings: list[Standing]


class MatchPage(BaseModel):
    matches: list[MatchSummary]
    next_cursor: str | None  # pass as ?cursor= for the next page; null on the last page


class BotPage(BotInfo):
    recent_matches: list[MatchSummary]
    opponents: list[Opponent]


class RatingHistory(BaseModel):
    bot: str
    ladder: str
    points: list[RatingPoint]


class Running(BaseModel):
    matches: list[RunningMatch]


# -- the router --------------------------------------------------------------------------------


class Api:
    """The API's state: the sources, the limits, the replay JSON cache."""

    def __init__(
        self, sources: Sources, limits: WebLimits, budget: CpuBudget | None = None
    ) -> None:
        self.sources = sources
        self.limits = limits
        self._json: OrderedDict[str, bytes] = OrderedDict()
        self.live: dict[tuple[str, str], int] = {}  # live streams by (match id, address)
        self.gate: CpuGate | None = None  # the CPU cap's turns, when there is a cap
        self.analysis = AnalysisJobs(
            Settings(limits.analysis_budget_ms, limits.analysis_open_nodes),
            budget=budget,
            share=limits.analysis_share,
            cache=limits.analysis_cache,
            queue=limits.analysis_queue,
        )

    def live_slot(self, match_id: str, address: str) -> Callable[[], None] | None:
        """Take one of ``address``'s live slots of a match: what gives it back (once, however
        often it is called), or None when the address holds its share already."""
        key = (match_id, address)
        if self.live.get(key, 0) >= self.limits.max_live_per_address:
            return None
        self.live[key] = self.live.get(key, 0) + 1
        given_back = False

        def give_back() -> None:
            nonlocal given_back
            if given_back:
                return
            given_back = True
            if (left := self.live.pop(key) - 1) > 0:
                self.live[key] = left

        return give_back

    @property
    def queries(self) -> WebQueries:
        if self.sources.store is None:
            raise HTTPException(404, "this server has no ladder store")
        return WebQueries(self.sources.store)

    async def ladder_names(self) -> list[str]:
        """The ladders served now and those the store has a record of."""
        served = self.sources.ladder_names() or []
        stored = (
            [x.name for x in await asyncio.to_thread(self.queries.ladders)]
            if self.sources.store is not None
            else []
        )
        return sorted(set(served) | set(stored))

    async def details(self, match_id: str) -> dict[str, Any] | None:
        live = self.sources.live_detail(match_id)
        d = await asyncio.to_thread(
            match_details,
            match_id,
            store=self.sources.store,
            replays=self.sources.replays,
            live=live,
        )
        if d is None:
            return None
        out = MessageToDict(
            d, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
        try:
            out["sealed"] = await self.sources.sealed(match_id)
        except LiveError:
            out["sealed"] = True  # it cannot be told now: kept secret
        return out

    async def replay_file(self, match_id: str) -> tuple[bytes, str]:
        """A replay's bytes and ETag; 404 unknown, 403 sealed, 503 when that cannot be told."""
        try:
            sealed = await self.sources.sealed(match_id)
        except LiveError as exc:
            raise HTTPException(exc.status, exc.message, headers={"Retry-After": "5"}) from None
        if sealed:
            raise HTTPException(
                403, f"replay {match_id} is sealed until its duplicate twin match has been played"
            )
        try:
            data = await self.sources.replay_bytes(match_id, self.limits.max_replay_bytes)
        except OverflowError:
            raise HTTPException(
                413, f"the replay is larger than {self.limits.max_replay_bytes} bytes"
            ) from None
        except LiveError as exc:
            raise HTTPException(exc.status, exc.message) from None
        if data is None:
            raise HTTPException(404, f"no replay {match_id}")
        return data, '"' + hashlib.sha256(data).hexdigest()[:32] + '"'

    async def replay_json(self, match_id: str, data: bytes, etag: str) -> bytes:
        cached = self._json.get(etag)
        if cached is not None:
            self._json.move_to_end(etag)
            return cached
        try:
            body = await asyncio.to_thread(_convert, data, self.sources.replays.limits)
        except ReplayError as exc:
            raise HTTPException(422, f"replay {match_id} cannot be read: {exc}") from None
        self._json[etag] = body
        while len(self._json) > self.limits.replay_cache:
            self._json.popitem(last=False)
        return body


def _convert(data: bytes, limits: ReplayLimits) -> bytes:
    return json.dumps(replay_to_json(decode_replay(data, limits)), separators=(",", ":")).encode()


async def _ladder_states(store: Store | None) -> dict[str, dict[str, Any]]:
    """Each served ladder's state as the referees publish it in the store (what ``kozel
    cluster status`` shows, less who stopped it and why: that is for operators)."""
    if store is None:
        return {}
    try:
        status = await asyncio.to_thread(read_status, store)
    except SQLAlchemyError:  # the pages still answer; the state is just not shown
        return {}
    return {
        x.name: {
            "state": x.state,
            "waiting_bots": x.waiting_bots,
            "stalled": x.stalled if x.state == "running" else "",
            "capped_groups": x.capped,
            "groups": x.groups,
        }
        for x in status.ladders
    }


def _not_modified(request: Request, etag: str) -> bool:
    tags = request.headers.get("if-none-match", "")
    return etag in [t.strip() for t in tags.split(",")] or tags.strip() == "*"


def _match_filter(
    ladder: str | None,
    bot: str | None,
    since: datetime | None,
    until: datetime | None,
    reason: str | None,
    status: str | None,
) -> MatchFilter:
    return MatchFilter(
        ladder=ladder or None,
        bot=bot or None,
        since=since,
        until=until,
        reason=reason or None,
        status=status or None,
    )


def build_router(api: Api) -> APIRouter:
    """The ``/api`` routes."""
    r = APIRouter(prefix="/api")
    _ladder_routes(r, api)
    _bot_routes(r, api)
    _match_list_routes(r, api)
    _replay_routes(r, api)
    _analysis_routes(r, api)
    _live_routes(r, api)
    return r


def _ladder_routes(r: APIRouter, api: Api) -> None:
    """Ladders and their standings."""
    lim = api.limits

    @r.get("/ladders", response_model=list[Ladder], summary="Ladders with bot and match counts")
    async def ladders() -> list[Ladder]:
        known = {
            x.name: x
            for x in (
                await asyncio.to_thread(api.queries.ladders)
                if api.sources.store is not None
                else []
            )
        }
        names = sorted(set(api.sources.ladder_names() or []) | set(known))
        states = await _ladder_states(api.sources.store)
        return [
            known.get(n, Ladder(name=n, bots=0, matches={})).model_copy(update=states.get(n, {}))
            for n in names
        ]

    @r.get(
        "/ladders/{ladder}/standings",
        response_model=Standings,
        summary="A ladder's standings by ordinal (mu - 3 sigma)",
    )
    async def standings(
        ladder: LadderName,
        limit: Annotated[int, Query(ge=1, le=lim.max_standings)] = lim.max_standings,
    ) -> Standings:
        if ladder not in await api.ladder_names():
            raise HTTPException(404, f"no ladder {ladder}")
        rows = await asyncio.to_thread(api.queries.store.standings, ladder)
        luck = await asyncio.to_thread(standings_luck, api.queries.store, ladder)
        return Standings(
            ladder=ladder,
            standings=[
                Standing.of(i + 1, x, luck=luck.get(x.name)) for i, x in enumerate(rows[:limit])
            ],
        )


def _bot_routes(r: APIRouter, api: Api) -> None:
    """A bot: its page data and rating history."""
    lim = api.limits

    @r.get(
        "/bots/{name:path}/ratings",
        response_model=RatingHistory,
        summary="A bot's rating after each rated match on a ladder, oldest first",
    )
    async def ratings(
        name: BotName,
        request: Request,
        ladder: Annotated[str | None, Query(pattern=NAME, description="required")] = None,
        limit: Annotated[int, Query(ge=1, le=lim.max_history)] = lim.max_history,
    ) -> Any:
        if not request.scope.get("raw_path", b"/ratings").endswith(b"/ratings"):
            # The name itself ends with "/ratings" (its slash sent as %2F): the bot's page.
            page = await bot(name + "/ratings")
            return JSONResponse(page.model_dump(mode="json"))
        if ladder is None:
            raise HTTPException(422, [{"loc": ["query", "ladder"], "msg": "Field required"}])
        q = api.queries
        if await asyncio.to_thread(q.bot, name) is None:
            raise HTTPException(404, f"no bot {name}")
        points = await asyncio.to_thread(q.rating_history, name, ladder, limit)
        return RatingHistory(bot=name, ladder=ladder, points=points)

    @r.get(
        "/bots/{name:path}",
        response_model=BotPage,
        summary="A bot: its ladders, latest matches and results against each opponent "
        "(a / in its name is sent as %2F)",
    )
    async def bot(name: BotName) -> BotPage:
        q = api.queries
        found = await asyncio.to_thread(q.bot, name)
        if found is None:
            raise HTTPException(404, f"no bot {name}")
        recent, _ = await asyncio.to_thread(q.matches, MatchFilter(bot=name), lim.recent_matches)
        opponents = await asyncio.to_thread(q.opponents, name, lim.opponents_window)
        return BotPage(**dict(found), recent_matches=recent, opponents=opponents)


def _match_list_routes(r: APIRouter, api: Api) -> None:
    """Match lists and one match's data."""
    lim = api.limits

    @r.get(
        "/matches",
        response_model=MatchPage,
        summary="Matches newest first, filtered, one page at a time",
    )
    async def matches(
        ladder: Annotated[str | None, Query(pattern=NAME)] = None,
        bot: Annotated[str | None, Query(pattern=NAME)] = None,
        since: Annotated[datetime | None, Query(description="started at or after")] = None,
        until: Annotated[datetime | None, Query(description="started before")] = None,
        reason: Annotated[
            str | None,
            Query(
                pattern=NAME,
                description=(
                    "end reason as stored: MATCH_END_REASON_LIMIT, MATCH_END_REASON_FIXED_DEALS, "
                    "MATCH_END_REASON_FORFEIT, or an abort reason"
                ),
            ),
        ] = None,
        status: Annotated[str | None, Query(pattern="^(running|finished|aborted)$")] = None,
        limit: Annotated[int, Query(ge=1, le=lim.max_page)] = lim.default_page,
        cursor: Annotated[str | None, Query(max_length=200)] = None,
    ) -> MatchPage:
        if api.sources.store is None:  # a web server over a replay folder only
            offset = int(cursor) if cursor and cursor.isdigit() else 0
            page, more = await asyncio.to_thread(api.sources.replay_matches, limit, offset)
            return MatchPage(matches=page, next_cursor=str(offset + limit) if more else None)
        f = _match_filter(ladder, bot, since, until, reason, status)
        try:
            page, nxt = await asyncio.to_thread(api.queries.matches, f, limit, cursor)
        except CursorError as exc:
            raise HTTPException(400, str(exc)) from None
        return MatchPage(matches=page, next_cursor=nxt)

    @r.get(
        "/matches/{match_id}",
        summary="One match: seats, result, ranks, rating changes",
        description="GetMatchResponse of match.proto as JSON (proto field names), plus "
        "`sealed` (true for a duplicate first half whose twin is to be played).",
    )
    async def match(match_id: MatchId) -> dict[str, Any]:
        d = await api.details(match_id)
        if d is None:
            raise HTTPException(404, f"no match {match_id}")
        return d


def _replay_routes(r: APIRouter, api: Api) -> None:
    """A match's replay, as its file and as JSON."""

    @r.get(
        "/matches/{match_id}/replay.kzr",
        summary="The replay file (gzip Replay message)",
        response_class=Response,
        responses={200: {"content": {"application/octet-stream": {}}}},
    )
    async def replay_kzr(match_id: MatchId, request: Request) -> Response:
        data, etag = await api.replay_file(match_id)
        headers = {"ETag": etag, "Cache-Control": "no-cache"}
        if _not_modified(request, etag):
            return Response(status_code=304, headers=headers)
        headers["Content-Disposition"] = f'attachment; filename="{match_id}.kzr"'
        return Response(data, media_type="application/octet-stream", headers=headers)

    @r.get(
        "/matches/{match_id}/replay.json",
        summary="The replay as JSON, with the table after every step as each seat saw it",
        description=f"Format `{JSON_FORMAT}`: header, deals, steps (action, think time, "
        "bank left) and frames (`all`: everything; `seats[n]`: what seat n "
        "knew), built with the engine's observation filter.",
    )
    async def replay_json(match_id: MatchId, request: Request) -> Response:
        data, etag = await api.replay_file(match_id)
        etag = etag[:-1] + '-json"'
        headers = {"ETag": etag, "Cache-Control": "no-cache"}
        if _not_modified(request, etag):
            return Response(status_code=304, headers=headers)
        body = await api.replay_json(match_id, data, etag)
        return Response(body, media_type="application/json", headers=headers)


def _analysis_routes(r: APIRouter, api: Api) -> None:
    """A match's analysis."""

    @r.get(
        "/matches/{match_id}/analysis",
        summary="Every decision of the match scored (computed on demand)",
        description="Format `kozel-analysis/1` (docs/analysis.md): per decision the legal "
        "actions with their open-hand and information-set values, the loss of the one "
        "played and its label; per seat and side the summaries. The first request queues "
        "the analysis and answers 202 with `status` (queued, running), `done` and `total` "
        "(steps); ask again until 200. 422 for a replay outside the analysis (the money "
        "game), 503 when the queue is full.",
        responses={202: {"description": "queued or running: the progress"}},
    )
    async def analysis(match_id: MatchId) -> Response:
        data, _etag = await api.replay_file(match_id)
        key, known = api.analysis.lookup(data)
        if isinstance(known, bytes):
            return Response(known, media_type="application/json")
        if isinstance(known, str):
            raise HTTPException(422, f"replay {match_id} cannot be analysed: {known}")
        if known is None:
            try:
                known = api.analysis.start(key, data)
            except Busy as exc:
                raise HTTPException(503, str(exc)) from None
            except AnalysisError as exc:
                raise HTTPException(422, f"replay {match_id} cannot be analysed: {exc}") from None
        assert isinstance(known, Job)
        return JSONResponse(known.progress(), status_code=202)


def _live_routes(r: APIRouter, api: Api) -> None:
    """Running matches and their live events."""
    lim = api.limits

    @r.get("/live", response_model=Running, summary="The matches running now")
    async def live() -> Running:
        rows = await api.sources.running()
        return Running(matches=rows[: lim.max_page])

    @r.get(
        "/live/{match_id}/events",
        summary="A running match as Server-Sent Events",
        description="Each event's data is one WatchMatch SpectatorEvent as JSON (proto "
        "field names); the event name is its kind (snapshot, deal_start, event, "
        "deal_end, match_end). `full=true` asks for every hand, held back by the "
        "referee's spectator delay (409 for a sealed duplicate half or a referee "
        "without a delay). An event named `dropped` ends a stream the referee "
        "dropped.",
        response_class=Response,
        responses={200: {"content": {"text/event-stream": {}}}},
    )
    async def live_events(match_id: MatchId, request: Request, full: bool = False) -> Response:
        address = request.client.host if request.client else ""
        give_back = api.live_slot(match_id, address)
        if give_back is None:
            return JSONResponse(
                {
                    "detail": f"your address follows this match {lim.max_live_per_address} "
                    "times already (web.max_live_per_address); close a stream first"
                },
                status_code=429,
            )
        try:
            stream = await api.sources.watch(match_id, full, address)
        except LiveError as exc:
            give_back()
            return JSONResponse({"detail": exc.message}, status_code=exc.status)

        async def events():
            try:
                async for item in _named(stream):
                    if api.gate is not None:  # each event waits its address's turn
                        await api.gate.turn(address, bounded=False)
                    yield item
            finally:
                give_back()

        return EventSourceResponse(
            events(),
            ping=15,
            headers={"Cache-Control": "no-cache"},
            background=BackgroundTask(give_back),
        )


EVENT_KINDS = ("snapshot", "deal_start", "event", "deal_end", "match_end", "dropped")


async def _named(stream: AsyncIterator[dict[str, Any]]) -> AsyncIterator[dict[str, str]]:
    """Spectator events as SSE messages named by their kind."""
    n = 0
    async for ev in stream:
        n += 1
        kind = next((k for k in EVENT_KINDS if k in ev), "event")
        yield {"event": kind, "id": str(n), "data": json.dumps(ev)}
