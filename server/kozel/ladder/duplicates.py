"""Duplicate matches on a ladder: a group of matches dealt from one seed, the seats rotated so
that every bot holds every side's cards once (two sides: both seatings; three or more sides:
every rotation of the seats). Which rotations a table has, and the store's record of the group
a match belongs to."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from kozel.engine.rules import Ruleset
from kozel.ladder.models import MatchRow
from kozel.ladder.store import Store

T = TypeVar("T")


def rotations(rules: Ruleset, players: int) -> int:
    """The matches of a duplicate group: one per side (a rotation by one seat moves every bot
    to the next side: at four in teams, two rotations give both team seatings)."""
    return len(set(rules.side_of(players)))


def rotate(seated: Sequence[T], rotation: int) -> list[T]:
    """``seated`` (by seat, the group's first match) rotated ``rotation`` seats on: seat
    ``s`` of the result is seat ``s - rotation`` of the first match."""
    r = rotation % len(seated) if seated else 0
    return list(seated[len(seated) - r :]) + list(seated[: len(seated) - r])


def record_group(store: Store, match_id: str, first: str, rotation: int) -> None:
    """(Blocking.) Record that ``match_id`` is rotation ``rotation`` of the duplicate group
    that ``first`` began (its row exists: the write follows the one that started it)."""
    with store.transaction() as s:
        row = s.get(MatchRow, match_id, with_for_update=True)
        if row is not None:
            row.dup_group, row.dup_rotation = first, rotation
