"""Pairing: who plays whom next on a ladder. Pure: it sees waiting entrants and recent
history, and picks a group and its seat order."""

from __future__ import annotations

import itertools
import math
import random
from collections import deque
from collections.abc import Callable, Sequence
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


@dataclass
class MeetingCap:
    """The hard cap: a group of bots meets at most ``limit`` times in any ``window_s``."""

    limit: int
    window_s: float
    meetings: dict[frozenset[int], deque[float]] = field(default_factory=dict)

    def record(self, group: Sequence[int], now: float) -> None:
        if self.limit:
            self.meetings.setdefault(frozenset(group), deque(maxlen=self.limit)).append(now)

    def blocked(self, group: Sequence[int], now: float) -> bool:
        times = self.meetings.get(frozenset(group))
        return bool(
            self.limit and times and len(times) >= self.limit and now - times[0] < self.window_s
        )


def pick(
    waiting: Sequence[Entrant],
    players: int,
    history: History,
    scale: float,
    rng: random.Random,
    allow_repeat: bool = True,
    blocked: Callable[[list[int]], bool] | None = None,
) -> list[Entrant] | None:
    """A group for the next match (in seat order), or None while too few distinct bots wait.

    The bot waiting longest is always in; the others are sampled with weight
    ``exp(-|ordinal difference| / scale)``; a group that met within the repeat window is taken
    only when no other group can be formed, and not at all unless ``allow_repeat``; a group
    ``blocked`` says is over the hard cap is never taken. Seats are
    shuffled, so over many matches every bot
    sits in every seat (and deals first) about equally often.
    """
    by_bot: dict[int, Entrant] = {}
    for e in sorted(waiting, key=lambda e: e.since):
        by_bot.setdefault(e.bot_id, e)  # one slot per bot per match
    if len(by_bot) < players:
        return None
    order = list(by_bot.values())
    # The longest-waiting bot anchors the group; the next one only if every group of the first
    # is over the hard cap.
    for i, anchor in enumerate(order if blocked is not None else order[:1]):
        group = _sample(
            anchor, order[:i] + order[i + 1 :], players, history, scale, rng, allow_repeat, blocked
        )
        if group is not None:
            rng.shuffle(group)
            return group
    return None


def _sample(
    anchor: Entrant,
    others: list[Entrant],
    players: int,
    history: History,
    scale: float,
    rng: random.Random,
    allow_repeat: bool,
    blocked: Callable[[list[int]], bool] | None,
) -> list[Entrant] | None:
    best: list[Entrant] | None = None
    for _ in range(8):  # a few tries to avoid a recent repeat
        pool = list(others)
        group = [anchor]
        while len(group) < players:
            weights = [math.exp(-abs(e.ordinal - anchor.ordinal) / scale) for e in pool]
            chosen = rng.choices(range(len(pool)), weights=weights)[0]
            group.append(pool.pop(chosen))
        ids = [e.bot_id for e in group]
        if blocked is not None and blocked(ids):
            continue
        if not history.met_recently(ids):
            return group
        best = best or group
    # Sampling kept hitting recent or capped groups: take the nearest allowed group, if any.
    nearest = sorted(others, key=lambda e: abs(e.ordinal - anchor.ordinal))
    for rest in itertools.islice(itertools.combinations(nearest, players - 1), 2000):
        ids = [anchor.bot_id] + [e.bot_id for e in rest]
        if (blocked is None or not blocked(ids)) and not history.met_recently(ids):
            return [anchor, *rest]
    return best if allow_repeat else None
