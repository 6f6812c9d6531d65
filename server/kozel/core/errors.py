"""The core's exceptions, in a module of their own that stays Python when the core is compiled
(:mod:`kozel.core.native`): Python code catches them, and mypyc compiles no subclass of
``RuntimeError``."""

from __future__ import annotations


class NotPending(ValueError):
    """An answer that names no pending request of its seat (stale, repeated, forged)."""


class TransitionError(RuntimeError):
    """An event the state table does not allow (a bug, never a bot's doing)."""
