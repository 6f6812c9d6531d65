"""The web application: the JSON API, the pages and their assets (all shipped in this package),
security headers on every response. It is served by :mod:`kozel.web.serving` (uvicorn in an
event loop), in a referee's child process supervised by :mod:`kozel.web.child`."""

from __future__ import annotations

import asyncio
import contextlib
import html
import re
from collections.abc import AsyncIterator
from importlib import resources
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES, GZipMiddleware
from starlette.staticfiles import StaticFiles

from kozel.server.lobby import REPLAY_ID
from kozel.web.api import NAME, Api, WebLimits, build_router
from kozel.web.cpu import CpuBudget, CpuCap, CpuGate
from kozel.web.luck import luck_router
from kozel.web.ops import ops_router
from kozel.web.seat_routes import seat_router
from kozel.web.seats import Seats, seat_limits
from kozel.web.sources import Sources
from kozel.web.tournaments import tournament_router

STATIC = resources.files("kozel.web") / "static"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
PAGES = ("home", "standings", "bot", "matches", "viewer", "live", "tournament", "seat", "matchup")
# The shared modules a page draws with: the story of a match, the table, the think-time strip.
SHARED_SCRIPTS = {
    "viewer": ("story", "table", "think"),
    "live": ("story", "table"),
    "seat": ("story",),
}
_NAME = re.compile(NAME.strip("^$"))  # fullmatch: "$" would allow a final newline


