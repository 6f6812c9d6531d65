"""Decision requests of every preset and table size, as the referee sends them, for the
environment's tests: random play on :class:`kozel.env.table.Table` (the referee's own seat
protocol), stopped at a random decision."""

from __future__ import annotations

import random

from kozel.engine.rules import PRESETS
from kozel.env.table import Table
from kozel.v1 import referee_pb2 as rpb

CONFIGS = [(name, n) for name, rules in PRESETS.items() for n in rules.players_allowed]


def requests(preset: str, players: int, seed: int, steps: int) -> list[rpb.DecisionRequest]:
    """Every request sent in the first ``steps`` decisions of a random match."""
    rng = random.Random(seed)
    table = Table(preset, players, seed, wants_events=[False] * players)
    table.start()
    seen = []
    for _ in range(steps):
        if not table.asked:
            break
        seat, request = next(iter(table.asked.items()))
        seen.append(request.decision)
        table.answer(seat, rng.randrange(len(request.decision.legal_actions)))
    return seen
