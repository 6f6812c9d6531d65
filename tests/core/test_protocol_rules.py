"""More rules of docs/referee.md on the seat protocol core's fake clock: forfeits at three and
four players, disconnect grace (also of a seat absent at the start), the deal cap, strike
counts of public notices around sealed windows, and answers around the deadline timer."""

from __future__ import annotations

import pytest

from kozel.core.clock import MAX_STALL_GRACE_S, STALL_S, Clock
from kozel.core.errors import NotPending
from kozel.core.hooks import MatchHooks
from kozel.engine.actions import Decision
from kozel.engine.match import EndReason, Match
from kozel.engine.rules import Ruleset
from kozel.server.replay.build import result_to_pb
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from tests.core.test_protocol import CLASSIC, notices, window_seed
from tests.core.test_protocol import Table as BaseTable

FIRST_OUT = Ruleset.preset("classic", {"elimination": "first_out"})


class Cuts(MatchHooks):
    """Hooks that remember the deal cap's cut."""

    def __init__(self) -> None:
        self.cuts: list[int] = []

    def cut(self, deals: int) -> None:
        self.cuts.append(deals)


class Table(BaseTable):
    """The fake-clock table of test_protocol, with what these tests count."""

    def requests_to(self, seat: int) -> int:
        """How many decision requests ``seat`` was sent (resends left out)."""
        return sum(1 for m in self.inbox[seat] if m.HasField("decision") and not m.decision.resent)

    def result(self) -> pb.MatchResult:
        """The result the runner records for the match as it stands."""
        core = self.core
        return result_to_pb(
            core.match,
            forfeits=core.forfeits,
            timeouts=core.timeouts,
            rejections=core.rejections,
            aborted=core.cut,
        )


def lead_seed(players: int, rules: Ruleset = CLASSIC) -> int:
    """A seed whose first step asks one seat to lead (no declaration window)."""
    for seed in range(2000):
        deal = Match(rules, players, seed).deal
        if deal.decision is Decision.LEAD and len(deal.to_act) == 1:
            return seed
    raise AssertionError("no such seed")


def forfeit_by_refusals(table: Table, seat: int) -> None:
    """``seat`` (asked, outside a window, ``max_retries`` 0) answers illegally: it forfeits."""
    req = table.core.pending(seat)
    assert req is not None and not req.sealed
    table.answer(seat, 999)


# -- forfeits at four and three players ------------------------------------------------------


def test_at_four_a_forfeit_eliminates_the_partner_too_and_the_other_team_wins() -> None:
    table = Table(Clock(move_ms=1000, bank_ms=0, max_retries=0), players=4, seed=lead_seed(4))
    (seat,) = table.asked
    side, partner = seat % 2, (seat + 2) % 4
    assert table.core.match.side_of[partner] == side
    forfeit_by_refusals(table, seat)
    # Only the seat that forfeited is listed, with its deal and reason ...
    assert list(table.core.forfeits) == [
        pb.Forfeit(seat=seat, deal_index=0, reason=pb.FORFEIT_REASON_ILLEGAL_ACTIONS)
    ]
    # ... but its whole side is out: two sides were left, so the other one wins at once.
    outcome = table.core.match.outcome()
    assert outcome.forfeited == (side,) and outcome.eliminated == (side,)
    assert (outcome.reason, outcome.winner) == (EndReason.FORFEIT, 1 - side)
    assert table.core.ended and table.asked == [] and table.core.deadline is None
    assert table.core.pending(partner) is None
    for s in range(4):
        ends = table.of(s, "deal_end")
        assert len(ends) == 1 and ends[0].voided
        (n,) = notices(table, s, rpb.NOTICE_KIND_FORFEIT)
        assert (n.seat, n.forfeit_reason) == (seat, pb.FORFEIT_REASON_ILLEGAL_ACTIONS)
    result = table.result()
    assert result.reason == pb.MATCH_END_REASON_FORFEIT
    assert (result.draw, result.winner_side) == (False, 1 - side)
    assert list(result.eliminated_sides) == [side]
    assert [(f.seat, f.reason) for f in result.forfeits] == [
        (seat, pb.FORFEIT_REASON_ILLEGAL_ACTIONS)
    ]
    ends = table.core.end(result, "r1")
    assert [s for s, _ in ends] == [0, 1, 2, 3]
    assert all(msg.match_end.result == result for _, msg in ends)


