"""A replay's luck (:mod:`kozel.analysis.luck`): its deals re-played by the engine from the
revealed seed, as ``kozel replay verify`` re-plays them, then each deal's luck by side and the
match's units for :mod:`kozel.tools.luck_stats` (computed after the match, never while it
runs)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kozel.analysis.luck import LUCK_VERSION, DealLuck, match_luck
from kozel.core.convert import action_from_pb, ruleset_from_pb
from kozel.engine.errors import IllegalAction, SetupError
from kozel.engine.match import DealRecord, Match
from kozel.engine.rules import RulesError, Ruleset
from kozel.ladder.luck_store import MatchLuck, SideFigures
from kozel.tools.luck_stats import Unit
from kozel.v1 import replay_pb2


def replay_records(replay: replay_pb2.Replay) -> tuple[Ruleset, int, list[DealRecord]]:
    """The ruleset, the table size and the finished deals' records of a replay (ValueError
    when the engine does not re-play it)."""
    try:
        rules = ruleset_from_pb(replay.ruleset)
        match = Match(rules, replay.players, replay.seed)
        forfeits: dict[int, list[int]] = {}
        for f in replay.result.forfeits:
            forfeits.setdefault(f.deal_index, []).append(f.seat)
        for i, d in enumerate(replay.deals):
            for step in d.steps:
                kind, cards, combo = action_from_pb(step.action)
                match.play(step.seat, kind, cards, combo)
            if d.voided and i in forfeits:
                match.forfeit(*forfeits[i])
    except (IllegalAction, SetupError, RulesError) as exc:
        raise ValueError(f"the replay does not re-play: {exc}") from exc
    return rules, replay.players, list(match.records)


@dataclass(frozen=True, slots=True)
class SideLuck:
    """One match from one side: its deals' (plain, corrected) card points and penalties,
    each centred on the sides dealt in, and its match score's luck."""

    points: list[Unit]
    penalties: list[Unit]
    score_luck: float


def side_luck(
    rules: Ruleset,
    players: int,
    records: list[DealRecord],
    side: int,
    deals: Sequence[DealLuck] | None = None,
) -> SideLuck:
    """The luck of ``side`` in a match's deals (those it was dealt in); ``deals``: their
    luck, if computed already."""
    points: list[Unit] = []
    penalties: list[Unit] = []
    luck = 0.0
    for dl in match_luck(rules, players, records) if deals is None else deals:
        lk, pen_lk = dl.luck[side], dl.penalty_luck(side)
        if lk is None or pen_lk is None:
            continue
        known = [s for s, v in enumerate(dl.luck) if v is not None]
        x = (dl.points[side] or 0) - sum(dl.points[s] or 0 for s in known) / len(known)
        points.append((x, x - lk))
        if dl.penalties[side] is not None:
            y = (dl.penalties[side] or 0) - sum(dl.penalties[s] or 0 for s in known) / len(known)
            penalties.append((y, y - pen_lk))
        luck += dl.score_luck(side)
    return SideLuck(points, penalties, luck)


def ladder_luck(replay: replay_pb2.Replay) -> MatchLuck:
    """A finished ladder match's luck for the store (:mod:`kozel.ladder.luck_store`): each
    side's score, card points and their luck, and each deal's split; ``error`` when the
    replay gives none (the money game has no match score; a replay the engine refuses)."""
    if not replay.result.penalty_totals:
        return MatchLuck(
            LUCK_VERSION, error="the money game: no match score to correct", reason="money_game"
        )
    try:
        rules, players, records = replay_records(replay)
    except ValueError as exc:
        return MatchLuck(LUCK_VERSION, error=str(exc), reason="not_replayable")
    sides = sorted(set(rules.side_of(players)))
    res = replay.result
    deals = match_luck(rules, players, records)
    figures = []
    for side in sides:
        luck = side_luck(rules, players, records, side, deals)
        score = 0.5 if res.draw else float(res.winner_side == side)
        figures.append(
            SideFigures(
                side,
                score,
                luck.score_luck,
                sum(u[0] for u in luck.points),
                sum(u[0] - u[1] for u in luck.points),
                len(luck.points),
            )
        )
    return MatchLuck(LUCK_VERSION, tuple(figures), _deal_split(deals))


def _deal_split(deals: Sequence[DealLuck]) -> tuple[dict[str, list[float | None]], ...]:
    """Each deal's card points by side, centred on the sides dealt in, and their luck."""
    out = []
    for dl in deals:
        known = [s for s, v in enumerate(dl.luck) if v is not None]
        mean = sum(dl.points[s] or 0 for s in known) / len(known) if known else 0.0
        out.append(
            {
                "points": [
                    None if lk is None else round((p or 0) - mean, 3)
                    for p, lk in zip(dl.points, dl.luck)
                ],
                "luck": [None if lk is None else round(lk, 3) for lk in dl.luck],
            }
        )
    return tuple(out)
