"""Connections to the web server, bounded: a cap below the process's descriptor limit (in all
and per client address), a deadline for a request's head, an idle limit between requests.

Without them 1,100 idle TCP connections took every descriptor of a web process (the default
limit is often 1024): accepting failed in a loop, every page went unanswered, and each
failure wrote a traceback. 400 connections that sent half a request head were never closed.
Now a connection past a cap is closed as soon as it is accepted (so accepting never runs out
of descriptors), one that has not sent a whole request head within ``header_timeout_s`` of
its start (or of its previous answer) is closed, and one idle between requests is closed
after ``idle_timeout_s`` (uvicorn's keep-alive timeout). Refusals are counted and logged once
a minute with their count (:mod:`kozel.web.repeats`).
"""

from __future__ import annotations

import asyncio
import logging
import resource
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from kozel.web.repeats import Repeats

RESERVED_FDS = 128  # descriptors kept for everything but client connections (db, gRPC, files)
log = logging.getLogger("kozel.web.conns")


@dataclass(frozen=True, slots=True)
class ConnLimits:
    """The bounds of the web's connections (docs/web.md, "Hostile input")."""

    max_connections: int = 1000  # at once, in all (and below the descriptor limit)
    per_address: int = 64  # ... from one client address (a proxy's address counts as one)
    header_timeout_s: float = 10.0  # a request's head must be in within this
    idle_timeout_s: int = 5  # a kept-alive connection idle this long is closed


def raise_fd_limit() -> int:
    """Raise this process's soft descriptor limit to its hard one where that is allowed;
    returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft


def connection_cap(wanted: int, fd_limit: int) -> int:
    """``wanted`` connections, or fewer: enough descriptors stay for the rest of the process."""
    return max(1, min(wanted, fd_limit - RESERVED_FDS))


@dataclass
class Guard:
    """The connection counts a server's protocols share."""

    limits: ConnLimits
    cap: int
    by_address: dict[str, int] = field(default_factory=dict)
    repeats: Repeats = field(default_factory=Repeats)
    # Addresses the per-address cap does not apply to (trusted proxies).
    exempt: Callable[[str], bool] = lambda _address: False

    def note(self, what: str) -> None:
        """A refusal of kind ``what``: logged once a minute with a count."""
        left_out = self.repeats.admit(what)
        if left_out is not None:
            log.warning("web connection %s (%d more since the last such line)", what, left_out)


def _refusal(guard: Guard, address: str, open_now: int) -> str:
    """Why a new connection from ``address`` is refused ("" when it is not)."""
    if open_now >= guard.cap:
        return f"refused: {guard.cap} connections open (web.max_connections)"
    if guard.by_address.get(address, 0) >= guard.limits.per_address and not (guard.exempt(address)):
        return (
            f"refused: {guard.limits.per_address} connections from one address "
            "(web.max_connections_per_address)"
        )
    return ""


def guarded_protocol(guard: Guard) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 protocol with ``guard`` applied (uvicorn ``Config(http=...)``)."""

    class Guarded(H11Protocol):
        _refused = False
        _address = ""
        _head: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            peer = transport.get_extra_info("peername")
            address = str(peer[0]) if peer else ""
            if why := _refusal(guard, address, len(self.connections)):
                self._refused = True
                guard.note(why)
                transport.abort()
                return
            self._address = address
            guard.by_address[address] = guard.by_address.get(address, 0) + 1
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._refused:
                return
            self._disarm()
            if (left := guard.by_address.pop(self._address, 1) - 1) > 0:
                guard.by_address[self._address] = left
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # a whole request head is in
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()  # the next request's head, kept alive or not

        def _arm(self) -> None:
            self._disarm()
            self._head = self.loop.call_later(guard.limits.header_timeout_s, self._too_slow)

        def _disarm(self) -> None:
            if self._head is not None:
                self._head.cancel()
                self._head = None

        def _too_slow(self) -> None:
            self._head = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                guard.note(
                    f"closed: no whole request head within {guard.limits.header_timeout_s:g} s "
                    "(web.header_timeout_s)"
                )
                self.transport.close()

    return Guarded


class _RepeatFilter(logging.Filter):
    """Passes a message once a minute, with the count of those left out."""

    def __init__(self) -> None:
        super().__init__()
        self.repeats = Repeats()

    def filter(self, record: logging.LogRecord) -> bool:
        left_out = self.repeats.admit(f"{record.name}:{record.msg}")
        if left_out:
            record.msg = f"{record.msg} ({left_out} more since the last such line)"
        return left_out is not None


def quiet_repeats(loop: asyncio.AbstractEventLoop) -> None:
    """uvicorn's warnings (a bad request, a refused one) and the event loop's errors (a failed
    accept) are logged once a minute each, with a count: a flood of them cannot flood the
    log (a referee logs every line its web child writes)."""
    for name in ("uvicorn.error", "uvicorn"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _RepeatFilter) for f in logger.filters):
            logger.addFilter(_RepeatFilter())
    repeats = Repeats()

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        key = f"{context.get('message')}:{type(exc).__name__}:{exc}"
        left_out = repeats.admit(key)
        if left_out is None:
            return
        if left_out:
            context = {**context, "message": f"{context.get('message')} ({left_out} more)"}
        loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
