"""Replays: the self-contained record of one match (``proto/kozel/v1/replay.proto``).

A replay file (``.kzr``) holds one gzip-compressed ``Replay`` message. :func:`build_replay`
makes one from an engine :class:`Match`, :func:`write_replay` stores it atomically,
:func:`verify_replay` re-plays it with the engine from the revealed seed, and
:func:`replay_to_text` renders it for people.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import tempfile
import zlib
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from google.protobuf.message import DecodeError

from kozel.engine.cards import CODES, codes
from kozel.engine.deal import Deal, Declared, Play, Returned, Trick
from kozel.engine.errors import IllegalAction, SetupError
from kozel.engine.match import DealRecord, Match
from kozel.engine.rules import Ruleset, RulesError
from kozel.engine.shuffle import commitment
from kozel.server.text import escape
from kozel.core.requests import StepMeta
from kozel.core.convert import (
    END_REASON_TO_PB,
    action_from_pb,
    action_to_pb,
    ruleset_from_pb,
    ruleset_to_pb,
)
from kozel.v1 import game_pb2, replay_pb2

FORMAT_VERSION = 1
"""The replay format version this module writes and reads."""

_ABORTED = game_pb2.MATCH_END_REASON_ABORTED


def _engine_version() -> str:
    try:
        return metadata.version("kozel-arena")
    except metadata.PackageNotFoundError:
        return "unknown"


ENGINE_VERSION = _engine_version()


class ReplayError(ValueError):
    """A file or byte string that is not a readable replay."""


# -- building ----------------------------------------------------------------------------------


def result_to_pb(
    match: Match, *, forfeits: Sequence[game_pb2.Forfeit], timeouts: Sequence[int],
    rejections: Sequence[int], aborted: bool = False,
) -> game_pb2.MatchResult:
    """The result of a match (an aborted one has no winner)."""
    board = match.board
    if aborted:
        reason = _ABORTED
    elif board.reason is None:
        reason = game_pb2.MATCH_END_REASON_UNSPECIFIED
    else:
        reason = END_REASON_TO_PB[board.reason]
    winner = None if aborted else match.winner
    money = match.rules.is_money
    return game_pb2.MatchResult(
        reason=reason, draw=winner is None, winner_side=winner or 0,
        penalty_totals=[] if money else board.totals, chips=match.chips if money else [],
        eliminated_sides=sorted(board.eliminated), forfeits=forfeits, timeouts=timeouts,
        rejections=rejections, deals=len(match.records),
    )


def build_replay(
    match: Match, *, match_id: str, names: Sequence[str], time_control: game_pb2.TimeControl,
    steps: Sequence[Sequence[StepMeta]], result: game_pb2.MatchResult, started_at: datetime,
    ended_at: datetime, table_id: str = "", engine_version: str = ENGINE_VERSION,
    protocol_version: int = 1, ladder: str = "",
) -> replay_pb2.Replay:
    """The replay of ``match``. ``steps[i]`` holds one :class:`StepMeta` per action of deal i.

    For an aborted match (``result.reason`` ABORTED) the deal in play is added as a last,
    unscored deal.
    """
    if len(names) != match.players:
        raise ValueError(f"{len(names)} names for {match.players} seats")
    deals = [
        _record_to_pb(rec, rec.active, _metas(steps, rec.index, len(rec.actions)))
        for rec in match.records
    ]
    if result.reason == _ABORTED and not match.over:
        index = len(match.records)
        deals.append(_deal_to_pb(match.deal, index, _metas(steps, index, len(match.deal.history))))
    replay = replay_pb2.Replay(
        format_version=FORMAT_VERSION, protocol_version=protocol_version,
        engine_version=engine_version, match_id=match_id, ruleset=ruleset_to_pb(match.rules),
        players=match.players,
        seats=[replay_pb2.ReplaySeat(seat=s, name=n, side=match.side_of[s])
               for s, n in enumerate(names)],
        seed=match.seed, seed_commitment=commitment(match.seed), time_control=time_control,
        deals=deals, result=result, table_id=table_id, ladder=ladder,
    )
    replay.started_at.FromDatetime(started_at)
    replay.ended_at.FromDatetime(ended_at)
    return replay


def _metas(steps: Sequence[Sequence[StepMeta]], index: int, n_actions: int) -> Sequence[StepMeta]:
    metas = steps[index] if index < len(steps) else ()
    if len(metas) != n_actions:
        raise ValueError(f"deal {index} has {n_actions} actions but {len(metas)} step records")
    return metas



def _steps_to_pb(actions: Sequence, metas: Sequence[StepMeta]) -> list[replay_pb2.ReplayStep]:
    return [
        replay_pb2.ReplayStep(seat=seat, action=action_to_pb(action), request_id=m.request_id,
                              think_ms=m.think_ms, timeout=m.timeout, rejections=m.rejections)
        for (seat, action), m in zip(actions, metas)
    ]


def _record_to_pb(rec: DealRecord, active: Sequence[int],
                  metas: Sequence[StepMeta]) -> replay_pb2.ReplayDeal:
    msg = replay_pb2.ReplayDeal(
        index=rec.index, dealer=rec.dealer, deck=[CODES[c] for c in rec.deck],
        first_leader=rec.first_leader, active_seats=active,
        steps=_steps_to_pb(rec.actions, metas), card_points=_zeros(rec.card_points),
        tricks=_zeros(rec.tricks), penalties=_zeros(rec.penalties or ()),
        pot_winners=rec.pot_winners, voided=rec.voided,
    )
    if rec.trump_index is not None:
        msg.trump_index = rec.trump_index
    return msg


def _deal_to_pb(deal: Deal, index: int, metas: Sequence[StepMeta]) -> replay_pb2.ReplayDeal:
    """The deal in play of an aborted match: its history so far, no scores."""
    msg = replay_pb2.ReplayDeal(
        index=index, dealer=deal.dealer, deck=[CODES[c] for c in deal.deck],
        first_leader=deal.first_leader, active_seats=deal.active,
        steps=_steps_to_pb(deal.history, metas),
    )
    if deal.trump_index is not None:
        msg.trump_index = deal.trump_index
    return msg


def _zeros(values: Sequence[int | None]) -> list[int]:
    return [v or 0 for v in values]


# -- files -------------------------------------------------------------------------------------


def encode_replay(replay: replay_pb2.Replay) -> bytes:
    """The file content of a replay: the serialized message, gzip-compressed."""
    return gzip.compress(replay.SerializeToString(deterministic=True), mtime=0)


def write_replay(path: Path | str, replay: replay_pb2.Replay) -> int:
    """Write a replay file atomically (creating its folder); returns the bytes written."""
    path = Path(path)
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    data = encode_replay(replay)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o644)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(folder)
    return len(data)


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (where the platform allows it)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_replay(path: Path | str) -> replay_pb2.Replay:
    """Read a replay file; raises ``OSError`` if unreadable, :class:`ReplayError` if no replay."""
    return decode_replay(Path(path).read_bytes())


def decode_replay(data: bytes) -> replay_pb2.Replay:
    """A replay from file content; raises :class:`ReplayError` for anything else."""
    try:
        raw = gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise ReplayError(f"not a replay: not gzip-compressed ({exc})") from None
    replay = replay_pb2.Replay()
    try:
        replay.ParseFromString(raw)
    except DecodeError as exc:
        raise ReplayError(f"not a replay: the content is not a Replay message ({exc})") from None
    if replay.format_version == 0:
        raise ReplayError("not a replay: the message has no format_version")
    if replay.format_version != FORMAT_VERSION:
        raise ReplayError(f"unknown replay format_version {replay.format_version}; "
                          f"this reader knows version {FORMAT_VERSION}")
    return replay


# -- verifying ---------------------------------------------------------------------------------


def verify_replay(replay: replay_pb2.Replay) -> list[str]:
    """Re-play a replay with the engine from its seed; returns the problems (empty when OK).

    Checking stops at the first deal whose set-up or steps the engine does not reproduce,
    since everything after it would differ too.
    """
    problems: list[str] = []
    match = _start_match(replay, problems)
    if match is None:
        return problems
    forfeits = _forfeits_by_deal(replay, problems)
    aborted = replay.result.reason == _ABORTED
    for i, d in enumerate(replay.deals):
        may_stop = aborted and i == len(replay.deals) - 1
        if not _verify_deal(match, d, i, forfeits.pop(i, None), may_stop, problems):
            return problems
    for index, fs in sorted(forfeits.items()):
        problems.append(f"the result lists a forfeit of seat {fs[0].seat} in deal {index}, "
                        "which is not a voided deal of the replay")
    _verify_result(match, replay, problems)
    return problems


def _start_match(replay: replay_pb2.Replay, problems: list[str]) -> Match | None:
    """The match a replay's header describes, or None (with a problem) if it cannot start."""
    digest = commitment(replay.seed)
    if digest != replay.seed_commitment.lower():
        problems.append(f"the seed's SHA-256 is {digest}, not the seed commitment "
                        f"{replay.seed_commitment or '(empty)'}")
    try:
        rules = ruleset_from_pb(replay.ruleset)
        match = Match(rules, replay.players, replay.seed)
    except (RulesError, SetupError, ValueError) as exc:
        problems.append(f"the match cannot be set up: {exc}")
        return None
    sides = rules.side_of(replay.players)
    want = [(s, sides[s]) for s in range(replay.players)]
    got = [(s.seat, s.side) for s in replay.seats]
    if got != want:
        problems.append(f"the seats list (seat, side) {got}; the table has {want}")
    return match