def test_at_three_the_other_two_play_on_after_a_forfeit_to_the_rules_end() -> None:
    table = Table(Clock(move_ms=1000, bank_ms=0, max_retries=0), players=3, seed=lead_seed(3))
    (gone,) = table.asked
    rest = [s for s in range(3) if s != gone]
    forfeit_by_refusals(table, gone)
    assert not table.core.ended and not table.core.match.over  # last_survivor: it goes on
    deal = table.core.match.deal
    assert gone not in deal.active and sorted(deal.active) == rest
    asked_before = [table.requests_to(s) for s in range(3)]
    table.play_out()
    assert table.requests_to(gone) == asked_before[gone]  # never asked again
    assert all(table.requests_to(s) > asked_before[s] for s in rest)
    match = table.core.match
    assert len(match.records) > 2  # played on for more deals than the voided one
    assert all(gone not in rec.active for rec in match.records[1:])
    outcome = match.outcome()
    # It ends as last_survivor says: a side past the limit, the survivor wins.
    assert outcome.reason is EndReason.LIMIT
    assert outcome.forfeited == (gone,) and gone in outcome.eliminated
    assert outcome.winner in rest and outcome.ranks[gone] == 3
    loser = next(s for s in rest if s != outcome.winner)
    assert match.board.totals[loser] >= CLASSIC.limit
    result = table.result()
    assert result.reason == pb.MATCH_END_REASON_LIMIT and result.winner_side == outcome.winner
    assert [(f.seat, f.deal_index) for f in result.forfeits] == [(gone, 0)]


def test_at_three_under_first_out_a_forfeit_ends_the_match() -> None:
    table = Table(
        Clock(move_ms=1000, bank_ms=0, max_retries=0),
        players=3,
        seed=lead_seed(3, FIRST_OUT),
        rules=FIRST_OUT,
    )
    while len(table.core.match.records) < 1:  # a scored deal first, so totals differ
        table.answer(table.asked[0])
    while True:  # the first request outside a window in the second deal
        (seat, *_) = table.asked
        req = table.core.pending(seat)
        assert req is not None
        if not req.sealed and len(table.asked) == 1:
            break
        table.answer(seat)
    assert len(table.core.match.records) == 1
    totals = list(table.core.match.board.totals)
    forfeit_by_refusals(table, seat)
    outcome = table.core.match.outcome()
    assert table.core.ended and table.asked == []
    assert outcome.reason is EndReason.FORFEIT and outcome.forfeited == (seat,)
    rest = [s for s in range(3) if s != seat]
    best = min(totals[s] for s in rest)
    top = [s for s in rest if totals[s] == best]
    assert outcome.winner == (top[0] if len(top) == 1 else None)
    assert table.result().reason == pb.MATCH_END_REASON_FORFEIT


# -- disconnects -----------------------------------------------------------------------------


def _one_away(move_ms: int) -> tuple[Table, int, int, int]:
    """A two-player table whose seat not being asked has just disconnected (grace 1 s): the
    table, the asked seat, the away seat and how many requests the away seat had been sent."""
    table = Table(Clock(move_ms=move_ms, bank_ms=0, grace_ms=1000), seed=lead_seed(2))
    (asked,) = table.asked
    away = 1 - asked
    sent = table.requests_to(away)
    table.take(table.core.disconnect(away, table.now))
    return table, asked, away, sent


def test_a_seat_away_while_not_asked_forfeits_when_its_grace_runs_out() -> None:
    table, asked, away, sent = _one_away(move_ms=10_000)
    assert table.core.deadline == pytest.approx(table.now + 1.0)  # its grace, not the move
    table.wait(1.5)  # the grace runs out while the other seat thinks
    table.answer(asked)  # the step ends; the next would ask the seat that is away
    (forfeit,) = table.core.forfeits
    assert (forfeit.seat, forfeit.reason) == (away, pb.FORFEIT_REASON_DISCONNECTED)
    assert table.requests_to(away) == sent  # it was not asked first
    assert table.core.timeouts == [0, 0]
    assert table.core.match.over and table.core.match.outcome().winner == asked
    (n,) = notices(table, asked, rpb.NOTICE_KIND_FORFEIT)
    assert n.seat == away


def test_the_forfeit_of_a_seat_not_asked_waits_for_the_step_in_play() -> None:
    """docs/referee.md: a forfeit takes effect when the step in play ends (it voids the deal for
    everyone at once, so the thinking seat's step is settled first)."""
    table, asked, away, _ = _one_away(move_ms=60_000)
    table.wait(1.001)  # its grace is over; the other seat has 59 s left to think
    assert not table.core.forfeits and not table.core.ended
    assert table.core.pending(asked) is not None  # still asked, its clock running
    table.now += 20.0
    table.answer(asked)
    assert [(f.seat, f.reason) for f in table.core.forfeits] == [
        (away, pb.FORFEIT_REASON_DISCONNECTED)
    ]
    assert table.core.ended


