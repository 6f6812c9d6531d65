"""The web application: the JSON API, the pages and their assets (all shipped in this package),
security headers on every response, and a uvicorn server that runs it inside an event loop."""

from __future__ import annotations

import asyncio
import contextlib
import html
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from importlib import resources
from typing import Any

import structlog
import uvicorn
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES, GZipMiddleware
from starlette.staticfiles import StaticFiles

from kozel.server.lobby import REPLAY_ID
from kozel.server.peers import PROXY_KEY_ENV, trusted_addresses
from kozel.web.api import NAME, Api, WebLimits, build_router
from kozel.web.conns import (
    ConnLimits,
    Guard,
    connection_cap,
    guarded_protocol,
    raise_fd_limit,
)
from kozel.web.cpu import CpuBudget, CpuCap, CpuGate
from kozel.web.luck import luck_router
from kozel.web.ops import OPS_TOKEN_ENV, ops_router, token_sha256
from kozel.web.readonly import DATABASE_URL_ENV
from kozel.web.repeats import Repeats
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
PAGES = ("home", "standings", "bot", "matches", "viewer", "live", "tournament", "matchup")
BACKLOG = 2048  # connections the kernel queues (also while a web child restarts)
ACCEPT_BATCH = 16  # connections accepted in one turn of the event loop
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
    elif page == "viewer":  # the analysis and luck panels (modules hooked into the viewer)
        extra = (
            '<link rel="stylesheet" href="/static/css/analysis.css">'
            '<script src="/static/js/analysis.js"></script>'
            '<script src="/static/js/luck.js"></script>'
        )
    if page in ("viewer", "live"):  # loaded after common.js (below), before the page's script
        script = '<script src="/static/js/story.js"></script>' + script
    text = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)} · Kozel Arena</title>
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/static/css/site.css">{extra}
</head><body data-page="{page}">
<header class="top"><a class="brand" href="/">♠ Kozel Arena</a>
<nav><a href="/">Home</a><a href="/matches">Matches</a><a href="/tournaments">Tournaments</a>
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
) -> FastAPI:
    """The app over ``sources``; no Swagger UI (it would load scripts from elsewhere).
    ``cpu_share`` > 0 caps this process's CPU time (:mod:`kozel.web.cpu`);
    ``ops_token_sha256`` (the admin token's hash) opens the operators' page
    (:mod:`kozel.web.ops`)."""
    budget = CpuBudget(cpu_share) if cpu_share > 0 else None
    api = Api(sources, limits or WebLimits(), budget)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await api.analysis.close()

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
        if any(m["match_id"] == match_id for m in await sources.running()):
            return shell("live", "Live")
        if await api.details(match_id) is not None:
            return RedirectResponse(f"/matches/{match_id}", status_code=302)
        return not_found("There is no such match.")