def _forfeits_by_deal(replay: replay_pb2.Replay,
                      problems: list[str]) -> dict[int, list[game_pb2.Forfeit]]:
    """Forfeits grouped by deal (seats forfeiting together void their deal once)."""
    out: dict[int, list[game_pb2.Forfeit]] = {}
    for f in replay.result.forfeits:
        out.setdefault(f.deal_index, []).append(f)
    return out


def _verify_deal(match: Match, d: replay_pb2.ReplayDeal, i: int,
                 forfeits: list[game_pb2.Forfeit] | None, may_stop: bool,
                 problems: list[str]) -> bool:
    """Check one deal against the engine; False when checking cannot go on."""
    if match.over:
        problems.append(f"deal {i}: the match was already over after deal {i - 1}")
        return False
    if d.index != i:
        problems.append(f"deal {i}: its index field says {d.index}")
    deal = match.deal
    if not _verify_setup(deal, d, i, problems) or not _verify_steps(match, deal, d, i, problems):
        return False
    if d.voided:
        if not forfeits:
            problems.append(f"deal {i} is marked voided but the result lists no forfeit in it")
            return False
        for forfeit in forfeits:
            if deal.over or forfeit.seat not in deal.active:
                why = "its steps finish it" if deal.over else f"seat {forfeit.seat} is not dealt in"
                problems.append(
                    f"deal {i}: the forfeit of seat {forfeit.seat} cannot void it ({why})")
                return False
        match.forfeit(*(f.seat for f in forfeits))
    elif forfeits:
        problems.append(f"deal {i}: the result lists a forfeit of seat {forfeits[0].seat} in it, "
                        "but the deal is not marked voided")
        return False
    elif not deal.over:
        if may_stop:
            return True
        problems.append(f"deal {i} is not over after its {len(d.steps)} steps")
        return False
    _verify_scores(match.records[i], d, i, problems)
    return True