def test_a_seat_away_while_not_asked_that_resumes_within_grace_stays() -> None:
    table, asked, away, sent = _one_away(move_ms=10_000)
    table.now += 0.9
    table.take(table.core.resume(away, table.now))
    assert table.core.deadline == pytest.approx(100.0 + 10.0)  # only the move clock is left
    table.wait(0.5)  # past the end of the grace it had
    table.answer(asked)
    assert not table.core.forfeits and not table.core.ended
    assert table.core.pending(away) is not None and table.requests_to(away) == sent + 1


@pytest.mark.parametrize("asked", [True, False], ids=["asked", "not-asked"])
def test_a_seat_absent_at_the_start_has_its_grace_counted_from_since(asked: bool) -> None:
    table = Table(Clock(move_ms=10_000, bank_ms=0, grace_ms=5000), seed=lead_seed(2))
    (first,) = table.asked
    absent = first if asked else 1 - first
    since = table.now - 3.0  # as the runner does for a redirected bot that has not arrived
    table.take(table.core.disconnect(absent, since))
    assert table.core.deadline == pytest.approx(since + 5.0)  # not start + 5
    table.now = since + 4.99
    table.take(table.core.timer(table.now))
    assert not table.core.forfeits
    table.now = since + 5.0
    table.take(table.core.timer(table.now))
    if not asked:  # applied when the asked seat's step ends, before the absent one is asked
        table.answer(first)
    (forfeit,) = table.core.forfeits
    assert (forfeit.seat, forfeit.reason) == (absent, pb.FORFEIT_REASON_DISCONNECTED)
    assert table.now < 100.0 + 5.0  # well before a grace counted from the start would end
    assert table.core.ended


def test_a_seat_whose_grace_ran_out_before_the_start_forfeits_at_the_first_timer() -> None:
    table = Table(Clock(move_ms=10_000, bank_ms=0, grace_ms=2000), seed=lead_seed(2))
    (absent,) = table.asked
    table.take(table.core.disconnect(absent, table.now - 6.0))
    deadline = table.core.deadline
    assert deadline is not None and deadline <= table.now  # already due
    table.take(table.core.timer(table.now))
    assert [(f.seat, f.reason) for f in table.core.forfeits] == [
        (absent, pb.FORFEIT_REASON_DISCONNECTED)
    ]


# -- the deal cap ----------------------------------------------------------------------------


def test_the_deal_cap_cuts_a_running_match_and_it_is_recorded_as_aborted() -> None:
    hooks = Cuts()
    table = Table(seed=lead_seed(2), max_deals=2, hooks=hooks)
    table.play_out()
    core = table.core
    assert core.cut and core.ended and not core.match.over  # still running when cut
    assert len(core.match.records) == 2 and hooks.cuts == [2]
    assert table.asked == [] and core.deadline is None
    for s in range(2):
        assert [d.deal_index for d in table.of(s, "deal_start")] == [0, 1]  # no third deal
        assert [d.deal_index for d in table.of(s, "deal_end")] == [0, 1]
    result = table.result()
    assert result.reason == pb.MATCH_END_REASON_ABORTED and result.deals == 2
    assert result.draw and result.winner_side == 0  # an aborted match has no winner
    assert not table.take(core.timer(table.now + 1000))  # nothing more happens


def test_a_match_that_ends_on_the_deal_cap_is_not_cut() -> None:
    rules = Ruleset.preset("classic", {"fixed_deals": 2})
    table = Table(seed=lead_seed(2, rules), rules=rules, max_deals=2)
    table.play_out()
    assert not table.core.cut and table.core.match.over
    assert table.result().reason == pb.MATCH_END_REASON_FIXED_DEALS


# -- sealed windows and public counts --------------------------------------------------------


