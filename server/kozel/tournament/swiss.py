"""Swiss pairing: a documented simpler variant of the Dutch system (docs/tournaments.md).

Two bots a table:

1. Bots are ranked by score, then by their seed (their place in the stage's seeding).
2. With an odd number, the lowest-ranked bot that has had no bye gets one (if every bot has,
   the lowest-ranked), provided the others can still be paired without a repeat.
3. From the top, each bot is paired with the first opponent it has not met in this order:
   bots of its own score group first, the one half a group below it preferred (top half
   against bottom half, as the Dutch system pairs S1 against S2), then the nearest score
   groups below; a bot left over floats down to the next group. Two bots that are both due
   the same seat (each has opened two pairings more than it followed, or the other way) are
   not paired. A depth-first search backtracks when the bots below cannot all be paired;
   only when no round satisfies these rules is the seat rule dropped, and then, only if still
   necessary, the rule against repeats.
4. Seats: the bot that has opened fewer pairings (net of those it followed) opens; on equal
   counts the one that followed last time; then the higher-ranked. No bot opens (or follows)
   more than two pairings beyond the other way. (Every pairing plays all rotations, so each bot
   plays every seat equally; this balances who opens each seed group.)

Three or four bots a table: ranked the same way, the ``n mod k`` lowest-ranked without a bye
rest, then each table is the highest-ranked bot left with the ``k - 1`` bots below it that
repeat the fewest meetings (the nearest in rank among equals).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

SEARCH_LIMIT = 200_000  # pairing attempts before repeats are allowed (never reached in practice)


@dataclass
class History:
    """What the pairing of the next round reads from the rounds before."""

    met: set[frozenset[str]] = field(default_factory=set)  # pairs that sat at one table
    byes: set[str] = field(default_factory=set)
    firsts: dict[str, int] = field(default_factory=dict)  # times a bot opened a pairing
    seconds: dict[str, int] = field(default_factory=dict)
    last_first: dict[str, bool] = field(default_factory=dict)  # whether it opened its last

    def record(self, order: Sequence[str]) -> None:
        for a, b in itertools.combinations(order, 2):
            self.met.add(frozenset((a, b)))
        for i, name in enumerate(order):
            counts = self.firsts if i == 0 else self.seconds
            counts[name] = counts.get(name, 0) + 1
            self.last_first[name] = i == 0


def ranked(names: Sequence[str], score: Mapping[str, float]) -> list[str]:
    """By score, then seed order (``names`` is in seed order)."""
    seed = {n: i for i, n in enumerate(names)}
    return sorted(names, key=lambda n: (-score.get(n, 0.0), seed[n]))


def pair_round(
    names: Sequence[str], score: Mapping[str, float], history: History, size: int = 2
) -> tuple[list[tuple[str, ...]], list[str]]:
    """One round: its tables (in seat order, best first) and the bots given a bye."""
    order = ranked(names, score)
    if size != 2:
        return _tables(order, history, size)
    # The rules, loosened only when a round cannot be paired under them: seats, then repeats.
    for met, seats in ((history.met, True), (history.met, False), (set(), False)):
        for bye in _bye_candidates(order, history):
            rest = [n for n in order if n != bye]
            clash = _seat_clash(history) if seats else _never
            pairs = _pair(rest, score, met, clash, [SEARCH_LIMIT])
            if pairs is not None:
                return [_seated(a, b, history) for a, b in pairs], [bye] if bye else []
    raise AssertionError("unreachable: pairing without the repeat rule always succeeds")


def _never(a: str, b: str) -> bool:
    return False


def _balance(history: History, name: str) -> int:
    return history.firsts.get(name, 0) - history.seconds.get(name, 0)


def _seat_clash(history: History) -> Callable[[str, str], bool]:
    """Whether two bots are both due the same seat (both opened, or both followed, two more
    times than the other way): one of them would get a third in excess."""

    def clash(a: str, b: str) -> bool:
        x, y = _balance(history, a), _balance(history, b)
        return (x >= 2 and y >= 2) or (x <= -2 and y <= -2)

    return clash


def _bye_candidates(order: list[str], history: History) -> list[str]:
    if len(order) % 2 == 0:
        return [""]
    fresh = [n for n in reversed(order) if n not in history.byes]
    return fresh + [n for n in reversed(order) if n in history.byes]


def _pair(
    rest: list[str],
    score: Mapping[str, float],
    met: set[frozenset[str]],
    clash: Callable[[str, str], bool],
    budget: list[int],
) -> list[tuple[str, str]] | None:
    if not rest:
        return []
    budget[0] -= 1
    if budget[0] < 0:
        return None
    top, others = rest[0], rest[1:]
    for opp in _candidates(top, others, score, met):
        if clash(top, opp):
            continue
        below = _pair([n for n in others if n != opp], score, met, clash, budget)
        if below is not None:
            return [(top, opp), *below]
    return None


def _candidates(
    top: str, others: list[str], score: Mapping[str, float], met: set[frozenset[str]]
) -> list[str]:
    """``top``'s possible opponents, best first: its score group (top half against bottom
    half), then the groups below by score distance, then rank."""
    mine = score.get(top, 0.0)
    group = [n for n in others if score.get(n, 0.0) == mine]
    ideal = (len(group) + 1) // 2 - 1 if group else 0  # S2's first: top's counterpart
    pos = {n: i for i, n in enumerate(others)}
    gpos = {n: i for i, n in enumerate(group)}

    def key(n: str) -> tuple[float, int, int]:
        if n in gpos:
            return (0.0, abs(gpos[n] - ideal), pos[n])
        return (abs(mine - score.get(n, 0.0)), 0, pos[n])

    return sorted((n for n in others if frozenset((top, n)) not in met), key=key)


def _seated(a: str, b: str, history: History) -> tuple[str, str]:
    """Who opens: fewer first seats, then whoever sat second last, then the higher-ranked."""
    fa, fb = _balance(history, a), _balance(history, b)
    if fa != fb:
        return (a, b) if fa < fb else (b, a)
    la, lb = history.last_first.get(a), history.last_first.get(b)
    if la is not None and lb is not None and la != lb:
        return (b, a) if la else (a, b)
    return a, b


def _tables(
    order: list[str], history: History, size: int
) -> tuple[list[tuple[str, ...]], list[str]]:
    rests = len(order) % size
    byes: list[str] = []
    if rests:
        fresh = [n for n in reversed(order) if n not in history.byes]
        byes = (fresh + [n for n in reversed(order) if n in history.byes])[:rests]
    left = [n for n in order if n not in byes]
    out = []
    while left:
        top, others = left[0], left[1:]
        window = others[: 3 * size]
        best = min(
            itertools.combinations(window, size - 1),
            key=lambda combo: (
                sum(frozenset(p) in history.met for p in itertools.combinations((top, *combo), 2)),
                sum(others.index(n) for n in combo),
            ),
        )
        table = (top, *best)
        out.append(_table_seats(table, history))
        left = [n for n in left if n not in table]
    return out, byes


def _table_seats(table: tuple[str, ...], history: History) -> tuple[str, ...]:
    """Seat order of a table: at four (two teams, seats 0 and 2 against 1 and 3) the best and
    the fourth against the second and the third; otherwise the rank order, the bot that opened
    least moved first."""
    if len(table) == 4:
        return (table[0], table[1], table[3], table[2])
    opener = min(
        table, key=lambda n: (history.firsts.get(n, 0) - history.seconds.get(n, 0), table.index(n))
    )
    return (opener, *[n for n in table if n != opener])
