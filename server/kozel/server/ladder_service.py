"""``kozel.v1.LadderService``: read-only standings, match lists and streamed replays."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc

from kozel.server.errors import Refused
from kozel.server.lobby import Lobby
from kozel.server.status import grpc_status
from kozel.v1 import ladder_pb2 as lpb
from kozel.v1 import ladder_pb2_grpc

CHUNK_BYTES = 64 * 1024
MAX_LIST = 500


class LadderService(ladder_pb2_grpc.LadderServiceServicer):
    def __init__(self, lobby: Lobby) -> None:
        self.lobby = lobby

    async def GetStandings(
        self, request: lpb.GetStandingsRequest, context: grpc.aio.ServicerContext
    ) -> lpb.GetStandingsResponse:
        ladder = self.lobby.ladders.get(request.ladder)
        if ladder is None:
            await context.abort(
                grpc.StatusCode.NOT_FOUND,
                f"no ladder {request.ladder!r}; "
                f"ladders: {', '.join(sorted(self.lobby.ladders)) or 'none'}",
            )
        rows = await asyncio.to_thread(ladder.store.standings, request.ladder)
        return lpb.GetStandingsResponse(
            ladder=request.ladder,
            standings=[
                lpb.Standing(
                    bot=r.name,
                    ordinal=r.ordinal,
                    mu=r.mu,
                    sigma=r.sigma,
                    matches=r.matches,
                    wins=r.wins,
                    avg_penalty=r.avg_penalty,
                    timeouts=r.timeouts,
                    forfeits=r.forfeits,
                )
                for r in rows
            ],
        )

    async def ListMatches(
        self, request: lpb.ListMatchesRequest, context: grpc.aio.ServicerContext
    ) -> lpb.ListMatchesResponse:
        store = self.lobby.store
        if store is None:
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION, "this referee serves no ladders"
            )
        since = request.since.ToDatetime(tzinfo=None) if request.HasField("since") else None
        limit = min(request.limit or 50, MAX_LIST)
        rows = await asyncio.to_thread(
            store.matches,
            ladder=request.ladder or None,
            bot=request.bot or None,
            since=since,
            limit=limit,
        )
        out = lpb.ListMatchesResponse()
        for r in rows:
            m = out.matches.add(
                match_id=r.id, ladder=r.ladder, status=r.status, reason=r.reason or ""
            )
            m.started_at.FromDatetime(r.started_at)
            if r.ended_at is not None:
                m.ended_at.FromDatetime(r.ended_at)
        return out

    async def DownloadReplay(
        self, request: lpb.DownloadReplayRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[lpb.DownloadReplayResponse]:
        try:
            data = await self.lobby.replay_bytes(request.replay_id)
        except Refused as exc:
            await context.abort(grpc_status(exc), exc.message)
        for start in range(0, len(data), CHUNK_BYTES):
            yield lpb.DownloadReplayResponse(chunk=data[start : start + CHUNK_BYTES])
