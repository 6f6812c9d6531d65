"""What a tournament game's seats are made of, and what its result becomes in the store.

House bots and command bots are handed in by the composition root (``kozel serve``), as the
referee's house bots are: :class:`TournamentParts`. A seat whose bot never came is an
:class:`AbsentLink`: the match starts with it away, and the core forfeits it after the clock's
grace time, by the referee's own rule.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kozel.core.convert import outcome_from_pb
from kozel.core.messages import Outgoing
from kozel.engine.rules import Ruleset
from kozel.ladder.tournament_store import result_json
from kozel.server.house import HouseBots, HousePlayer
from kozel.server.seats import SeatLink
from kozel.tournament.games import points_from_ranks
from kozel.v1 import game_pb2 as pb


class CommandRun(Protocol):
    """A command bot's process for one game."""

    def alive(self) -> bool:
        """Whether it still runs."""
        ...

    def end(self) -> None:
        """Stop it (the game is over): a polite signal, then a kill."""
        ...


# (kind, think budget in seconds or None, seed) -> a fresh house player for one game.
HouseMaker = Callable[[str, float | None, int], HousePlayer]
# (command, referee address, table id, bot name, log file) -> the started process.
Launcher = Callable[[str, str, str, str, Path], CommandRun]


@dataclass(frozen=True)
class TournamentParts:
    """What the referee is handed to play tournaments' house and command bots."""

    house: HouseMaker | None = None
    launch: Launcher | None = None


def house_player(
    parts: TournamentParts, registry: HouseBots, kind: str, budget_ms: int | None, seed: int
) -> HousePlayer:
    """A house player for one game (seeded, so a game played again is played the same)."""
    if parts.house is not None:
        return parts.house(kind, budget_ms / 1000 if budget_ms else None, seed)
    return registry[kind]()


def bot_seed(game_seed: bytes, seat: int) -> int:
    """A house bot's own random seed in one game, from the game's seed and its seat."""
    return int.from_bytes(hashlib.sha256(game_seed + seat.to_bytes(2, "big")).digest()[:8], "big")


class AbsentLink(SeatLink):
    """A seat whose bot is not there: nothing reaches it, its grace time runs from the start."""

    def send(self, msg: Outgoing) -> None:
        return None


def result_of(rules: Ruleset, players: int, result: pb.MatchResult) -> dict[str, Any]:
    """A finished match's result as a tournament game's (points per seat by its side's rank,
    forfeits, penalty totals)."""
    side_of = rules.side_of(players)
    outcome = outcome_from_pb(result, side_of, rules.is_money)
    forfeited = {f.seat for f in result.forfeits}
    penalties = (
        [result.penalty_totals[side_of[s]] for s in range(players)]
        if result.penalty_totals
        else [-result.chips[s] for s in range(players)]
    )
    return result_json(
        points_from_ranks(side_of, outcome.ranks),
        [s in forfeited for s in range(players)],
        penalties,
        pb.MatchEndReason.Name(result.reason).removeprefix("MATCH_END_REASON_").lower(),
    )
