"""A replay's analysis (``kozel analyze``, ``GET /api/matches/{id}/analysis``, ``kozel replay
html --analysis``): each deal re-played with the engine from its recorded deck and scored by
:mod:`kozel.analysis.review`, then the per-seat and per-side summaries.

Deals are analysed one at a time (:func:`analyze_deal`, a plain function of the replay's bytes,
so a process pool can run several); :func:`assemble` puts them together. The result is the
same for the same replay and :class:`~kozel.analysis.review.Settings` (its budget is in nodes,
not time), so :func:`cache_key` (the replay's digest, the settings, the analysis version) keys
a cache of it. The money game is refused (:class:`AnalysisError`): its pot is not card points.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

from kozel.analysis.review import (
    ANALYSIS_VERSION,
    SIGNIFICANCE,
    THRESHOLDS,
    SeatSummary,
    Settings,
    review_deal,
    to_json,
)
from kozel.core.convert import action_from_pb
from kozel.engine.actions import Action
from kozel.engine.cards import mask_of
from kozel.engine.errors import IllegalAction
from kozel.engine.rules import FirstLead
from kozel.server.replay.file import decode_replay
from kozel.server.replay.render import rules_of, start_deal
from kozel.v1 import replay_pb2
from kozel.web.cpu import CpuBudget

FORMAT = "kozel-analysis/1"


class AnalysisError(ValueError):
    """A replay that cannot be analysed; the message says why."""


def check(replay: replay_pb2.Replay) -> None:
    """Raise :class:`AnalysisError` for a replay outside the analysis."""
    rules = rules_of(replay)
    if rules is None:
        raise AnalysisError("the replay's ruleset cannot be read by this version")
    if rules.is_money:
        raise AnalysisError(
            "the money game is not analysed: its pot goes to the top total and a Bura ends "
            "the deal, so card points are not what it is played for"
        )


def cache_key(data: bytes, settings: Settings) -> str:
    """The key of a replay's analysis: its bytes' digest, the settings, the version."""
    return f"{hashlib.sha256(data).hexdigest()[:32]}-{settings.key()}"


class Throttle:
    """Called between decisions: sleeps so that this process spends at most ``share`` of a
    core on average (0: no limit), as the web's CPU budget does for requests."""

    def __init__(self, share: float, tick: Callable[[], None] | None = None) -> None:
        self.budget = CpuBudget(share, burst_s=0.5) if share > 0 else None
        self.tick = tick

    def __call__(self) -> None:
        if self.budget is not None:
            wait = self.budget.delay()
            if wait > 0:
                time.sleep(wait)
        if self.tick is not None:
            self.tick()


def _action(step: replay_pb2.ReplayStep) -> Action:
    kind, cards, combo = action_from_pb(step.action)
    return Action(kind, mask_of(cards), combo)


def analyze_deal(data: bytes, index: int, settings: Settings, share: float = 0.0) -> dict[str, Any]:
    """The analysis of deal ``index`` of the replay ``data`` as JSON values (each deal on its
    own, so that processes can share a replay's deals); ``share`` throttles the CPU."""
    replay = decode_replay(data)
    check(replay)
    rules = rules_of(replay)
    assert rules is not None
    d = replay.deals[index]
    deal = start_deal(rules, replay, d)
    if isinstance(deal, str):
        return {"index": d.index, "error": f"cannot re-play this deal: {deal}", "decisions": []}
    try:
        steps = [(s.seat, _action(s)) for s in d.steps]
    except IllegalAction as exc:
        return {"index": d.index, "error": f"an unreadable step: {exc}", "decisions": []}
    first = deal.first_leader if rules.first_lead == FirstLead.PREV_LAST_TRICK else None
    try:
        review = review_deal(
            deal, steps, settings, index=d.index, prev_last_winner=first, progress=Throttle(share)
        )
    except IllegalAction as exc:
        return {"index": d.index, "error": f"the engine refuses a step: {exc}", "decisions": []}
    out = to_json(review)
    out["voided"] = d.voided
    return out


def _summaries(deals: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each seat's summary over the deals' JSON."""
    total: dict[str, SeatSummary] = {}
    for d in deals:
        for seat, s in d.get("seats", {}).items():
            t = total.setdefault(seat, SeatSummary())
            t.merge(SeatSummary(s["decisions"], s["loss"], s["labels"], s["gained"], s["possible"]))
    return {
        seat: {
            "decisions": t.decisions,
            "loss": round(t.loss, 2),
            "loss_per_decision": round(t.loss / t.decisions, 2) if t.decisions else None,
            "labels": dict(sorted(t.labels.items())),
            "accuracy": None if t.accuracy is None else round(t.accuracy, 1),
        }
        for seat, t in sorted(total.items(), key=lambda kv: int(kv[0]))
    }


def assemble(
    replay: replay_pb2.Replay, deals: Sequence[dict[str, Any]], settings: Settings
) -> dict[str, Any]:
    """The whole analysis: the header, each deal's, and the summaries."""
    luck: dict[str, float] = {}
    for d in deals:
        for side, v in enumerate(d.get("luck", [])):
            if v is not None:
                luck[str(side)] = round(luck.get(str(side), 0.0) + v, 2)
    return {
        "format": FORMAT,
        "version": ANALYSIS_VERSION,
        "match_id": replay.match_id,
        "preset": replay.ruleset.preset or "classic",
        "players": replay.players,
        "seats": [
            {"seat": s.seat, "name": s.name, "side": s.side}
            for s in sorted(replay.seats, key=lambda s: s.seat)
        ],
        "settings": {
            "budget_ms": settings.budget_ms,
            "open_nodes": settings.open_nodes,
            "seed": settings.seed,
            "seats": None if settings.seats is None else list(settings.seats),
        },
        "thresholds": dict(THRESHOLDS),
        "significance": SIGNIFICANCE,
        "summary": _summaries(deals),
        "luck": luck,
        "deals": list(deals),
    }


def analyze_replay(
    data: bytes,
    settings: Settings,
    *,
    executor: Executor | None = None,
    done: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """The analysis of the replay ``data``: its deals one after another, or on ``executor``;
    ``done`` is told each deal's number of steps as it finishes."""
    replay = decode_replay(data)
    check(replay)
    indexes = range(len(replay.deals))
    if executor is None:
        results = []
        for i in indexes:
            results.append(analyze_deal(data, i, settings))
            if done is not None:
                done(len(replay.deals[i].steps))
    else:
        futures = [executor.submit(analyze_deal, data, i, settings) for i in indexes]
        results = []
        for i, f in enumerate(futures):
            results.append(f.result())
            if done is not None:
                done(len(replay.deals[i].steps))
    return assemble(replay, results, settings)


def steps_of(data: bytes) -> int:
    """The number of steps in a replay (the unit of progress)."""
    return sum(len(d.steps) for d in decode_replay(data).deals)


class FileCache:
    """Analyses on disk, one JSON file per :func:`cache_key` (written atomically)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            got: dict[str, Any] = json.loads((self.folder / f"{key}.json").read_text("utf-8"))
        except (OSError, ValueError):
            return None
        return got if got.get("format") == FORMAT else None

    def put(self, key: str, analysis: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / f".{key}.tmp"
        tmp.write_text(json.dumps(analysis, separators=(",", ":")), "utf-8")
        tmp.replace(self.folder / f"{key}.json")
