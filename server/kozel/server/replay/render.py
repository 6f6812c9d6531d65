"""A replay as text for people (``kozel replay show``); every client string escaped."""

from __future__ import annotations

from datetime import UTC

from kozel.core.convert import action_from_pb, ruleset_from_pb
from kozel.engine.cards import CODES, codes
from kozel.engine.deal import Deal, Declared, Play, Returned, Trick
from kozel.engine.errors import IllegalAction, SetupError
from kozel.engine.rules import Ruleset
from kozel.server.text import escape
from kozel.v1 import game_pb2, replay_pb2


def show(value: object) -> str:
    """A value as the replay tools print it (lists joined by " / ", None as "none")."""
    if value is None:
        return "none"
    if isinstance(value, list):
        return " / ".join(map(str, value)) if value else "none"
    return str(value)


def rules_of(replay: replay_pb2.Replay) -> Ruleset | None:
    """The ruleset a replay was played under; None when it names a knob this version does not
    know (a replay from a newer referee: shown without what needs the rules)."""
    try:
        return ruleset_from_pb(replay.ruleset)
    except ValueError:  # RulesError, or options that are not a ruleset's at all
        return None


def replay_to_text(replay: replay_pb2.Replay) -> str:
    """A readable rendering of a replay; tricks are worked out by re-playing each deal."""
    names = {s.seat: s.name for s in replay.seats}
    rules = rules_of(replay)
    lines = _header_lines(replay, names)
    for d in replay.deals:
        lines.append("")
        lines.extend(_deal_lines(replay, d, rules, names))
    lines.append("")
    lines.extend(_result_lines(replay, names))
    # Names, ids, card codes and messages come from clients: nothing unprintable goes out.
    return "\n".join(map(escape, lines)) + "\n"


def _who(seat: int, names: dict[int, str]) -> str:
    name = names.get(seat)
    return f"seat {seat} ({name})" if name else f"seat {seat}"


def _side_name(replay: replay_pb2.Replay, side: int) -> str:
    members = [s.name or f"seat {s.seat}" for s in replay.seats if s.side == side]
    return f"side {side} ({' + '.join(members)})" if members else f"side {side}"


def _when(ts) -> str:
    return ts.ToDatetime(tzinfo=UTC).isoformat(timespec="seconds")


def _header_lines(replay: replay_pb2.Replay, names: dict[int, str]) -> list[str]:
    tc = replay.time_control
    lines = [
        f"Kozel replay of match {replay.match_id or '(no id)'}"
        + (f" at table {replay.table_id}" if replay.table_id else ""),
        (
            f"format {replay.format_version}, protocol {replay.protocol_version}, "
            f"engine {replay.engine_version or 'unknown'}"
        ),
        f"ruleset {replay.ruleset.preset or 'classic'}, {replay.players} players",
    ]
    lines += [f"  {_who(s.seat, names)}, side {s.side}" for s in replay.seats]
    lines += [
        f"seed            {replay.seed.hex()}",
        f"seed commitment {replay.seed_commitment}",
        (
            f"time control: {tc.move_ms} ms a move, bank {tc.bank_ms} ms, "
            f"{tc.max_strikes} strikes, {tc.max_retries} retries, grace {tc.grace_ms} ms"
        ),
    ]
    if replay.HasField("started_at"):
        lines.append(f"played {_when(replay.started_at)} to {_when(replay.ended_at)}")
    return lines


def start_deal(
    rules: Ruleset | None, replay: replay_pb2.Replay, d: replay_pb2.ReplayDeal
) -> Deal | str:
    """The deal as recorded, for re-playing, or why it cannot be set up."""
    if rules is None:
        return "the ruleset cannot be read"
    try:
        return Deal.start(
            rules,
            replay.players,
            [CODES.index(c.upper()) for c in d.deck],
            d.dealer,
            active=list(d.active_seats),
            trump_index=d.trump_index if d.HasField("trump_index") else None,
            first_leader=d.first_leader,
        )
    except (SetupError, ValueError) as exc:
        return str(exc)


def _deal_lines(
    replay: replay_pb2.Replay,
    d: replay_pb2.ReplayDeal,
    rules: Ruleset | None,
    names: dict[int, str],
) -> list[str]:
    sim = start_deal(rules, replay, d)
    lines = [
        f"Deal {d.index}: dealer {_who(d.dealer, names)}, first lead {_who(d.first_leader, names)}"
    ]
    deal: Deal | None = None
    if isinstance(sim, str):
        lines.append(f"  (cannot re-play this deal: {sim})")
    else:
        deal = sim
        shown = f", talon card {d.trump_index} shown" if d.HasField("trump_index") else ""
        lines.append(f"  trump card {CODES[sim.indicator]} (trump {sim.trump_suit}){shown}")
        lines += [f"  {_who(s, names)}: {' '.join(codes(sim.hands[s]))}" for s in sim.active]
    for k, step in enumerate(d.steps, 1):
        lines.append(f"  {k:3}. " + _step_text(step, names))
        lines += [f"         refused: {_rejection_text(r)}" for r in step.rejections]
        if deal is not None:
            deal, events = _replay_step(deal, step)
            lines += [f"         {e}" for e in _event_lines(events, names)]
    lines.extend(_score_lines(replay, d))
    return lines


