"""Serving the web app: its listening socket and uvicorn as a task of a running event loop
(``kozel web``, or a referee with ``web.in_process``)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator

import uvicorn
from fastapi import FastAPI

from kozel.server.peers import trusted_addresses
from kozel.web.api import WebLimits
from kozel.web.conns import ConnLimits, Guard, connection_cap, guarded_protocol, raise_fd_limit

BACKLOG = 2048  # connections the kernel queues (also while a web child restarts)
ACCEPT_BATCH = 16  # connections accepted in one turn of the event loop


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
