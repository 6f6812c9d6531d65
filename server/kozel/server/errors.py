"""What the referee refuses, by kind. The lobby, the spectator hubs and the ladders raise these
with a sentence saying what was wrong; each edge maps the kind to its own code (a gRPC status
in :mod:`kozel.server.status`, an HTTP status in the web)."""

from __future__ import annotations


class Refused(Exception):
    """A request the referee refuses; ``message`` says why, for the caller."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(Refused):
    """No such table, ladder, match or replay."""


class AlreadyExists(Refused):
    """A name that is taken."""


class Invalid(Refused):
    """A request that can never succeed as written."""


class Exhausted(Refused):
    """A limit is reached (tables, spectators, sessions); retry later or elsewhere."""


class Unauthenticated(Refused):
    """A credential that names nobody (a ladder token, a redirect ticket)."""


class Unavailable(Refused):
    """Not now (draining, the store unreachable); retry later."""


class Conflict(Refused):
    """The state does not allow it (a full table, a match already ended)."""


class Expired(Refused):
    """Waited too long (a table nobody joined)."""


class Cancelled(Refused):
    """The caller went away first (a stream closed before its Hello)."""


class Aborted(Refused):
    """It ended without the result asked for."""