def _verify_setup(deal: Deal, d: replay_pb2.ReplayDeal, i: int, problems: list[str]) -> bool:
    """The recorded deck, dealer, leader, seats and trump index are what the seed gives."""
    before = len(problems)
    deck = [CODES[c] for c in deal.deck]
    if list(d.deck) != deck:
        diff = _first_diff(d.deck, deck)
        problems.append(f"deal {i}: the deck does not follow from the seed ({diff})")
    checks = (
        ("dealer", d.dealer, deal.dealer),
        ("first leader", d.first_leader, deal.first_leader),
        ("dealt-in seats", list(d.active_seats), list(deal.active)),
        ("trump index", d.trump_index if d.HasField("trump_index") else None, deal.trump_index),
    )
    for name, got, want in checks:
        if got != want:
            problems.append(f"deal {i}: the {name} is recorded as {_show(got)}, "
                            f"the seed gives {_show(want)}")
    return len(problems) == before


def _first_diff(got: Sequence[str], want: Sequence[str]) -> str:
    for k, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"card {k} is {g}, the seed gives {w}"
    return f"{len(got)} cards recorded, the deck has {len(want)}"


def _verify_steps(match: Match, deal: Deal, d: replay_pb2.ReplayDeal, i: int,
                  problems: list[str]) -> bool:
    """Apply every step through the match; False at the first one the engine refuses."""
    for k, step in enumerate(d.steps, 1):
        where = f"deal {i} step {k}"
        if deal.over:
            problems.append(f"{where}: the deal was already over after step {k - 1}")
            return False
        try:
            kind, cards, combo = action_from_pb(step.action)
            match.play(step.seat, kind, cards, combo)
        except IllegalAction as exc:
            problems.append(f"{where}: the engine refuses seat {step.seat}'s "
                            f"{_action_text(step.action)} ({exc.code}: {exc.message})")
            return False
        applied = deal.history[-1][1]  # a declaration is always the whole hand
        if set(codes(applied.cards)) != {c.upper() for c in step.action.cards}:
            problems.append(f"{where}: seat {step.seat}'s {_action_text(step.action)} lists "
                            f"other cards than the engine applied ({applied})")
    return True


