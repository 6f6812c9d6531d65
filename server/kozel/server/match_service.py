"""``kozel.v1.MatchService``: match details and the live spectator stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc

from kozel.engine.rules import Ruleset
from kozel.server.errors import Refused
from kozel.server.lobby import REPLAY_ID, Lobby
from kozel.server.match_details import from_runner, match_details
from kozel.server.peers import Proxies
from kozel.server.status import grpc_status
from kozel.v1 import match_pb2 as mpb
from kozel.v1 import match_pb2_grpc

LIVE_LIST_MAX = 1000  # running matches listed by one ListLiveMatches


class MatchService(match_pb2_grpc.MatchServiceServicer):
    """Read-only: any client may ask, no credentials."""

    def __init__(self, lobby: Lobby, proxies: Proxies | None = None) -> None:
        self.lobby = lobby
        self.proxies = proxies or Proxies()  # whose x-forwarded-for names the spectator

    def _rules_of(self, ladder: str) -> Ruleset | None:
        runtime = self.lobby.ladders.get(ladder)
        return runtime.rules if runtime is not None else None

    async def GetMatch(
        self, request: mpb.GetMatchRequest, context: grpc.aio.ServicerContext
    ) -> mpb.GetMatchResponse:
        if not REPLAY_ID.fullmatch(request.match_id):
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "a match id is 8 to 64 lowercase hex digits"
            )
        runner = self.lobby.runners.get(request.match_id)
        live = from_runner(runner) if runner is not None else None
        details = await asyncio.to_thread(
            match_details,
            request.match_id,
            store=self.lobby.store,
            replays=self.lobby.replays,
            live=live,
            rules_of=self._rules_of,
        )
        if details is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no match {request.match_id}")
        return details

    async def WatchMatch(
        self, request: mpb.WatchMatchRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[mpb.WatchMatchResponse | bytes]:  # bytes: encoded once for all
        runner = self.lobby.runners.get(request.match_id)
        hub = runner.spectators if runner is not None else None
        if hub is None:
            await context.abort(
                grpc.StatusCode.NOT_FOUND,
                f"no running match {request.match_id!r} (GetMatch has the "
                "details of ended ones, DownloadReplay their replays)",
            )
        if request.full and self.lobby.replays.sealed(request.match_id):
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                "this match is the first half of a duplicate pair: its hands "
                "stay secret until its twin has been played",
            )
        try:
            sub = hub.subscribe(request.full, self.proxies.host(context))
        except Refused as exc:
            await context.abort(grpc_status(exc), exc.message)
        try:
            # Each event is encoded once for all its spectators; the call limits'
            # serializer (kozel.server.limits) sends bytes as they are.
            while (shared := await sub.get_shared()) is not None:
                yield shared.wire()
        finally:
            hub.unsubscribe(sub)
        if sub.dropped:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, sub.dropped)

    async def ListLiveMatches(
        self, request: mpb.ListLiveMatchesRequest, context: grpc.aio.ServicerContext
    ) -> mpb.ListLiveMatchesResponse:
        limit = min(request.limit or 100, LIVE_LIST_MAX)
        runners = sorted(
            (r for r in self.lobby.runners.values() if r.outcome is None),
            key=lambda r: r.started_at,
            reverse=True,
        )[:limit]
        out = mpb.ListLiveMatchesResponse()
        for r in runners:
            m = out.matches.add(
                match_id=r.match_id,
                ladder=r.ladder,
                table_id=r.table_id,
                players=r.players,
                seats=[p.name for p in r.seating],
                deal_index=len(r.match.records),
            )
            m.started_at.FromDatetime(r.started_at)
        return out
