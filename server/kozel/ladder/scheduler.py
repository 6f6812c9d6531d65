"""Pairing: who plays whom next on a ladder. Pure: it sees waiting entrants and recent
history, and picks a group and its seat order."""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class Entrant:
    """One free match slot of a connected bot."""

    key: object  # the session
    bot_id: int
    ordinal: float
    since: float  # when it started waiting


@dataclass
class History:
    """The recent opponents of every bot, for the repeat cap."""

    window: int
    recent: dict[int, deque[frozenset[int]]] = field(default_factory=dict)

    def record(self, group: Sequence[int]) -> None:
        members = frozenset(group)
        for bot in group:
            self.recent.setdefault(bot, deque(maxlen=max(self.window, 1))).append(members)

    def met_recently(self, group: Sequence[int]) -> bool:
        members = frozenset(group)
        return self.window > 0 and any(members == g for g in self.recent.get(group[0], ()))


def pick(waiting: Sequence[Entrant], players: int, history: History, scale: float,
         rng: random.Random, allow_repeat: bool = True) -> list[Entrant] | None:
    """A group for the next match (in seat order), or None while too few distinct bots wait.

    The bot waiting longest is always in; the others are sampled with weight
    ``exp(-|ordinal difference| / scale)``; a group that met within the repeat window is taken
    only when no other group can be formed, and not at all unless ``allow_repeat``. Seats are
    shuffled, so over many matches every bot
    sits in every seat (and deals first) about equally often.
    """
    by_bot: dict[int, Entrant] = {}
    for e in sorted(waiting, key=lambda e: e.since):
        by_bot.setdefault(e.bot_id, e)  # one slot per bot per match
    if len(by_bot) < players:
        return None
    anchor, *others = by_bot.values()
    best: list[Entrant] | None = None
    for _ in range(8):  # a few tries to avoid a recent repeat
        pool = list(others)
        group = [anchor]
        while len(group) < players:
            weights = [math.exp(-abs(e.ordinal - anchor.ordinal) / scale) for e in pool]
            chosen = rng.choices(range(len(pool)), weights=weights)[0]
            group.append(pool.pop(chosen))
        if best is None:
            best = group
        if not history.met_recently([e.bot_id for e in group]):
            best = group
            break
    else:
        if not allow_repeat:
            return None
    assert best is not None
    rng.shuffle(best)
    return best
