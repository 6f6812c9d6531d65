"""The core's exceptions, in a module of their own: the compiled core (:mod:`kozel.core.native`)
raises them, and mypyc compiles no subclass of a built-in exception."""

from __future__ import annotations


class NotPending(ValueError):
    """An answer that names no pending request of its seat (stale, repeated, forged)."""


class TransitionError(RuntimeError):
    """An event the state table does not allow (a bug, never a bot's doing)."""
