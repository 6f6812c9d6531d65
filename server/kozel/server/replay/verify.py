"""Verifying a replay: re-play it with the engine from its revealed seed."""

from __future__ import annotations

from collections.abc import Sequence

from kozel.core.convert import action_from_pb, ruleset_from_pb
from kozel.engine.cards import CODES, codes
from kozel.engine.deal import Deal
from kozel.engine.errors import IllegalAction, SetupError
from kozel.engine.match import DealRecord, Match
from kozel.engine.rules import RulesError
from kozel.engine.shuffle import commitment
from kozel.server.replay.build import ABORTED, result_to_pb, zeros
from kozel.server.replay.render import action_text, show
from kozel.v1 import game_pb2, replay_pb2


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
    aborted = replay.result.reason == ABORTED
    for i, d in enumerate(replay.deals):
        may_stop = aborted and i == len(replay.deals) - 1
        if not _verify_deal(match, d, i, forfeits.pop(i, None), may_stop, problems):
            return problems
    for index, fs in sorted(forfeits.items()):
        problems.append(
            f"the result lists a forfeit of seat {fs[0].seat} in deal {index}, "
            "which is not a voided deal of the replay"
        )
    _verify_result(match, replay, problems)
    return problems


def _start_match(replay: replay_pb2.Replay, problems: list[str]) -> Match | None:
    """The match a replay's header describes, or None (with a problem) if it cannot start."""
    digest = commitment(replay.seed)
    if digest != replay.seed_commitment.lower():
        problems.append(
            f"the seed's SHA-256 is {digest}, not the seed commitment "
            f"{replay.seed_commitment or '(empty)'}"
        )
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


def _forfeits_by_deal(
    replay: replay_pb2.Replay, problems: list[str]
) -> dict[int, list[game_pb2.Forfeit]]:
    """Forfeits grouped by deal (seats forfeiting together void their deal once)."""
    out: dict[int, list[game_pb2.Forfeit]] = {}
    for f in replay.result.forfeits:
        out.setdefault(f.deal_index, []).append(f)
    return out


def _verify_deal(
    match: Match,
    d: replay_pb2.ReplayDeal,
    i: int,
    forfeits: list[game_pb2.Forfeit] | None,
    may_stop: bool,
    problems: list[str],
) -> bool:
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
                    f"deal {i}: the forfeit of seat {forfeit.seat} cannot void it ({why})"
                )
                return False
        match.forfeit(*(f.seat for f in forfeits))
    elif forfeits:
        problems.append(
            f"deal {i}: the result lists a forfeit of seat {forfeits[0].seat} in it, "
            "but the deal is not marked voided"
        )
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
            problems.append(
                f"deal {i}: the {name} is recorded as {show(got)}, the seed gives {show(want)}"
            )
    return len(problems) == before


def _first_diff(got: Sequence[str], want: Sequence[str]) -> str:
    for k, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"card {k} is {g}, the seed gives {w}"
    return f"{len(got)} cards recorded, the deck has {len(want)}"


def _verify_steps(
    match: Match, deal: Deal, d: replay_pb2.ReplayDeal, i: int, problems: list[str]
) -> bool:
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
            problems.append(
                f"{where}: the engine refuses seat {step.seat}'s "
                f"{action_text(step.action)} ({exc.code}: {exc.message})"
            )
            return False
        applied = deal.history[-1][1]  # a declaration is always the whole hand
        if set(codes(applied.cards)) != {c.upper() for c in step.action.cards}:
            problems.append(
                f"{where}: seat {step.seat}'s {action_text(step.action)} lists "
                f"other cards than the engine applied ({applied})"
            )
    return True


def _verify_scores(rec: DealRecord, d: replay_pb2.ReplayDeal, i: int, problems: list[str]) -> None:
    checks = (
        ("card points", list(d.card_points), zeros(rec.card_points)),
        ("tricks", list(d.tricks), zeros(rec.tricks)),
        ("penalties", list(d.penalties), zeros(rec.penalties or ())),
        ("pot winners", list(d.pot_winners), list(rec.pot_winners)),
    )
    for name, got, want in checks:
        if got != want:
            problems.append(
                f"deal {i}: the {name} are recorded as {show(got)}, the engine gives {show(want)}"
            )


def _verify_result(match: Match, replay: replay_pb2.Replay, problems: list[str]) -> None:
    got = replay.result
    aborted = got.reason == ABORTED
    if not aborted and not match.over:
        problems.append(
            f"the match is not over after the replay's {len(replay.deals)} deals, "
            "yet the result does not say it was aborted"
        )
    want = result_to_pb(match, forfeits=[], timeouts=[], rejections=[], aborted=aborted)
    for name in (
        "reason",
        "draw",
        "winner_side",
        "penalty_totals",
        "chips",
        "eliminated_sides",
        "deals",
    ):
        g, w = getattr(got, name), getattr(want, name)
        if name == "reason":
            g, w = game_pb2.MatchEndReason.Name(g), game_pb2.MatchEndReason.Name(w)
        elif not isinstance(g, (bool, int)):
            g, w = list(g), list(w)
        if g != w:
            problems.append(
                f"the result's {name} is recorded as {show(g)}, the engine gives {show(w)}"
            )
    _verify_counts(replay, problems)


def _verify_counts(replay: replay_pb2.Replay, problems: list[str]) -> None:
    """Timeouts and refusals per seat cover at least those marked on the steps."""
    steps = [s for d in replay.deals for s in d.steps]
    for name, per_step in (
        ("timeouts", lambda s: int(s.timeout)),
        ("rejections", lambda s: len(s.rejections)),
    ):
        counts = list(getattr(replay.result, name))
        if not counts:
            continue
        for seat in range(replay.players):
            marked = sum(per_step(s) for s in steps if s.seat == seat)
            total = counts[seat] if seat < len(counts) else 0
            if total < marked:
                problems.append(
                    f"the result counts {total} {name} for seat {seat}, but its steps show {marked}"
                )
