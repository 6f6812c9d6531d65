"""Playing an event without a referee: results drawn from each bot's strength and the game's
key, so the same event gives the same results (for the pure tournament tests)."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Collection, Mapping

from kozel.tournament.director import EventState, run
from kozel.tournament.games import GameResult, points_from_ranks
from kozel.tournament.spec import TournamentSpec, parse_tournaments

SEED = bytes(range(32))


def event(**fields: object) -> TournamentSpec:
    """One event from keyword fields (``bots`` may be a number of house bots)."""
    body: dict[str, object] = {"name": "t", **fields}
    count = body.get("bots")
    if isinstance(count, int):
        body["bots"] = [{"name": f"b{i:02d}", "house": "greedy"} for i in range(count)]
    (spec,) = parse_tournaments({"tournaments": [body]})
    return spec


def result(
    spec: TournamentSpec,
    key: str,
    seats: tuple[str, ...],
    strength: Mapping[str, float],
    absent: Collection[str] = (),
) -> GameResult:
    side_of = spec.rules().side_of(spec.players)
    rng = random.Random(hashlib.sha256(key.encode()).digest())
    perf = [strength.get(n, 0.0) + rng.random() - (100.0 if n in absent else 0.0) for n in seats]
    sides = max(side_of) + 1
    best = [max(p for s, p in enumerate(perf) if side_of[s] == side) for side in range(sides)]
    ranks = [1 + sum(b > best[side] for b in best) for side in range(sides)]
    return GameResult(
        key,
        seats,
        points_from_ranks(side_of, ranks),
        forfeited=tuple(n in absent for n in seats),
        penalties=tuple(0 for _ in seats),
    )


def play(
    spec: TournamentSpec,
    strength: Mapping[str, float] | None = None,
    absent: Collection[str] = (),
    seed: bytes = SEED,
) -> tuple[EventState, dict[str, GameResult], int]:
    """Play the event to its end; returns its last state, the results and how many passes it
    took."""
    strength = strength or {}
    results: dict[str, GameResult] = {}
    for passes in range(10_000):
        state = run(spec, seed, results)
        if state.done:
            return state, results, passes
        assert state.pending, "an unfinished event must have games to play"
        for g in state.pending:
            results[g.key] = result(spec, g.key, g.seats, strength, absent)
    raise AssertionError("the event never ended")
