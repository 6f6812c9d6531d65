"""An event as JSON: what ``kozel tournament show --json`` prints and the web's API serves.

The event's seed is given only once it is over (until then it would tell the deals of the games
to come). ``luck_corrected`` fields (docs/luck.md) are null until the game's luck is computed
from its replay (after its seed group is played): raw scores stay the event's scores.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kozel.tournament.director import EventState, PairingState, StageState
from kozel.tournament.spec import TournamentSpec


def event_json(
    spec: TournamentSpec,
    state: EventState,
    games: Mapping[str, Mapping[str, Any]],
    seed: bytes,
) -> dict[str, Any]:
    """``games``: what the store knows of each game by key (status, match_id, host_id,
    replay_path, attempts)."""
    names = list(spec.names)
    return {
        "name": spec.name,
        "players": spec.players,
        "ruleset": spec.ruleset.model_dump(mode="json"),
        "groups": spec.groups,
        "done": state.done,
        "seed": seed.hex() if state.done else None,
        "current": _current(state),
        "bots": [{"name": b.name, "kind": b.kind} for b in spec.bots],
        "withdrawn": sorted(state.withdrawn),
        "stages": [_stage(st, games) for st in state.stages],
        "planned_stages": [s.format for s in spec.stages],
        "crosstable": {
            "names": names,
            "cells": {
                row: {col: c.as_dict() for col, c in cols.items()}
                for row, cols in state.crosstable.items()
            },
        },
        "winners": state.winners,
        "winner_rules": list(spec.winners),
    }


def _current(state: EventState) -> dict[str, Any] | None:
    """The stage and round being played (None once over)."""
    if state.current is None:
        return None
    stage, rnd = state.current
    rounds = state.stages[stage].rounds
    return {"stage": stage, "round": rounds[rnd].label if rounds else None}


def _stage(st: StageState, games: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {
        "index": st.index,
        "name": st.spec.name or f"stage {st.index + 1}",
        "format": st.format,
        "entrants": st.entrants,
        "done": st.done,
        "planned_rounds": st.planned_rounds,
        "rounds": [
            {
                "label": r.label,
                "byes": r.byes,
                "done": r.done,
                "pairings": [_pairing(p, games) for p in r.pairings],
            }
            for r in st.rounds
        ],
        "standings": [row.as_dict() for row in st.standings],
        "bracket": [
            {
                "id": b.match.id,
                "side": b.match.side,
                "round": b.match.round,
                "a": b.a,
                "b": b.b,
                "a_from": b.match.a.describe(),
                "b_from": b.match.b.describe(),
                "winner": b.winner,
                "loser": b.loser,
            }
            for b in st.bracket
        ],
    }


def _pairing(p: PairingState, games: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    out = []
    for g, r in zip(p.games, p.results):
        row = games.get(g.key, {})
        status = "finished" if r is not None else str(row.get("status") or "waiting")
        out.append(
            {
                "key": g.key,
                "group": g.group,
                "seats": list(g.seats),
                "status": "decided" if r is not None and not r.played else status,
                "match_id": row.get("match_id") or (r.match_id if r is not None else ""),
                "host": row.get("host_id") or "",
                "replay": bool(row.get("replay")),  # finished, and its replay may be shown
                "points": list(r.points) if r is not None else None,
                "forfeited": list(r.forfeited) if r is not None else None,
                "reason": r.reason if r is not None else "",
                "luck_corrected": list(r.luck_corrected)
                if r is not None and r.luck_corrected
                else None,
            }
        )
    o = p.outcome
    return {
        "key": p.pairing.key,
        "label": p.pairing.label,
        "order": list(p.pairing.order),
        "groups": p.pairing.groups,
        "done": p.done,
        "winner": p.winner,
        "game_points": dict(o.game_points) if o else None,
        "points": dict(o.points) if o else None,
        "games": out,
    }