def parse_listen(address: str) -> tuple[str, int]:
    """``host:port`` (``[::1]:8080`` for IPv6)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"a listen address is host:port, not {address!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``; ``OSError`` naming the address if taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)  # connections wait in the backlog until the server accepts them
    except OSError as exc:
        sock.close()
        raise OSError(
            f"the web server cannot listen on {host}:{port}: {exc.strerror or exc}"
        ) from None
    return sock


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers: the process that runs it (a referee) owns them."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class WebServer:
    """uvicorn serving the app as a task of the running event loop."""

    def __init__(
        self, app: FastAPI, listen: str, limits: WebLimits | None = None, proxies: str = ""
    ) -> None:
        """``proxies``: the addresses (comma-separated, CIDR allowed) whose
        ``X-Forwarded-For`` names the client (per-address limits then count the client's
        address); "" trusts no such header."""
        host, port = parse_listen(listen)
        limits = limits or WebLimits()
        conns = ConnLimits(
            limits.max_connections,
            limits.max_connections_per_address,
            limits.header_timeout_s,
            limits.idle_timeout_s,
        )
        self.guard = Guard(conns, connection_cap(conns.max_connections, raise_fd_limit()))
        if proxies:
            self.guard.exempt = trusted_addresses(proxies)
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            http=guarded_protocol(self.guard),
            # asyncio accepts up to this many connections in one go, before any of them is
            # refused (and closed): a small batch keeps a flood below the descriptor limit.
            backlog=ACCEPT_BATCH,
            timeout_keep_alive=conns.idle_timeout_s,
            log_level="warning",
            access_log=False,
            lifespan="off",
            proxy_headers=bool(proxies),
            forwarded_allow_ips=proxies or None,
            timeout_graceful_shutdown=2,
        )
        self.server = _Server(config)
        self.task: asyncio.Task[None] | None = None

    async def start(self, sock: socket.socket | None = None) -> int:
        """Bind (an ``OSError`` if the address is taken; or serve ``sock``, already bound) and
        start serving; returns the bound port (the listen port may be 0)."""
        if sock is None:
            sock = bind(self.server.config.host, self.server.config.port)
        port = sock.getsockname()[1]
        self.task = asyncio.get_running_loop().create_task(self.server.serve(sockets=[sock]))
        while not self.server.started:
            if self.task.done():
                self.task.result()
                raise OSError("the web server stopped at start")
            await asyncio.sleep(0.01)
        sock.listen(BACKLOG)  # asyncio listened with ACCEPT_BATCH: the kernel queue stays long
        return port

    async def stop(self) -> None:
        if self.task is None:
            return
        self.server.should_exit = True
        try:
            await asyncio.wait_for(self.task, 5)
        except (TimeoutError, asyncio.CancelledError):
            self.task.cancel()


def idle_priority() -> None:
    """Run this process under SCHED_IDLE where the system has it (Linux): it gets only CPU time
    that no normal process wants."""
    if hasattr(os, "SCHED_IDLE"):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


# Of the referee's own KOZEL_* variables (which may hold its admin token and database URL),
# only these reach the web child.
CHILD_KEEPS = frozenset({"KOZEL_ENGINE_PURE"})


def inherited_env() -> dict[str, str]:
    """The referee's environment without its ``KOZEL_*`` settings (secrets among them)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("KOZEL_") or k in CHILD_KEEPS}


