"""Luck-corrected figures of an event (docs/luck.md): each entrant's luck-corrected game
points per game in a stage's standings, and each crosstable cell's luck-corrected score.

A finished game's ``luck_corrected`` (by seat: its game points minus its side's luck, filled
in by the referee's luck worker from the replay once the game's seed group is played) is an
unbiased estimate of its game points: the luck is a sum of mean-zero corrections. The games of
one seed group share their cards (every rotation of the same deals), so each group counts as
one independent observation: the 95 % interval is cluster-robust over seed groups
(:mod:`kozel.tournament.intervals`, the ladder standings' estimator). Games decided without
play, and games whose luck is not known (yet, or at all: the money game), are left out; a
figure says how many games and groups it stands on, and ``plain`` is the mean game points of
those same games, for comparison."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from kozel.tournament.crosstable import Cell, group_of, versus
from kozel.tournament.games import GameResult
from kozel.tournament.intervals import estimate


def _known(results: Iterable[GameResult]) -> list[tuple[GameResult, tuple[float, ...]]]:
    return [(r, r.luck_corrected) for r in results if r.played and r.luck_corrected is not None]


def _figures(sums: Mapping[str, list[float]]) -> dict[str, Any] | None:
    """An estimate from each group's [games, corrected sum, plain sum]."""
    est = estimate([(int(n), c) for n, c, _ in sums.values()])
    if est is None:
        return None
    plain = sum(p for _, _, p in sums.values()) / est.matches
    return est.as_dict() | {"plain": round(plain, 4)}


def by_bot(results: Iterable[GameResult]) -> dict[str, dict[str, Any]]:
    """Each bot's luck-corrected game points per game over ``results`` (as a dict: value,
    low, high, matches (games), groups, plain), for the bots with a game whose luck is
    known."""
    groups: dict[str, dict[str, list[float]]] = {}
    for r, corrected in _known(results):
        for seat, name in enumerate(r.seats):
            acc = groups.setdefault(name, {}).setdefault(group_of(r.key), [0, 0.0, 0.0])
            acc[0] += 1
            acc[1] += corrected[seat]
            acc[2] += r.points[seat]
    out = {}
    for name, sums in groups.items():
        figures = _figures(sums)
        if figures is not None:
            out[name] = figures
    return out


def crosstable_luck(
    table: Mapping[str, Mapping[str, Cell]], results: Iterable[GameResult]
) -> dict[str, dict[str, Cell]]:
    """The crosstable with each cell's luck-corrected score: over the games both bots played
    whose luck is known, the row bot's score against the column bot minus half the
    difference of their sides' luck (at two sides, the row bot's own luck: its score is its
    game points); clustered by seed group."""
    groups: dict[tuple[str, str], dict[str, list[float]]] = {}
    for r, corrected in _known(results):
        luck = [p - c for p, c in zip(r.points, corrected)]
        for i, row in enumerate(r.seats):
            for j, col in enumerate(r.seats):
                if i == j:
                    continue
                score = versus(r, row, col)
                acc = groups.setdefault((row, col), {}).setdefault(group_of(r.key), [0, 0.0, 0.0])
                acc[0] += 1
                acc[1] += score - (luck[i] - luck[j]) / 2
                acc[2] += score
    out = {row: dict(cols) for row, cols in table.items()}
    for (row, col), sums in groups.items():
        cell = out.get(row, {}).get(col)
        if cell is not None:
            out[row][col] = dataclasses.replace(cell, luck_corrected=_figures(sums))
    return out
