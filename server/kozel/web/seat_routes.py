"""The HTTP side of a person's seat (:mod:`kozel.web.seats`): the pages ``/play`` (open a
table) and ``/play/ID`` (the seat), and the API under ``/api/seats``.

Writes are refused from other sites: a browser's ``Sec-Fetch-Site`` must be same-origin, an
``Origin`` must be this host, and the body must be JSON (a form cannot send it; a script of
another site cannot without a preflight this server never grants). A seat is read and played
with its secret token in the ``X-Seat-Token`` header, never a cookie. Every request of an
address counts against ``seat_requests_per_s``.
"""

import re
from collections.abc import Callable
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Header, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, Field

from kozel.web.seats import CLOCKS, OPPONENTS, RULESETS, Rate, SeatRequest, Seats

SEAT_ID = re.compile(r"[0-9a-f]{16}")
WAIT_MAX_S = 20.0  # a state request waits this long at most for a change
TOKEN_HEADER = "X-Seat-Token"


class OpenSeat(BaseModel):
    """A table to open: the person's name, the opponents at the other seats (house bots by
    name, "" for your own bot, which joins with the table id, "bot:NAME" for a connected bot
    that plays people), the clock and the rules."""

    name: str = Field("", max_length=64)  # a guest's name (ignored with a token)
    token: str = Field("", max_length=128)  # a registered bot's token: play under its name
    opponents: list[Annotated[str, Field(max_length=68)]] = Field(min_length=1, max_length=3)
    clock: str = "standard"
    ruleset: str = "classic"
    deals: int = Field(0, ge=0, le=20)


class Answer(BaseModel):
    """An answer to the pending decision: its request id and an index into its legal
    actions."""

    request_id: str = Field(pattern=r"^[0-9]{1,20}$")
    index: int = Field(ge=0, le=10_000)


def cross_site(request: Request) -> str | None:
    """Why a write looks forged by another site (None: it does not)."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return f"a {site} request may not write here"
    origin = request.headers.get("origin")
    if origin is not None and urlsplit(origin).netloc != request.headers.get("host", ""):
        return "a request from another origin may not write here"
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return "the body must be application/json"
    return None


class _Guard:
    """The checks before a seat request: the rate of its address, and for a write its
    origin (dependencies, so they run before the body is read)."""

    def __init__(self, rate: Rate) -> None:
        self.rate = rate

    def reader(self, request: Request) -> str:
        """The client's address, once it passed the rate."""
        address = request.client.host if request.client else ""
        if not self.rate.admit(address):
            raise HTTPException(429, "too many requests: slow down", {"Retry-After": "1"})
        return address

    def writer(self, request: Request) -> str:
        """The client's address, once it passed the rate and the origin."""
        address = self.reader(request)
        if why := cross_site(request):
            raise HTTPException(403, why)
        return address


def seat_router(seats: Seats, shell: Callable[..., HTMLResponse]) -> APIRouter:
    """The pages and the API of person seats."""
    router = APIRouter()
    guard = _Guard(Rate(seats.limits.seat_requests_per_s))
    _pages(router, shell)
    _open_routes(router, seats, guard)
    _play_routes(router, seats, guard)
    return router


def _pages(router: APIRouter, shell: Callable[..., HTMLResponse]) -> None:
    @router.get("/play", include_in_schema=False)
    async def play_page() -> Response:
        return shell("seat", "Play")

    @router.get("/play/{seat_id}", include_in_schema=False)
    async def seat_page(seat_id: str) -> Response:
        if not SEAT_ID.fullmatch(seat_id):
            return shell("notfound", "Not found", status=404, message="There is no such seat.")
        return shell("seat", "Play")


def _open_routes(router: APIRouter, seats: Seats, guard: _Guard) -> None:
    @router.get("/api/seats/options")
    async def options(_: Annotated[str, Depends(guard.reader)]) -> dict[str, Any]:
        """What a table may be opened with: ``bots`` are the connected ladder bots that play
        people (``free``: not busy now), seated as ``"bot:NAME"``."""
        return {
            "opponents": list(OPPONENTS),
            "bots": await seats.ladder_bots(),
            "clocks": {k: {"move_ms": m, "bank_ms": b} for k, (m, b) in CLOCKS.items()},
            "rulesets": list(RULESETS),
            "enabled": bool(seats.referee),
        }

    @router.post("/api/seats", status_code=201)
    async def open_seat(
        body: OpenSeat, address: Annotated[str, Depends(guard.writer)]
    ) -> JSONResponse:
        """Open a table and seat the person (seat 0); answers the seat's id and token."""
        name = await seats.account_name(body.token) if body.token else body.name
        players = len(body.opponents) + 1
        req = SeatRequest(
            name, players, tuple(body.opponents), body.clock, body.ruleset, body.deals
        )
        seat = await seats.open(req, address)
        return JSONResponse(
            {"seat_id": seat.id, "token": seat.token, "table_id": seat.table_id, "name": name},
            status_code=201,
        )


def _play_routes(router: APIRouter, seats: Seats, guard: _Guard) -> None:
    Token = Annotated[str, Header(alias=TOKEN_HEADER, max_length=64)]

    @router.get("/api/seats/{seat_id}")
    async def seat_state(
        seat_id: str,
        _: Annotated[str, Depends(guard.reader)],
        token: Token = "",
        after: Annotated[int, Query(ge=-1)] = -1,
    ) -> dict[str, Any]:
        """The seat as the referee showed it; with ``after`` it waits (up to 20 s) for a
        version newer than that."""
        seat = seats.get(seat_id, token)
        await seat.wait(after, WAIT_MAX_S)
        return seat.view()

    @router.post("/api/seats/{seat_id}/action")
    async def act(
        seat_id: str,
        body: Answer,
        _: Annotated[str, Depends(guard.writer)],
        token: Token = "",
    ) -> dict[str, Any]:
        """Answer the pending decision."""
        seat = seats.get(seat_id, token)
        seat.answer_with(int(body.request_id), body.index)
        return {"version": seat.version}

    @router.post("/api/seats/{seat_id}/leave")
    async def leave(
        seat_id: str,
        _: Annotated[str, Depends(guard.writer)],
        token: Token = "",
    ) -> dict[str, Any]:
        """Leave the table: the seat's stream closes, and the referee forfeits the seat once
        its grace time (15 s) has passed without a resume."""
        seat = seats.get(seat_id, token)
        seat.leave()
        return {"version": seat.version}