def _verify_scores(rec: DealRecord, d: replay_pb2.ReplayDeal, i: int, problems: list[str]) -> None:
    checks = (
        ("card points", list(d.card_points), _zeros(rec.card_points)),
        ("tricks", list(d.tricks), _zeros(rec.tricks)),
        ("penalties", list(d.penalties), _zeros(rec.penalties or ())),
        ("pot winners", list(d.pot_winners), list(rec.pot_winners)),
    )
    for name, got, want in checks:
        if got != want:
            problems.append(f"deal {i}: the {name} are recorded as {_show(got)}, "
                            f"the engine gives {_show(want)}")


def _verify_result(match: Match, replay: replay_pb2.Replay, problems: list[str]) -> None:
    got = replay.result
    aborted = got.reason == _ABORTED
    if not aborted and not match.over:
        problems.append(f"the match is not over after the replay's {len(replay.deals)} deals, "
                        "yet the result does not say it was aborted")
    want = result_to_pb(match, forfeits=[], timeouts=[], rejections=[], aborted=aborted)
    for name in ("reason", "draw", "winner_side", "penalty_totals", "chips", "eliminated_sides",
                 "deals"):
        g, w = getattr(got, name), getattr(want, name)
        if name == "reason":
            g, w = game_pb2.MatchEndReason.Name(g), game_pb2.MatchEndReason.Name(w)
        elif not isinstance(g, (bool, int)):
            g, w = list(g), list(w)
        if g != w:
            problems.append(f"the result's {name} is recorded as {_show(g)}, "
                            f"the engine gives {_show(w)}")
    _verify_counts(replay, problems)


def _verify_counts(replay: replay_pb2.Replay, problems: list[str]) -> None:
    """Timeouts and refusals per seat cover at least those marked on the steps."""
    steps = [s for d in replay.deals for s in d.steps]
    for name, per_step in (("timeouts", lambda s: int(s.timeout)),
                           ("rejections", lambda s: len(s.rejections))):
        counts = list(getattr(replay.result, name))
        if not counts:
            continue
        for seat in range(replay.players):
            marked = sum(per_step(s) for s in steps if s.seat == seat)
            total = counts[seat] if seat < len(counts) else 0
            if total < marked:
                problems.append(f"the result counts {total} {name} for seat {seat}, "
                                f"but its steps show {marked}")


def _show(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, list):
        return " / ".join(map(str, value)) if value else "none"
    return str(value)


# -- text --------------------------------------------------------------------------------------


def replay_to_text(replay: replay_pb2.Replay) -> str:
    """A readable rendering of a replay; tricks are worked out by re-playing each deal."""
    names = {s.seat: s.name for s in replay.seats}
    try:
        rules: Ruleset | None = ruleset_from_pb(replay.ruleset)
    except RulesError:
        rules = None
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
    return ts.ToDatetime(tzinfo=timezone.utc).isoformat(timespec="seconds")


def _header_lines(replay: replay_pb2.Replay, names: dict[int, str]) -> list[str]:
    tc = replay.time_control
    lines = [
        f"Kozel replay of match {replay.match_id or '(no id)'}"
        + (f" at table {replay.table_id}" if replay.table_id else ""),
        f"format {replay.format_version}, protocol {replay.protocol_version}, "
        f"engine {replay.engine_version or 'unknown'}",
        f"ruleset {replay.ruleset.preset or 'classic'}, {replay.players} players",
    ]
    lines += [f"  {_who(s.seat, names)}, side {s.side}" for s in replay.seats]
    lines += [
        f"seed            {replay.seed.hex()}",
        f"seed commitment {replay.seed_commitment}",
        f"time control: {tc.move_ms} ms a move, bank {tc.bank_ms} ms, {tc.max_strikes} strikes, "
        f"{tc.max_retries} retries, grace {tc.grace_ms} ms",
    ]
    if replay.HasField("started_at"):
        lines.append(f"played {_when(replay.started_at)} to {_when(replay.ended_at)}")
    return lines


