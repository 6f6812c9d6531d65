"""A replay as JSON for the viewer: the header, and per deal every step with the table as it
looked after it, seen by everyone and by each seat.

Each deal is re-played with the engine from its recorded deck; the views come from
:mod:`kozel.engine.observation` (``full_view`` for "everything", ``observe`` for "as seat N saw
it"), so the viewer never decides what a seat knew. A frame keeps what the table shows (hands,
the trick in play, the last trick, counts) and leaves out the list of all earlier tricks that
an observation repeats at every step; instead each deal lists its tricks once (``tricks_done``:
the frame that completed each, its winner, points and why it won).
"""

from __future__ import annotations

from typing import Any

from google.protobuf.json_format import MessageToDict

from kozel.core.convert import action_from_pb
from kozel.engine.errors import IllegalAction
from kozel.engine.observation import Observation, TrickView, full_view, observe
from kozel.server.replay.render import rules_of, start_deal
from kozel.v1 import game_pb2, replay_pb2

JSON_FORMAT = "kozel-replay-json/1"


def _trick(t: TrickView | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {
        "leader": t.leader,
        "winner": t.winner,
        "combo": t.combo,
        "points": t.known_points,
        "plays": [
            {
                "seat": p.seat,
                "kind": p.kind,
                "count": p.count,
                "cards": list(p.cards),
                "forced": p.forced,
            }
            for p in t.plays
        ],
    }


def frame(obs: Observation) -> dict[str, Any]:
    """What the table shows in one observation (a spectator's or a seat's)."""
    return {
        "hand": list(obs.hand),
        "seats": [
            {
                "seat": s.seat,
                "active": s.active,
                "hand_size": s.hand_size,
                "known": list(s.known_cards),
                "tricks": s.tricks_won,
                "points": s.known_points,
            }
            for s in obs.seats
        ],
        "trick": _trick(obs.trick),
        "last": _trick(obs.tricks[-1]) if obs.tricks else None,
        "tricks": len(obs.tricks),
        "talon": obs.talon,
        "trump_card_drawn": obs.trump_card_drawn,
        "to_act": list(obs.to_act),
        "over": obs.deal_over,
    }


SHOKHA = "6S"


def why_won(t: TrickView, trump: str, shokha: bool) -> str:
    """Why the winner took a finished trick (every card seen: a full view's trick)."""
    if t.combo:
        return f"combination: {t.combo}"
    if len(t.plays) == 1:
        return "nobody answered"
    beats = [p for p in t.plays if p.kind == "beat"]
    win = beats[-1] if beats else t.plays[0]
    if shokha and SHOKHA in win.cards:
        return "super-trump 6♠"
    if not beats:
        return "lead not beaten"
    lead = t.plays[0].cards
    if any(c[1] == trump for c in win.cards) and not all(c[1] == trump for c in lead):
        return "trumped"
    return "beaten in suit"


def _done(t: TrickView, step: int, trump: str, shokha: bool) -> dict[str, Any]:
    return {
        "step": step,
        "leader": t.leader,
        "winner": t.winner,
        "points": t.known_points,
        "why": why_won(t, trump, shokha),
    }


def _views(deal, players: int, full: Observation) -> dict[str, Any]:
    return {
        "all": frame(full),
        "seats": [frame(observe(deal, s)) for s in range(players)],
    }


def _action(action: game_pb2.Action) -> dict[str, Any]:
    kind = game_pb2.ActionKind.Name(action.kind).removeprefix("ACTION_KIND_").lower()
    combo = (
        game_pb2.Combo.Name(action.combo).removeprefix("COMBO_").lower() if action.combo else None
    )
    return {"kind": kind, "cards": list(action.cards), "combo": combo}


def _step(step: replay_pb2.ReplayStep, banks: list[int], move_ms: int) -> dict[str, Any]:
    """One step as the viewer shows it; ``banks`` (per seat) pays for its overrun."""
    banks[step.seat] = max(0, banks[step.seat] - max(0, step.think_ms - move_ms))
    return {
        "seat": step.seat,
        "action": _action(step.action),
        "think_ms": step.think_ms,
        "timeout": step.timeout,
        "rejections": len(step.rejections),
        "bank_left_ms": banks[step.seat],
    }


def _deal(
    replay: replay_pb2.Replay, d: replay_pb2.ReplayDeal, rules, totals: list[int], banks: list[int]
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "index": d.index,
        "dealer": d.dealer,
        "first_leader": d.first_leader,
        "active": list(d.active_seats),
        "voided": d.voided,
        "card_points": list(d.card_points),
        "tricks": list(d.tricks),
        "penalties": list(d.penalties),
        "pot_winners": list(d.pot_winners),
        "steps": [],
        "frames": [],
        "tricks_done": [],
        "error": None,
    }
    sim = start_deal(rules, replay, d)
    if isinstance(sim, str):
        out["error"] = f"cannot re-play this deal: {sim}"
        return out
    out["trump"] = sim.trump_suit
    full = full_view(sim)
    out["trump_card"] = full.trump_card
    out["frames"].append(_views(sim, replay.players, full))
    shokha = bool(rules is not None and rules.shokha)
    for step in d.steps:
        out["steps"].append(_step(step, banks, replay.time_control.move_ms))
        try:
            kind, cards, combo = action_from_pb(step.action)
            sim.play(step.seat, kind, cards, combo)
        except IllegalAction as exc:
            out["error"] = f"the engine refuses step {len(out['steps'])}: {exc}"
            out["steps"].pop()
            break
        full = full_view(sim)
        out["frames"].append(_views(sim, replay.players, full))
        for t in full.tricks[len(out["tricks_done"]) :]:
            out["tricks_done"].append(_done(t, len(out["steps"]), sim.trump_suit, shokha))
    if d.penalties:
        for side, p in enumerate(d.penalties):
            if side < len(totals):
                totals[side] += p
    out["totals_after"] = list(totals)
    return out


def replay_to_json(replay: replay_pb2.Replay) -> dict[str, Any]:
    """The viewer's JSON of a replay (see the module docstring)."""
    rules = rules_of(replay)
    sides = sorted({s.side for s in replay.seats})
    totals = [0] * (max(sides) + 1 if sides else 0)
    banks = [replay.time_control.bank_ms] * replay.players
    return {
        "format": JSON_FORMAT,
        "match_id": replay.match_id,
        "table_id": replay.table_id,
        "engine_version": replay.engine_version,
        "preset": replay.ruleset.preset or "classic",
        "money": bool(rules is not None and rules.is_money),
        "ladder": replay.ladder,
        "rules": None
        if rules is None
        else {"limit": rules.limit, "fixed_deals": rules.fixed_deals, "shokha": rules.shokha},
        "players": replay.players,
        "seats": [
            {"seat": s.seat, "name": s.name, "side": s.side}
            for s in sorted(replay.seats, key=lambda s: s.seat)
        ],
        "seed_commitment": replay.seed_commitment,
        "time_control": MessageToDict(
            replay.time_control,
            preserving_proto_field_name=True,
            always_print_fields_with_no_presence=True,
        ),
        "result": MessageToDict(
            replay.result,
            preserving_proto_field_name=True,
            always_print_fields_with_no_presence=True,
        ),
        "started_at": replay.started_at.ToJsonString() if replay.HasField("started_at") else None,
        "ended_at": replay.ended_at.ToJsonString() if replay.HasField("ended_at") else None,
        "deals": [_deal(replay, d, rules, totals, banks) for d in replay.deals],
    }