def _replay_step(sim: Deal, step: replay_pb2.ReplayStep) -> tuple[Deal | None, list]:
    """Apply a step to the re-played deal; returns the deal (None once it refuses) and events."""
    before = len(sim.log)
    try:
        kind, cards, combo = action_from_pb(step.action)
        sim.play(step.seat, kind, cards, combo)
    except IllegalAction as exc:
        return None, [f"(the engine refuses this step: {exc}; re-playing stops here)"]
    return sim, sim.log[before:]


def _event_lines(events: list, names: dict[int, str]) -> list[str]:
    out = []
    for e in events:
        if isinstance(e, str):
            out.append(e)
        elif isinstance(e, Trick):
            out.append(f"-> trick to {_who(e.winner, names)}, {e.points} points")
        elif isinstance(e, Play) and e.forced:
            out.append(f"{_who(e.seat, names)} discards {e.cards.bit_count()} cards (forced)")
        elif isinstance(e, Declared):
            out.append(f"{_who(e.seat, names)} leads its {e.combo}: {' '.join(codes(e.cards))}")
        elif isinstance(e, Returned):
            out.append("the cards played to the trick go back to their owners")
    return out


def _step_text(step: replay_pb2.ReplayStep, names: dict[int, str]) -> str:
    timing = f"{step.think_ms} ms" + (", timeout: default action" if step.timeout else "")
    return f"{_who(step.seat, names)} {action_text(step.action)}  [{timing}]"


def action_text(action: game_pb2.Action) -> str:
    kind = game_pb2.ActionKind.Name(action.kind).removeprefix("ACTION_KIND_").lower()
    if action.kind == game_pb2.ACTION_KIND_DECLARE:
        kind += " " + game_pb2.Combo.Name(action.combo).removeprefix("COMBO_").lower()
    return " ".join([kind, *action.cards])


def _rejection_text(r: replay_pb2.ReplayRejection) -> str:
    code = game_pb2.ErrorCode.Name(r.code).removeprefix("ERROR_CODE_")
    tried = f" (tried {action_text(r.attempted)})" if r.HasField("attempted") else ""
    return f"{code} {r.message!r}{tried}"


def _score_lines(replay: replay_pb2.Replay, d: replay_pb2.ReplayDeal) -> list[str]:
    if d.voided:
        seats = [f.seat for f in replay.result.forfeits if f.deal_index == d.index]
        who = f" (seat {seats[0]} forfeited)" if seats else ""
        return [f"  voided{who}"]
    if not d.card_points:
        return ["  (unfinished)"]
    line = f"  card points {show(list(d.card_points))}; tricks {show(list(d.tricks))}"
    if d.penalties:
        line += f"; penalties {show(list(d.penalties))}"
    if d.pot_winners:
        line += f"; pot to seat {', '.join(map(str, d.pot_winners))}"
    return [line]


def _result_lines(replay: replay_pb2.Replay, names: dict[int, str]) -> list[str]:
    r = replay.result
    reason = game_pb2.MatchEndReason.Name(r.reason).removeprefix("MATCH_END_REASON_").lower()
    if r.draw:
        outcome = "no winner"
    elif r.chips:
        outcome = f"{_who(r.winner_side, names)} wins"
    else:
        outcome = f"{_side_name(replay, r.winner_side)} wins"
    lines = [f"Result: {reason}, {outcome}, {r.deals} deals"]
    if r.penalty_totals:
        lines.append(f"  penalty totals {show(list(r.penalty_totals))}")
    if r.chips:
        lines.append(f"  chips {show([f'{c:+d}' for c in r.chips])}")
    if r.eliminated_sides:
        lines.append(f"  eliminated sides {show(list(r.eliminated_sides))}")
    for f in r.forfeits:
        why = game_pb2.ForfeitReason.Name(f.reason).removeprefix("FORFEIT_REASON_").lower()
        lines.append(f"  {_who(f.seat, names)} forfeited in deal {f.deal_index} ({why})")
    if r.timeouts:
        lines.append(f"  timeouts per seat {show(list(r.timeouts))}")
    if r.rejections:
        lines.append(f"  refused actions per seat {show(list(r.rejections))}")
    return lines