def _start_deal(rules: Ruleset | None, replay: replay_pb2.Replay,
                d: replay_pb2.ReplayDeal) -> Deal | str:
    """The deal as recorded, for re-playing, or why it cannot be set up."""
    if rules is None:
        return "the ruleset cannot be read"
    try:
        return Deal.start(rules, replay.players, [CODES.index(c.upper()) for c in d.deck],
                          d.dealer, active=list(d.active_seats),
                          trump_index=d.trump_index if d.HasField("trump_index") else None,
                          first_leader=d.first_leader)
    except (SetupError, ValueError) as exc:
        return str(exc)


def _deal_lines(replay: replay_pb2.Replay, d: replay_pb2.ReplayDeal, rules: Ruleset | None,
                names: dict[int, str]) -> list[str]:
    sim = _start_deal(rules, replay, d)
    lines = [f"Deal {d.index}: dealer {_who(d.dealer, names)}, "
             f"first lead {_who(d.first_leader, names)}"]
    if isinstance(sim, str):
        lines.append(f"  (cannot re-play this deal: {sim})")
        sim = None
    else:
        shown = f", talon card {d.trump_index} shown" if d.HasField("trump_index") else ""
        lines.append(f"  trump card {CODES[sim.indicator]} (trump {sim.trump_suit}){shown}")
        lines += [f"  {_who(s, names)}: {' '.join(codes(sim.hands[s]))}" for s in sim.active]
    for k, step in enumerate(d.steps, 1):
        lines.append(f"  {k:3}. " + _step_text(step, names))
        lines += [f"         refused: {_rejection_text(r)}" for r in step.rejections]
        if sim is not None:
            sim, events = _replay_step(sim, step)
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
    return f"{_who(step.seat, names)} {_action_text(step.action)}  [{timing}]"


def _action_text(action: game_pb2.Action) -> str:
    kind = game_pb2.ActionKind.Name(action.kind).removeprefix("ACTION_KIND_").lower()
    if action.kind == game_pb2.ACTION_KIND_DECLARE:
        kind += " " + game_pb2.Combo.Name(action.combo).removeprefix("COMBO_").lower()
    return " ".join([kind, *action.cards])


def _rejection_text(r: replay_pb2.ReplayRejection) -> str:
    code = game_pb2.ErrorCode.Name(r.code).removeprefix("ERROR_CODE_")
    tried = f" (tried {_action_text(r.attempted)})" if r.HasField("attempted") else ""
    return f"{code} {r.message!r}{tried}"


def _score_lines(replay: replay_pb2.Replay, d: replay_pb2.ReplayDeal) -> list[str]:
    if d.voided:
        seats = [f.seat for f in replay.result.forfeits if f.deal_index == d.index]
        who = f" (seat {seats[0]} forfeited)" if seats else ""
        return [f"  voided{who}"]
    if not d.card_points:
        return ["  (unfinished)"]
    line = f"  card points {_show(list(d.card_points))}; tricks {_show(list(d.tricks))}"
    if d.penalties:
        line += f"; penalties {_show(list(d.penalties))}"
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
        lines.append(f"  penalty totals {_show(list(r.penalty_totals))}")
    if r.chips:
        lines.append(f"  chips {_show([f'{c:+d}' for c in r.chips])}")
    if r.eliminated_sides:
        lines.append(f"  eliminated sides {_show(list(r.eliminated_sides))}")
    for f in r.forfeits:
        why = game_pb2.ForfeitReason.Name(f.reason).removeprefix("FORFEIT_REASON_").lower()
        lines.append(f"  {_who(f.seat, names)} forfeited in deal {f.deal_index} ({why})")
    if r.timeouts:
        lines.append(f"  timeouts per seat {_show(list(r.timeouts))}")
    if r.rejections:
        lines.append(f"  refused actions per seat {_show(list(r.rejections))}")
    return lines
