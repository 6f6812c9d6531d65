"""Tournament pages and their JSON API: ``/tournaments`` (the events), ``/tournaments/{name}``
(format, stage, round, pairings with live and finished games, standings, brackets, the
crosstable, the winners), ``/api/tournaments[/{name}]`` and ``/api/tournaments/{name}/
replays.zip`` (every replay no longer sealed, with the results). Read from the store, like
``kozel tournament show``; live games come from the sources' running matches."""

from __future__ import annotations

import asyncio
import re
import tempfile
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException
from fastapi import Path as PathParam
from fastapi.responses import Response, StreamingResponse

from kozel.ladder import tournament_store as ts
from kozel.server import tournament_archive
from kozel.tournament.spec import NAME
from kozel.web.sources import Sources

EventName = Annotated[str, PathParam(pattern=NAME, description="a tournament's name")]
_NAME = re.compile(NAME)
CHUNK = 1 << 16


async def _view(sources: Sources, name: str) -> ts.View:
    if sources.store is None or not _NAME.match(name):
        raise HTTPException(404, f"no tournament {name}")
    found = await asyncio.to_thread(ts.view, sources.store, name)
    if found is None:
        raise HTTPException(404, f"no tournament {name}")
    return found


def _summary(v: ts.View) -> dict[str, Any]:
    return {
        "name": v.name,
        "done": v.state.done,
        "stages": [s.format for s in v.stored.spec.stages],
        "bots": len(v.stored.spec.bots),
        "games_finished": sum(g.status == "finished" for g in v.games.values()),
    }


def _mark_live(body: dict[str, Any], live: set[str]) -> None:
    """Each game says whether it can be watched now (running here or on a source)."""
    for st in body["stages"]:
        for rnd in st["rounds"]:
            for p in rnd["pairings"]:
                for g in p["games"]:
                    g["live"] = g["status"] == "running" and g["match_id"] in live


async def _zipped(sources: Sources, name: str) -> StreamingResponse:
    assert sources.store is not None
    spool = tempfile.SpooledTemporaryFile(max_size=8 << 20)  # noqa: SIM115 - streamed below
    await asyncio.to_thread(tournament_archive.write, sources.store, name, sources.replays, spool)
    spool.seek(0)

    def chunks() -> Any:
        with spool:
            while data := spool.read(CHUNK):
                yield data

    return StreamingResponse(
        chunks(),
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{name}-replays.zip"'},
    )


def tournament_router(sources: Sources, page: Callable[..., Response]) -> APIRouter:
    """The routes; ``page(script, title, ...)`` builds a page (:func:`kozel.web.app.shell`)."""
    r = APIRouter()

    @r.get("/api/tournaments", summary="The tournaments and how far each has come")
    async def events() -> list[dict[str, Any]]:
        if sources.store is None:
            return []
        names = await asyncio.to_thread(ts.names, sources.store)
        return [_summary(await _view(sources, name)) for name in names]

    @r.get("/api/tournaments/{name}", summary="An event: stages, pairings, standings, crosstable")
    async def event(name: EventName) -> dict[str, Any]:
        body: dict[str, Any] = tournament_archive.results_json(await _view(sources, name))
        _mark_live(body, {m.match_id for m in await sources.running()})
        return body

    @r.get("/api/tournaments/{name}/replays.zip", summary="Every replay of an event, zipped")
    async def archive(name: EventName) -> Response:
        await _view(sources, name)
        return await _zipped(sources, name)

    @r.get("/tournaments", include_in_schema=False)
    async def list_page() -> Response:
        return page("tournament", "Tournaments")

    @r.get("/tournaments/{name}", include_in_schema=False)
    async def event_page(name: str) -> Response:
        store = sources.store
        if (
            not _NAME.match(name)
            or store is None
            or not await asyncio.to_thread(ts.load, store, name)
        ):
            return page("notfound", "Not found", status=404, message="There is no such tournament.")
        return page("tournament", "Tournament")

    return r
