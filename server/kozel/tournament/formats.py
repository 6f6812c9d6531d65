"""Fixed schedules: round robin and gauntlet, at two players (the circle method, a bot's
rounds alternating who sits first) and at three or four (every table of that size, grouped
into rounds in which each bot plays at most once)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

Round = list[tuple[str, ...]]  # the tables of one round, each in seat order


def circle(names: Sequence[str]) -> list[Round]:
    """A single round robin of two-bot pairings by the circle method (Berger tables): n - 1
    rounds (n if odd: one bot rests each round), each pair once, seats alternated."""
    field: list[str | None] = list(names)
    if len(field) % 2:
        field.append(None)
    n = len(field)
    rounds = []
    for r in range(n - 1):
        pairs: Round = []
        for i in range(n // 2):
            a, b = field[i], field[n - 1 - i]
            if a is None or b is None:
                continue
            # The fixed bot alternates; the others by position (each sits first about half).
            first = (r % 2 == 0) if i == 0 else (i % 2 == 0)
            pairs.append((a, b) if first else (b, a))
        rounds.append(pairs)
        field = [field[0], field[-1], *field[1:-1]]
    return rounds


def tables(names: Sequence[str], size: int) -> list[Round]:
    """Every table of ``size`` bots, in rounds of disjoint tables (greedy, in order)."""
    left = [tuple(t) for t in itertools.combinations(names, size)]
    return packed(left)


def packed(tables_: list[tuple[str, ...]]) -> list[Round]:
    """Tables grouped into rounds in which each bot plays at most once, keeping their order."""
    rounds: list[Round] = []
    left = list(tables_)
    while left:
        seated: set[str] = set()
        this: Round = []
        for t in list(left):
            if seated.isdisjoint(t):
                this.append(t)
                seated.update(t)
                left.remove(t)
        rounds.append(this)
    return rounds


def round_robin(names: Sequence[str], size: int, cycles: int) -> list[Round]:
    """``cycles`` round robins; each cycle after the first mirrors the seats of the one before."""
    one = circle(names) if size == 2 else tables(names, size)
    out = []
    for c in range(cycles):
        out += [[t if c % 2 == 0 else t[::-1] for t in rnd] for rnd in one]
    return out


def gauntlet(
    names: Sequence[str], challengers: Sequence[str], size: int, cycles: int
) -> list[Round]:
    """Each challenger against every table of ``size - 1`` other bots (challengers excluded),
    ``cycles`` times. One round per cycle when a single challenger plays (all its games at
    once); otherwise rounds of disjoint tables."""
    field = [n for n in names if n not in challengers]
    out: list[Round] = []
    for c in range(cycles):
        all_tables = [
            (ch, *others) if c % 2 == 0 else (*others, ch)
            for others in itertools.combinations(field, size - 1)
            for ch in challengers
        ]
        out += [all_tables] if len(challengers) == 1 else packed(all_tables)
    return out