def shell(page: str, title: str, *, status: int = 200, message: str = "") -> HTMLResponse:
    """A page: a fixed HTML shell whose script fills it from the API (names are set as text
    by the script; the only text put here is escaped)."""
    body = (
        f'<h1>{html.escape(title)}</h1><p class="notice">{html.escape(message)}</p>'
        if message
        else '<p class="loading">Loading…</p>'
    )
    script = f'<script src="/static/js/{page}.js"></script>' if page in PAGES else ""
    extra = ""
    if page == "bot":
        extra = (
            '<link rel="stylesheet" href="/static/vendor/uPlot.min.css">'
            '<script src="/static/vendor/uPlot.iife.min.js"></script>'
        )
    elif page == "seat":  # a person's seat (kozel.web.seat_routes)
        extra = '<link rel="stylesheet" href="/static/css/seat.css">'
    elif page == "viewer":  # the analysis and luck panels (modules hooked into the viewer)
        extra = (
            '<link rel="stylesheet" href="/static/css/analysis.css">'
            '<script src="/static/js/analysis.js"></script>'
            '<script src="/static/js/luck.js"></script>'
        )
    shared = SHARED_SCRIPTS.get(page, ())  # loaded after common.js, before the page's script
    script = "".join(f'<script src="/static/js/{m}.js"></script>' for m in shared) + script
    text = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)} · Kozel Arena</title>
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/static/css/site.css">{extra}
</head><body data-page="{page}">
<header class="top"><a class="brand" href="/">♠ Kozel Arena</a>
<nav><a href="/">Home</a><a href="/matches">Matches</a><a href="/tournaments">Tournaments</a>
<a href="/play">Play</a>
<a href="/api/openapi.json">API</a></nav>
</header>
<main id="main">{body}</main>
<script src="/static/js/common.js"></script><script src="/static/js/cards.js"></script>
{script}
</body></html>"""
    return HTMLResponse(text, status_code=status)


def not_found(message: str) -> HTMLResponse:
    return shell("notfound", "Not found", status=404, message=message)


def create_app(
    sources: Sources,
    limits: WebLimits | None = None,
    *,
    cpu_share: float = 0.0,
    ops_token_sha256: str = "",
    referee: str = "",
    proxy_key: str = "",
) -> FastAPI:
    """The app over ``sources``; no Swagger UI (it would load scripts from elsewhere).
    ``cpu_share`` > 0 caps this process's CPU time (:mod:`kozel.web.cpu`);
    ``ops_token_sha256`` (the admin token's hash) opens the operators' page
    (:mod:`kozel.web.ops`). People are seated (:mod:`kozel.web.seats`) at the referee
    ``referee`` (a gRPC address; a standalone source's own by default), telling it their
    addresses with ``proxy_key``."""
    budget = CpuBudget(cpu_share) if cpu_share > 0 else None
    api = Api(sources, limits or WebLimits(), budget)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await api.analysis.close()
        await seats.close()

    app = FastAPI(
        lifespan=lifespan,
        title="Kozel Arena",
        version="1",
        openapi_url="/api/openapi.json",
        docs_url=None,
        redoc_url=None,
        description="Read-only: ladders, standings, bots, matches, replays and live "
        "matches of a Kozel Arena referee. No token needed.",
        # Starlette's own redirect names the Host header the client sent (forgeable):
        # trailing_slash below redirects to a path only.
        redirect_slashes=False,
    )
    app.state.api = api
    app.include_router(build_router(api))
    app.include_router(luck_router(sources.store, api.ladder_names))
    app.include_router(ops_router(sources, ops_token_sha256))
    app.include_router(tournament_router(sources, shell))
    seats = Seats(
        referee or getattr(sources, "referee", ""),
        seat_limits(api.limits),
        proxy_key or getattr(sources, "proxy_key", ""),
        sources.store,
    )
    app.include_router(seat_router(seats, shell))
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    _middleware(app, api, budget)
    _error_pages(app)
    _pages(app, api, sources)
    return app


def _middleware(app: FastAPI, api: Api, budget: CpuBudget | None) -> None:
    """Compression, the CPU cap, trailing slashes and the security headers, in this order."""
    # Added before the CPU cap, so it runs inside it: compressing takes its turn too. A replay
    # file is gzip already; live streams are never buffered.
    app.add_middleware(
        GZipMiddleware,
        minimum_size=api.limits.gzip_min_bytes,
        compresslevel=6,
        exclude_content_types=(*DEFAULT_EXCLUDED_CONTENT_TYPES, "application/octet-stream"),
    )
    if budget is not None:
        api.gate = CpuGate(budget, api.limits.max_waiting_per_address)
        app.add_middleware(CpuCap, gate=api.gate)

    @app.middleware("http")
    async def trailing_slash(request: Request, call_next: Any) -> Response:
        raw = request.scope.get("raw_path") or request.url.path.encode()
        # One leading / and no \ (browsers read /\host as //host): never another host.
        if len(raw) > 1 and raw.endswith(b"/") and b"\\" not in raw:
            target = "/" + raw.decode("latin-1").strip("/")
            if request.url.query:
                target += "?" + request.url.query
            return RedirectResponse(target, status_code=308)
        return await call_next(request)

    @app.middleware("http")
    async def security_headers(request: Request, call_next: Any) -> Response:
        response = await call_next(request)
        for key, value in SECURITY_HEADERS.items():
            response.headers.setdefault(key, value)
        # Everything may change from one request to the next: caches ask again (an ETag,
        # where there is one, makes that cheap).
        response.headers.setdefault("Cache-Control", "no-cache")
        return response


def _error_pages(app: FastAPI) -> None:
    """Errors as pages for people, as JSON under /api/."""

    def wants_html(request: Request) -> bool:
        return not request.url.path.startswith("/api/")

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        if wants_html(request) and exc.status_code == 404:
            return not_found("There is no such page.")
        return JSONResponse(
            {"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers
        )

    @app.exception_handler(404)
    async def missing(request: Request, exc: Exception) -> Response:
        if wants_html(request):
            return not_found("There is no such page.")
        return JSONResponse({"detail": "not found"}, status_code=404)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        if wants_html(request):
            return not_found("There is no such page.")
        errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", "")} for e in exc.errors()]
        return JSONResponse({"detail": errors}, status_code=422)


def _pages(app: FastAPI, api: Api, sources: Sources) -> None:
    """The HTML pages (the shell, filled in by the page's script) and the health probe."""

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> Response:
        """For probes: the process serves (no store round trip, so a slow database does not
        restart web pods)."""
        return JSONResponse({"status": "ok"})

    @app.get("/", include_in_schema=False)
    async def home() -> Response:
        return shell("home", "Home")

    @app.get("/matches", include_in_schema=False)
    async def match_list() -> Response:
        return shell("matches", "Matches")

    @app.get("/ladders/{ladder}", include_in_schema=False)
    async def ladder_page(ladder: str) -> Response:
        if not _NAME.fullmatch(ladder) or ladder not in await api.ladder_names():
            return not_found("There is no such ladder.")
        return shell("standings", "Standings")

    @app.get("/ladders/{ladder}/matchup", include_in_schema=False)
    async def matchup_page(ladder: str) -> Response:
        if not _NAME.fullmatch(ladder) or ladder not in await api.ladder_names():
            return not_found("There is no such ladder.")
        return shell("matchup", "Matchup")

    @app.get("/bots/{name:path}", include_in_schema=False)  # a name may hold a /
    async def bot_page(name: str) -> Response:
        if (
            not _NAME.fullmatch(name)
            or sources.store is None
            or await asyncio.to_thread(sources.store.bot, name) is None
        ):
            return not_found("There is no such bot.")
        return shell("bot", "Bot")

    @app.get("/matches/{match_id}", include_in_schema=False)
    async def viewer_page(match_id: str) -> Response:
        if not REPLAY_ID.fullmatch(match_id) or await api.details(match_id) is None:
            return not_found("There is no such match.")
        return shell("viewer", "Match")

    @app.get("/live/{match_id}", include_in_schema=False)
    async def live_page(match_id: str) -> Response:
        if not REPLAY_ID.fullmatch(match_id):
            return not_found("There is no such match.")
        if any(m.match_id == match_id for m in await sources.running()):
            return shell("live", "Live")
        if await api.details(match_id) is not None:
            return RedirectResponse(f"/matches/{match_id}", status_code=302)
        return not_found("There is no such match.")
