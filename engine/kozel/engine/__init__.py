"""Kozel rules engine: pure, deterministic, no I/O.

The main entry points are :class:`Ruleset` (knobs and presets), :class:`Deal` (one deal as a
state machine), :class:`Match` (deals until the match ends; :meth:`Match.outcome` is where it
stands) and :func:`observe` (what one seat may know).
"""

from kozel.engine.actions import PASS, Action, ActionKind, Combo, Decision
from kozel.engine.deal import Deal, Play, Trick
from kozel.engine.errors import ErrorCode, IllegalAction, SetupError
from kozel.engine.match import EndReason, Match, MatchOutcome, Scoreboard
from kozel.engine.observation import Observation, full_view, observe
from kozel.engine.rules import PRESETS, RulesError, Ruleset

__all__ = [
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
