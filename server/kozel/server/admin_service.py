"""``kozel.v1.AdminService``: operator actions behind the admin token."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from dataclasses import asdict

import grpc
import structlog

from kozel.ladder.cluster_status import ClusterStatus, read_status
from kozel.ladder.store import Store, StoreError
from kozel.server import metrics
from kozel.server.ladder_runtime import LadderRuntime
from kozel.server.lobby import Lobby
from kozel.server.peers import Proxies
from kozel.server.text import id_problem, name_problem
from kozel.server.throttle import FailureThrottle
from kozel.v1 import admin_pb2 as apb
from kozel.v1 import admin_pb2_grpc

log = structlog.get_logger("kozel.admin")

STATUS_NAMES = {
    apb.BOT_STATUS_ACTIVE: "active",
    apb.BOT_STATUS_PAUSED: "paused",
    apb.BOT_STATUS_RETIRED: "retired",
}


class AdminService(admin_pb2_grpc.AdminServiceServicer):
    """Bot accounts and ladder control; every call checks ``authorization: Bearer <token>``."""

    def __init__(self, lobby: Lobby, admin_token: str, proxies: Proxies | None = None) -> None:
        self.lobby = lobby
        self.proxies = proxies or Proxies()  # whose x-forwarded-for names the caller
        # Compared as digests: in constant time, whatever the length of the token tried.
        self._digest = _digest(admin_token) if admin_token else b""
        # Bad tokens by peer host, each refused later than the last (guessing is slow).
        self.bad_tokens = FailureThrottle()

    async def _authorize(self, context: grpc.aio.ServicerContext, action: str) -> None:
        if not self._digest:
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                "admin calls are disabled: the referee has no operator.admin_token configured",
            )
        host = self.proxies.host(context)
        if self.bad_tokens.crowded(host):  # refused before the token is even looked at
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{self.bad_tokens.max_pending} refused admin calls from your address are "
                "still pending; wait for them, then retry",
            )
        given = str(dict(context.invocation_metadata() or ()).get("authorization", ""))
        scheme, _, token = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(_digest(token), self._digest):
            n, delay = self.bad_tokens.failed(host)
            metrics.AUTH_FAILURES.inc()
            log.warning("admin_refused", action=action, peer=context.peer(), failures=n)
            await self.bad_tokens.wait(host, delay)
            await context.abort(
                grpc.StatusCode.UNAUTHENTICATED,
                "admin calls need metadata 'authorization: Bearer <admin token>'",
            )
        log.info("admin_call", action=action, peer=context.peer())

    async def _store(self, context: grpc.aio.ServicerContext) -> Store:
        store = self.lobby.store
        if store is None:
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                "this referee serves no ladders, so it has no bot accounts",
            )
        return store

    async def _ladder(self, name: str, context: grpc.aio.ServicerContext) -> LadderRuntime:
        ladder = self.lobby.ladders.get(name)
        if ladder is None:
            await context.abort(
                grpc.StatusCode.NOT_FOUND,
                f"no ladder {name!r}; ladders: {', '.join(sorted(self.lobby.ladders)) or 'none'}",
            )
        return ladder

    async def _store_call(self, context: grpc.aio.ServicerContext, fn, *args):
        try:
            return await asyncio.to_thread(fn, *args)
        except StoreError as exc:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))

    async def RegisterBot(
        self, request: apb.RegisterBotRequest, context: grpc.aio.ServicerContext
    ) -> apb.RegisterBotResponse:
        await self._authorize(context, "register_bot")
        if why := name_problem(request.name, "name"):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, why)
        store = await self._store(context)
        token = await self._store_call(context, store.register_bot, request.name)
        return apb.RegisterBotResponse(name=request.name, token=token)

    async def SetBotStatus(
        self, request: apb.SetBotStatusRequest, context: grpc.aio.ServicerContext
    ) -> apb.SetBotStatusResponse:
        await self._authorize(context, "set_bot_status")
        status = STATUS_NAMES.get(request.status)
        if status is None:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                "status must be BOT_STATUS_ACTIVE, _PAUSED or _RETIRED",
            )
        store = await self._store(context)
        await self._store_call(context, store.set_status, request.name, status)
        bot = await asyncio.to_thread(store.bot, request.name)
        if bot is None:  # removed meanwhile
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no bot {request.name!r}")
        running = 0
        for ladder in self.lobby.ladders.values():
            ladder.exclude(bot.id, status != "active")
            running += ladder.running_for(bot.id)
        return apb.SetBotStatusResponse(
            name=request.name, status=request.status, running_matches=running
        )

    async def ResetRating(
        self, request: apb.ResetRatingRequest, context: grpc.aio.ServicerContext
    ) -> apb.ResetRatingResponse:
        await self._authorize(context, "reset_rating")
        ladder = await self._ladder(request.ladder, context)
        await self._store_call(context, ladder.store.reset_rating, request.ladder, request.bot)
        ladder.refresh_ratings()
        return apb.ResetRatingResponse()

    async def StartLadder(
        self, request: apb.StartLadderRequest, context: grpc.aio.ServicerContext
    ) -> apb.StartLadderResponse:
        await self._authorize(context, "start_ladder")
        ladder = await self._set_state(request, "running", context)
        return apb.StartLadderResponse(ladder=ladder_state(ladder))

    async def StopLadder(
        self, request: apb.StopLadderRequest, context: grpc.aio.ServicerContext
    ) -> apb.StopLadderResponse:
        await self._authorize(context, "stop_ladder")
        ladder = await self._set_state(request, "stopped", context)
        return apb.StopLadderResponse(ladder=ladder_state(ladder))

    async def _set_state(
        self,
        request: apb.StartLadderRequest | apb.StopLadderRequest,
        state: str,
        context: grpc.aio.ServicerContext,
    ) -> LadderRuntime:
        """Start or stop a ladder in the store, for every referee serving it, and here now."""
        ladder = await self._ladder(request.ladder, context)
        by = await self._operator(request.operator, request.reason, context)
        new = await self._store_call(
            context, ladder.store.set_ladder_state, request.ladder, state, by, request.reason
        )
        ladder.apply_state(new)
        log.info("ladder_state_set", ladder=request.ladder, state=state, by=by)
        return ladder

    async def _operator(self, operator: str, reason: str, context: grpc.aio.ServicerContext) -> str:
        """Who acts (as told, else the caller's address), once ``operator`` and ``reason``
        are checked as the hostile text they may be."""
        if operator and (why := name_problem(operator, "operator")):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, why)
        if reason and (why := name_problem(reason, "reason", 256)):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, why)
        return operator or f"admin at {context.peer()}"[:64]

    async def VoidMatch(
        self, request: apb.VoidMatchRequest, context: grpc.aio.ServicerContext
    ) -> apb.VoidMatchResponse:
        await self._authorize(context, "void_match")
        if not request.reason:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "say why the result is voided (reason)"
            )
        if why := id_problem(request.match_id, "match_id"):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, why)
        by = await self._operator(request.operator, request.reason, context)
        store = await self._store(context)
        try:
            bots = await asyncio.to_thread(store.void_match, request.match_id, by, request.reason)
        except StoreError as exc:
            code = grpc.StatusCode.NOT_FOUND if "no match" in str(exc) else None
            await context.abort(code or grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        log.warning("match_voided", match_id=request.match_id, by=by, reason=request.reason)
        for ladder in self.lobby.ladders.values():
            ladder.refresh_ratings()
        return apb.VoidMatchResponse(match_id=request.match_id, bots=bots)

    async def CheckStore(
        self, request: apb.CheckStoreRequest, context: grpc.aio.ServicerContext
    ) -> apb.CheckStoreResponse:
        await self._authorize(context, "check_store")
        store = await self._store(context)
        problems = await asyncio.to_thread(store.check_consistency)
        finished = (await asyncio.to_thread(store.match_counts)).get("finished", 0)
        return apb.CheckStoreResponse(problems=problems, finished_matches=finished)

    async def GetClusterStatus(
        self, request: apb.GetClusterStatusRequest, context: grpc.aio.ServicerContext
    ) -> apb.GetClusterStatusResponse:
        await self._authorize(context, "cluster_status")
        store = await self._store(context)
        status = await asyncio.to_thread(read_status, store)
        return status_to_pb(status)

    async def ListLadders(
        self, request: apb.ListLaddersRequest, context: grpc.aio.ServicerContext
    ) -> apb.ListLaddersResponse:
        await self._authorize(context, "list_ladders")
        return apb.ListLaddersResponse(
            ladders=[ladder_state(self.lobby.ladders[name]) for name in sorted(self.lobby.ladders)]
        )


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def ladder_state(ladder: LadderRuntime) -> apb.LadderState:
    return apb.LadderState(
        name=ladder.spec.name,
        running=ladder.scheduling,
        waiting=len(ladder.waiting),
        running_matches=len(ladder.running),
        players=ladder.spec.players,
        ruleset=ladder.rules.name,
        changed_by=ladder.state.changed_by,
        reason=ladder.state.reason,
    )


def status_to_pb(status: ClusterStatus) -> apb.GetClusterStatusResponse:
    """The cluster status as the admin API sends it (the same fields by the same names)."""
    return apb.GetClusterStatusResponse(
        referees=[apb.RefereeStatus(**asdict(r)) for r in status.referees],
        ladders=[apb.LadderStatus(**asdict(x)) for x in status.ladders],
    )