def test_the_strikes_of_a_public_notice_leave_out_timeouts_held_by_a_sealed_window() -> None:
    seed, (holder,) = window_seed()
    table = Table(Clock(move_ms=100, bank_ms=0, max_strikes=10), seed=seed)
    other = 1 - holder
    table.wait(0.1)  # a timeout inside the window: told to the holder alone
    assert table.core.timeouts[holder] == 1
    (private,) = notices(table, holder, rpb.NOTICE_KIND_TIMEOUT)
    assert private.strikes == 1
    while True:  # on to the holder's next request outside a window, in the same deal
        req = table.core.pending(holder)
        if req is not None and not req.sealed and table.asked == [holder]:
            break
        table.answer(table.asked[0])
    assert len(table.core.match.records) == 0
    table.wait(0.1)  # a public timeout: its strike count shows only the public one
    assert table.core.timeouts[holder] == 2 and table.core.public_timeouts[holder] == 1
    (public,) = notices(table, other, rpb.NOTICE_KIND_TIMEOUT)
    assert (public.seat, public.strikes) == (holder, 1)
    assert all(n.strikes in (1, 2) for n in notices(table, holder, rpb.NOTICE_KIND_TIMEOUT))
    # Any other public notice in the deal counts the same way.
    table.take(table.core.disconnect(holder, table.now))
    (gone,) = notices(table, other, rpb.NOTICE_KIND_DISCONNECTED)
    assert gone.strikes == 1
    table.take(table.core.resume(holder, table.now))
    # Once the deal has ended the held timeout is public, and the next notice counts it.
    while len(table.core.match.records) < 1:
        table.answer(table.asked[0])
    assert table.core.public_timeouts[holder] == 2
    table.take(table.core.disconnect(holder, table.now))
    assert notices(table, other, rpb.NOTICE_KIND_DISCONNECTED)[-1].strikes == 2


# -- answers around the deadline timer -------------------------------------------------------


def test_an_answer_before_the_timer_has_run_is_taken_however_late() -> None:
    table = Table(Clock(move_ms=125, bank_ms=0), seed=lead_seed(2))
    (seat,) = table.asked
    req = table.core.pending(seat)
    assert req is not None
    legal = req.legal
    deadline = table.core.deadline
    assert deadline is not None
    table.now = deadline + 1.0  # long past the deadline, but no timer has run
    table.answer(seat)
    assert table.core.timeouts == [0, 0]
    assert table.core.match.deal.history[0] == (seat, legal[0])
    assert table.core.steps[0][-1].think_ms == 125  # capped at the allowance
    assert not table.core.steps[0][-1].timeout


def test_an_answer_after_the_timer_expired_its_request_is_not_pending() -> None:
    table = Table(Clock(move_ms=125, bank_ms=0, max_strikes=10), seed=lead_seed(2))
    (seat,) = table.asked
    rid = table.request(seat).request_id
    deadline = table.core.deadline
    assert deadline is not None
    table.now = deadline
    table.take(table.core.timer(table.now))  # on time: no grace, the default is played
    assert table.core.timeouts[seat] == 1
    history = list(table.core.match.deal.history)
    pending = [table.core.pending(s) for s in range(2)]
    with pytest.raises(NotPending):
        table.answer(seat, request_id=rid, after=0.001)
    assert list(table.core.match.deal.history) == history
    assert [table.core.pending(s) for s in range(2)] == pending
    assert table.core.timeouts[seat] == 1 and table.core.rejections == [0, 0]


@pytest.mark.parametrize(
    ("late", "grace"),
    [
        (0.0, 0.0),
        (STALL_S - 0.005, 0.0),  # scheduling jitter
        (STALL_S + 0.005, STALL_S + 0.005),  # a stall: as long again
        (0.1, 0.1),
        (0.6, MAX_STALL_GRACE_S),  # capped
    ],
)
@pytest.mark.parametrize("answers", [True, False], ids=["answers", "silent"])
def test_a_late_timer_graces_a_stall_but_not_jitter(
    late: float, grace: float, answers: bool
) -> None:
    table = Table(Clock(move_ms=125, bank_ms=0, max_strikes=10), seed=lead_seed(2))
    (seat,) = table.asked
    rid = table.request(seat).request_id
    deadline = table.core.deadline
    assert deadline == 100.125
    table.now = deadline + late
    table.take(table.core.timer(table.now))
    if not grace:
        assert table.core.timeouts[seat] == 1
        with pytest.raises(NotPending):
            table.answer(seat, request_id=rid)
        return
    assert table.core.timeouts == [0, 0]
    graced = table.core.deadline
    assert graced is not None
    assert graced == pytest.approx(table.now + grace)
    if answers:
        table.now = graced - 0.001
        table.answer(seat, request_id=rid)
        assert table.core.timeouts == [0, 0]
        assert table.core.steps[0][-1].think_ms == 125  # the stall is not the bot's time
    else:
        table.now = graced - 0.001
        table.take(table.core.timer(table.now))
        assert table.core.timeouts == [0, 0]  # not before the graced deadline
        table.now = graced + late  # late again: a second grace is not given
        table.take(table.core.timer(table.now))
        assert table.core.timeouts[seat] == 1
        with pytest.raises(NotPending):
            table.answer(seat, request_id=rid)
