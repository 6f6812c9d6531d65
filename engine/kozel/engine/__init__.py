"""Kozel rules engine: pure, deterministic, no I/O.

The main entry points are :class:`Ruleset` (knobs and presets), :class:`Deal` (one deal as a
state machine), :class:`Match` (deals until the match ends; :meth:`Match.outcome` is where it
stands) and :func:`observe` (what one seat may know).

The same modules run compiled by mypyc when `make setup` built them from the sources as they
are now (see :mod:`kozel.engine.native`); :data:`NATIVE` says which runs.
"""

from kozel.engine import native as _native

_build = _native.current_build()
if _build is not None:
    __path__.insert(0, str(_native.FOLDER))

from kozel.engine.actions import PASS, Action, ActionKind, Combo, Decision
from kozel.engine.deal import Deal, Play, Trick
from kozel.engine.errors import ErrorCode, IllegalAction, SetupError
from kozel.engine.match import EndReason, Match, MatchOutcome, Scoreboard
from kozel.engine.observation import Observation, full_view, observe
from kozel.engine.rules import PRESETS, RulesError, Ruleset

NATIVE: bool = _native.loaded()
"""True when the compiled modules run, False when the engine runs as pure Python."""
_native.LOADED = _build if NATIVE else None

__all__ = [
    "NATIVE",
    "PASS",
    "PRESETS",
    "Action",
    "ActionKind",
    "Combo",
    "Deal",
    "Decision",
    "EndReason",
    "ErrorCode",
    "IllegalAction",
    "Match",
    "MatchOutcome",
    "Observation",
    "Play",
    "RulesError",
    "Ruleset",
    "Scoreboard",
    "SetupError",
    "Trick",
    "full_view",
    "observe",
]