class WebChild:
    """``kozel web`` as a child process of a referee, at a lower CPU priority (``nice``), so
    pages and replay conversions never take CPU time from the match clocks: the referee's
    event loop only answers the child's gRPC calls (running matches, replays, spectating).
    A child that exits on its own is started again (after ``RESTART_S``, doubling up to
    ``RESTART_MAX_S``) on the same listening socket, which the referee keeps: meanwhile
    connections wait in its backlog."""

    RESTART_S = 1.0
    RESTART_MAX_S = 30.0
    STEADY_S = 60.0  # a child that ran this long resets the back-off

    def __init__(
        self, cmd: list[str], nice: int, idle: bool = False, env: dict[str, str] | None = None
    ) -> None:
        self.cmd = cmd
        self.env = env or {}  # for the child only (never on its command line)
        self.nice = nice
        self.idle = idle
        self.proc: subprocess.Popen[str] | None = None
        self.restarts = 0
        self._sock: socket.socket | None = None
        self._stopping = threading.Event()
        self._log = structlog.get_logger("kozel.web")

    def _preexec(self) -> None:
        import ctypes

        os.nice(self.nice)
        if self.idle:
            idle_priority()
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # die with the referee

    async def start(self, host: str, port: int) -> int:
        """Bind here (an ``OSError`` at once if the address is taken) and hand the listening
        socket to the child: the referee does not wait for the child to import and start;
        early connections wait in the backlog. Returns the bound port."""
        self._sock = bind(host, port)
        try:
            self._spawn()
        except OSError:
            self._sock.close()
            raise
        threading.Thread(target=self._supervise, daemon=True).start()
        return self._sock.getsockname()[1]

    def _spawn(self) -> subprocess.Popen[str]:
        assert self._sock is not None
        fd = self._sock.fileno()
        # Started, not awaited: its output is read by the supervising thread.
        self.proc = proc = subprocess.Popen(
            [*self.cmd, "--listen-fd", str(fd)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            preexec_fn=self._preexec,
            pass_fds=(fd,),
            env={**inherited_env(), **self.env, "PYTHONUNBUFFERED": "1"},
        )
        return proc

    def _supervise(self) -> None:
        """Pass the child's output to the log (it never fills a pipe); start it again when it
        exits while the referee runs."""
        delay = self.RESTART_S
        repeats = Repeats()  # a line repeated in a flood is logged once a minute, with a count
        while True:
            proc = self.proc
            assert proc is not None and proc.stdout is not None
            began = time.monotonic()
            for line in proc.stdout:
                text = line.rstrip()[:500]
                if line.startswith("web pages on ") or (left_out := repeats.admit(text)) is None:
                    continue
                if left_out:
                    self._log.warning("web_child_output", line=text, repeated=left_out)
                else:
                    self._log.warning("web_child_output", line=text)
            code = proc.wait()
            if self._stopping.is_set():
                return
            if time.monotonic() - began >= self.STEADY_S:
                delay = self.RESTART_S
            self._log.error("web_child_exited", returncode=code, restart_in_s=delay)
            if self._stopping.wait(delay):
                return
            delay = min(delay * 2, self.RESTART_MAX_S)
            try:
                started = self._spawn()
            except OSError as exc:
                self._log.error("web_child_not_started", error=str(exc))
                return
            self.restarts += 1
            if self._stopping.is_set():  # stop() came while it started: it saw the old one
                started.terminate()

    async def stop(self) -> None:
        self._stopping.set()
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                await asyncio.to_thread(proc.wait, 10)
            except subprocess.TimeoutExpired:
                proc.kill()
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _child_env(config: Any, ops_sha256: str) -> dict[str, str]:
    """What the web child is told through its environment (never on its command line, which
    any local user can read): the store's URL (a read-only role when ``web.database_url``
    names one) and the admin token's hash; never the admin token."""
    env = {OPS_TOKEN_ENV: ops_sha256} if ops_sha256 else {}
    if config.web_proxy_key:  # its visitors' addresses count for the referee's limits
        env[PROXY_KEY_ENV] = config.web_proxy_key
    if config.ladders or config.tournaments:
        from kozel.ladder.store import default_url

        env[DATABASE_URL_ENV] = (
            config.web_database_url or config.database_url or default_url(config.data_dir)
        )
    return env


def _child_command(config: Any, referee: str) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "kozel.cli.main",
        "web",
        "--listen",
        config.web_listen,
        "--replays",
        str(config.replay_dir),
        "--referee",
        referee,
    ]
    for spec in config.ladders:
        if spec.duplicate:
            cmd += ["--duplicate-ladder", spec.name]
    for key, value in [*config.web_limits, *config.replay_limits.pairs()]:
        cmd += ["--limit", f"{key}={value}"]
    if config.web_cpu_share:
        cmd += ["--cpu-share", str(config.web_cpu_share)]
    if config.trusted_proxies:
        cmd += ["--trusted-proxies", config.trusted_proxies]
    return cmd


async def start_in_referee(
    lobby: Any, config: Any, referee: str
) -> tuple[WebServer | WebChild | None, int]:
    """Serve the web for a referee (``kozel serve``): by default as a niced child process
    (``kozel web`` following this referee over gRPC at ``referee``, a plaintext address); in
    the referee's own event loop with ``web.in_process``. A port in use is an error unless the
    address was left at its default (then a warning)."""
    from kozel.web.sources import LobbySources

    log = structlog.get_logger("kozel.web")
    server: WebServer | WebChild
    ops = token_sha256(config.admin_token) if config.admin_token else ""
    if config.web_in_process:
        store = None
        if lobby.store is not None:  # the same database, opened for reading only
            from kozel.web.readonly import ReadOnlyStore

            store = ReadOnlyStore(
                config.web_database_url
                or lobby.store.engine.url.render_as_string(hide_password=False)
            )
        server = WebServer(
            create_app(
                LobbySources(lobby, store),
                WebLimits(**dict(config.web_limits)),
                ops_token_sha256=ops,
            ),
            config.web_listen,
            WebLimits(**dict(config.web_limits)),
            config.trusted_proxies,
        )
    else:
        server = WebChild(
            _child_command(config, referee),
            config.web_nice,
            config.web_idle,
            env=_child_env(config, ops),
        )
    try:
        if isinstance(server, WebChild):
            host, port = parse_listen(config.web_listen)
            return server, await server.start(host, port)
        return server, await server.start()
    except OSError as exc:
        if not config.web_optional:
            raise
        log.warning("web_not_served", error=str(exc))
        print(f"web pages not served: {exc} (set web.listen or --web-listen)", flush=True)
        return None, 0
