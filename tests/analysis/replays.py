"""Small replays for the analysis tests: matches of a few deals played by random legal
actions (``fixed_deals`` keeps them short), written as the referee writes them."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kozel.core.steps import StepMeta
from kozel.engine import Match, Ruleset
from kozel.engine.players import random_action
from kozel.server.replay.build import build_replay, result_to_pb
from kozel.server.replay.file import write_replay
from kozel.v1 import game_pb2, replay_pb2

CLOCK = game_pb2.TimeControl(move_ms=500, bank_ms=5000, max_strikes=3, max_retries=2, grace_ms=0)
T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def small_replay(
    preset: str = "classic",
    players: int = 2,
    seed: int = 1,
    deals: int = 1,
    match_id: str = "0123456789abcdef",
    **options: Any,
) -> replay_pb2.Replay:
    """A finished match of ``deals`` deals by random players."""
    match = Match(Ruleset.preset(preset, {"fixed_deals": deals, **options}), players, seed)
    rng = random.Random(seed)
    steps: list[list[StepMeta]] = []
    request = 0
    while not match.over:
        while len(steps) <= match.deal_index:
            steps.append([])
        i = match.deal_index
        seat = match.deal.to_act[0]
        request += 1
        match.apply(seat, random_action(match.deal, seat, rng))
        steps[i].append(StepMeta(request_id=request, think_ms=rng.randrange(5, 400)))
    result = result_to_pb(match, forfeits=[], timeouts=[0] * players, rejections=[0] * players)
    return build_replay(
        match,
        match_id=match_id,
        names=[f"bot{s}" for s in range(players)],
        time_control=CLOCK,
        steps=steps,
        result=result,
        started_at=T0,
        ended_at=T0 + timedelta(minutes=2),
        table_id="t-1",
    )


def write_small_replay(folder: Path, name: str = "m.kzr", **kwargs: Any) -> Path:
    path = folder / name
    write_replay(path, small_replay(**kwargs))
    return path
