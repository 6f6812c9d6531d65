"""The seat protocol core on a fake clock: every clock and forfeit rule of docs/referee.md,
driven by calls with explicit times, with no sleeps, sockets or event loop."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kozel.core.clock import MAX_STALL_GRACE_S, STALL_S, Clock, ClockError
from kozel.core.errors import NotPending, TransitionError
from kozel.core.hooks import MatchHooks
from kozel.core.messages import EncodedRequest, Outgoing
from kozel.core.protocol import MatchProtocol, Send
from kozel.core.requests import OPEN, TRANSITIONS, Event, Request, State
from kozel.engine.actions import PASS, Decision
from kozel.engine.match import Match
from kozel.engine.players import default_action
from kozel.engine.rules import Ruleset
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb

CLASSIC = Ruleset.preset("classic")
QUICK = Clock(move_ms=1000, bank_ms=0)


class Table:
    """A match protocol with a fake clock and an inbox per seat."""

    def __init__(
        self,
        clock: Clock = QUICK,
        *,
        players: int = 2,
        seed: bytes | int = b"\1" * 32,
        rules: Ruleset = CLASSIC,
        wants_events: list[bool] | None = None,
        max_deals: int = 0,
        hooks: MatchHooks | None = None,
    ) -> None:
        self.core = MatchProtocol(
            match_id="m1",
            rules=rules,
            players=players,
            seed=seed,
            clock=clock,
            names=[f"bot{s}" for s in range(players)],
            wants_events=wants_events,
            max_deals=max_deals,
            hooks=hooks,
        )
        self.now = 100.0
        self.inbox: list[list[Outgoing]] = [[] for _ in range(players)]
        self.take(self.core.start(self.now))

    def take(self, sends: list[Send]) -> list[Send]:
        for seat, msg in sends:
            self.inbox[seat].append(msg)
        return sends

    def of(self, seat: int, kind: str) -> list:
        return [getattr(m, kind) for m in self.inbox[seat] if m.WhichOneof("message") == kind]

    def request(self, seat: int) -> rpb.DecisionRequest:
        req = self.core.pending(seat)
        assert req is not None, f"seat {seat} is not asked"
        return req.message.decision

    @property
    def asked(self) -> list[int]:
        return [s for s in range(self.core.players) if self.core.pending(s) is not None]

    def answer(
        self, seat: int, index: int = 0, *, after: float = 0.0, request_id: int | None = None
    ) -> list[Send]:
        self.now += after
        rid = self.request(seat).request_id if request_id is None else request_id
        reply = rpb.ActionReply(match_id="m1", request_id=rid, legal_index=index)
        return self.take(self.core.receive(seat, reply, self.now))

    def wait(self, seconds: float) -> None:
        """Let time pass, the timer firing at each deadline on time."""
        until = self.now + seconds
        while (deadline := self.core.deadline) is not None and deadline <= until:
            self.now = max(self.now, deadline)
            self.take(self.core.timer(self.now))
        self.now = until

    def play_out(self, limit: int = 5000) -> None:
        """Every asked seat answers its first legal action until the match ends."""
        for _ in range(limit):
            if self.core.ended:
                return
            self.answer(self.asked[0])
        raise AssertionError("the match did not end")


def notices(table: Table, seat: int, kind: int) -> list[rpb.SeatNotice]:
    return [
        e.notice
        for e in table.of(seat, "event")
        if e.WhichOneof("kind") == "notice" and e.notice.kind == kind
    ]


def window_seed(players: int = 2, asked: int = 1) -> tuple[int, list[int]]:
    """A seed whose first step is a sealed declaration window asking ``asked`` seats."""
    for seed in range(20_000):
        deal = Match(CLASSIC, players, seed).deal
        if deal.decision is Decision.DECLARE and len(deal.to_act) == asked:
            return seed, list(deal.to_act)
    raise AssertionError("no such seed")


def plain_seed(players: int = 2) -> int:
    """A seed whose first step asks one seat to lead (no window)."""
    for seed in range(1000):
        if Match(CLASSIC, players, seed).deal.decision is Decision.LEAD:
            return seed
    raise AssertionError("no such seed")


# -- the state table -------------------------------------------------------------------------


def test_every_open_state_has_an_ending_and_final_states_take_no_event() -> None:
    for state in State:
        moves = {event for (s, event) in TRANSITIONS if s is state}
        if state in OPEN:
            assert {Event.ANSWER, Event.TIMEOUT, Event.FORFEIT} <= moves
        else:
            assert not moves
    req = Request(0, 1, EncodedRequest("m1", 1, b""), (), False, 1.0, 0.0)
    req.fire(Event.ANSWER)
    with pytest.raises(TransitionError, match="answer while answered"):
        req.fire(Event.ANSWER)


def test_a_stall_is_graced_once() -> None:
    req = Request(0, 1, EncodedRequest("m1", 1, b""), (), False, 1.0, 0.0)
    req.fire(Event.STALL)
    with pytest.raises(TransitionError):
        req.fire(Event.STALL)


# -- the clock -------------------------------------------------------------------------------


def test_requests_carry_the_clock_and_time_over_the_move_comes_from_the_bank() -> None:
    table = Table(Clock(move_ms=1000, bank_ms=5000, max_retries=2), seed=plain_seed())
    seat = table.asked[0]
    first = table.request(seat)
    assert (first.move_ms, first.time_bank_ms, first.retries_left) == (1000, 5000, 2)
    table.answer(seat, after=2.5)  # 1.5 s over the move allowance
    assert table.core.steps[0][-1].think_ms == 2500
    assert table.core.banks.left_ms[seat] == 3500
    while table.asked != [seat]:
        table.answer(table.asked[0], after=0.01)
    assert table.request(seat).time_bank_ms == 3500


def test_the_clock_starts_when_the_request_is_written_not_when_it_is_queued() -> None:
    table = Table(Clock(move_ms=1000, bank_ms=0), seed=plain_seed())
    seat = table.asked[0]
    rid = table.request(seat).request_id
    table.now += 5.0  # it waited five seconds behind the referee's own work
    table.core.written(seat, rid, table.now)
    assert table.core.deadline == pytest.approx(table.now + 1.0)
    table.answer(seat, after=0.4)
    assert table.core.steps[0][-1].think_ms == 400
    assert table.core.timeouts == [0, 0]


def test_a_resend_after_a_resume_does_not_restart_the_clock() -> None:
    table = Table(Clock(move_ms=1000, bank_ms=0), seed=plain_seed())
    seat = table.asked[0]
    rid = table.request(seat).request_id
    table.core.written(seat, rid, table.now)
    deadline = table.core.deadline
    table.take(table.core.disconnect(seat, table.now + 0.3))
    resent = table.take(table.core.resume(seat, table.now + 0.6))
    assert [m.WhichOneof("message") for s, m in resent if s == seat][:3] == [
        "match_start",
        "deal_start",
        "decision",
    ]
    again = next(m.decision for s, m in resent if s == seat and m.HasField("decision"))
    assert again.resent and again.request_id == rid
    table.core.written(seat, rid, table.now + 0.7)
    assert table.core.deadline == deadline


def test_a_timeout_plays_the_default_counts_a_strike_tells_everyone_and_empties_the_bank() -> None:
    table = Table(Clock(move_ms=1000, bank_ms=3000, max_strikes=3), seed=plain_seed())
    seat = table.asked[0]
    expected = default_action(table.core.match.deal, seat)
    table.wait(3.999)
    assert table.core.timeouts == [0, 0]
    table.wait(0.002)
    assert table.core.timeouts[seat] == 1
    assert table.core.match.deal.history[0] == (seat, expected)
    for s in range(2):
        (n,) = notices(table, s, rpb.NOTICE_KIND_TIMEOUT)
        assert (n.seat, n.strikes) == (seat, 1)
    step = table.core.steps[0][0]
    assert step.timeout and step.think_ms == 4000
    assert table.core.banks.left_ms[seat] == 0


def test_more_timeouts_than_max_strikes_forfeit() -> None:
    table = Table(Clock(move_ms=100, bank_ms=0, max_strikes=2), seed=plain_seed())
    sleeper = table.asked[0]
    for _ in range(2000):
        if table.core.ended:
            break
        if table.asked == [sleeper]:
            table.wait(0.1)
        else:
            table.answer(next(s for s in table.asked if s != sleeper))
    (forfeit,) = table.core.forfeits
    assert (forfeit.seat, forfeit.reason) == (sleeper, pb.FORFEIT_REASON_STRIKES)
    assert table.core.timeouts[sleeper] == 3
    assert table.core.match.over
    ends = table.of(1 - sleeper, "deal_end")
    assert ends[-1].voided


def test_a_stalled_referee_graces_answers_on_their_way() -> None:
    table = Table(Clock(move_ms=100, bank_ms=0), seed=plain_seed())
    seat = table.asked[0]
    late = 0.2  # the timer ran 200 ms late: a stall, not jitter
    table.now += 0.1 + late
    assert not table.take(table.core.timer(table.now))
    assert table.core.deadline == pytest.approx(table.now + min(late, MAX_STALL_GRACE_S))
    table.answer(seat, after=0.005)
    assert table.core.timeouts == [0, 0]
    assert table.core.steps[0][-1].think_ms == 100  # capped at the allowance


def test_jitter_gets_no_grace_and_a_second_stall_none_either() -> None:
    table = Table(Clock(move_ms=100, bank_ms=0, max_strikes=10), seed=plain_seed())
    seat = table.asked[0]
    table.now += 0.1 + STALL_S * 0.8  # late, but only by scheduling jitter
    table.take(table.core.timer(table.now))
    assert table.core.timeouts[seat] == 1
    seat = table.asked[0]
    before = table.core.timeouts[seat]
    deadline = table.core.deadline
    assert deadline is not None
    table.now = deadline + 0.2
    table.take(table.core.timer(table.now))  # a stall: graced
    assert table.core.timeouts[seat] == before
    graced = table.core.deadline
    assert graced is not None
    assert graced == pytest.approx(table.now + 0.2)
    table.now = graced + 0.2
    table.take(table.core.timer(table.now))  # late again: no second grace
    assert table.core.timeouts[seat] == before + 1


# -- refused answers -------------------------------------------------------------------------


def test_a_refused_answer_is_told_why_and_retried_within_the_same_deadline() -> None:
    table = Table(Clock(move_ms=1000, bank_ms=0, max_retries=2), seed=plain_seed())
    seat = table.asked[0]
    deadline = table.core.deadline
    n = len(table.request(seat).legal_actions)
    table.answer(seat, n, after=0.1)
    (rej,) = table.of(seat, "rejection")
    assert rej.code == pb.ERROR_CODE_MALFORMED and f"{n}" in rej.message
    assert (rej.retry_allowed, rej.retries_left) == (True, 1)
    assert table.core.deadline == deadline and table.core.pending(seat) is not None
    table.answer(seat, 0, after=0.1)
    assert table.core.rejections[seat] == 1
    assert len(table.core.steps[0][-1].rejections) == 1


def test_the_refusal_after_the_last_retry_forfeits() -> None:
    table = Table(Clock(move_ms=1000, bank_ms=0, max_retries=1), seed=plain_seed())
    seat = table.asked[0]
    table.answer(seat, 999)
    table.answer(seat, 999)
    last = table.of(seat, "rejection")[-1]
    assert (last.retry_allowed, last.retries_left) == (False, 0)
    (forfeit,) = table.core.forfeits
    assert (forfeit.seat, forfeit.reason) == (seat, pb.FORFEIT_REASON_ILLEGAL_ACTIONS)
    assert table.core.ended


def test_an_answer_naming_no_pending_request_changes_nothing() -> None:
    table = Table(seed=plain_seed())
    seat = table.asked[0]
    rid = table.request(seat).request_id
    with pytest.raises(
        NotPending, match=f"request {rid + 7} is not pending; the pending request is {rid}"
    ):
        table.answer(seat, request_id=rid + 7)
    with pytest.raises(NotPending, match=r"is not pending$"):
        table.answer(1 - seat, request_id=1)
    assert table.core.pending(seat) is not None and table.core.rejections == [0, 0]
    table.answer(seat)
    with pytest.raises(NotPending):
        table.answer(seat, request_id=rid)  # answered already


# -- disconnects -----------------------------------------------------------------------------


def test_a_disconnected_seat_forfeits_after_the_grace_and_its_clock_runs_meanwhile() -> None:
    table = Table(Clock(move_ms=1000, bank_ms=0, grace_ms=5000, max_strikes=10), seed=plain_seed())
    seat = table.asked[0]
    table.take(table.core.disconnect(seat, table.now))
    (n,) = notices(table, 1 - seat, rpb.NOTICE_KIND_DISCONNECTED)
    assert n.seat == seat
    table.wait(1.001)
    assert table.core.timeouts[seat] == 1  # the clock kept running while it was away
    table.wait(3.9)  # 4.901 s away: nobody answers, both time out; no forfeit yet
    assert not table.core.forfeits
    table.wait(0.1)
    (forfeit,) = table.core.forfeits
    assert (forfeit.seat, forfeit.reason) == (seat, pb.FORFEIT_REASON_DISCONNECTED)
    assert table.core.match.over and table.of(1 - seat, "deal_end")[-1].voided


def test_a_resume_within_the_grace_keeps_the_seat() -> None:
    table = Table(Clock(move_ms=10_000, bank_ms=0, grace_ms=5000), seed=plain_seed())
    seat = table.asked[0]
    table.take(table.core.disconnect(seat, table.now))
    table.now += 4.0
    table.take(table.core.resume(seat, table.now))
    assert notices(table, 1 - seat, rpb.NOTICE_KIND_RESUMED)[0].seat == seat
    table.wait(2.0)  # past the end of the grace it had
    assert not table.core.forfeits and table.core.timeouts == [0, 0]


# -- sealed windows --------------------------------------------------------------------------


def test_a_timeout_in_a_sealed_window_is_told_only_to_its_seat_until_the_deal_ends() -> None:
    seed, (holder,) = window_seed()
    table = Table(Clock(move_ms=100, bank_ms=0, max_strikes=0), seed=seed)
    other = 1 - holder
    table.wait(0.1)
    assert table.core.timeouts[holder] == 1 and table.core.public_timeouts[holder] == 0
    assert notices(table, holder, rpb.NOTICE_KIND_TIMEOUT)[0].strikes == 1
    assert not notices(table, other, rpb.NOTICE_KIND_TIMEOUT)
    assert not table.core.forfeits  # never inside the window, though over max_strikes
    while not table.core.forfeits:
        table.answer(table.asked[0])
    (forfeit,) = table.core.forfeits
    assert (forfeit.seat, forfeit.reason) == (holder, pb.FORFEIT_REASON_STRIKES)
    assert forfeit.deal_index == 1  # before the next deal is played
    assert table.core.public_timeouts[holder] == 1


def test_refusals_spent_in_a_window_pass_now_and_forfeit_when_the_deal_ends() -> None:
    seed, (holder,) = window_seed()
    table = Table(Clock(move_ms=1000, bank_ms=0, max_retries=0), seed=seed)
    rid = table.request(holder).request_id
    table.answer(holder, 999)
    (rej,) = table.of(holder, "rejection")
    assert not rej.retry_allowed
    assert not table.core.forfeits and table.core.public_rejections == [0, 0]
    pending = table.core.pending(holder)
    assert pending is None or pending.request_id != rid  # it passed; the match went on
    assert table.core.match.deal.history[0] == (holder, PASS)
    step = table.core.steps[0][0]
    assert not step.timeout and len(step.rejections) == 1
    while not table.core.forfeits:
        table.answer(table.asked[0])
    (forfeit,) = table.core.forfeits
    assert (forfeit.seat, forfeit.reason) == (holder, pb.FORFEIT_REASON_ILLEGAL_ACTIONS)


# -- whole matches, any order of events ------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    players=st.sampled_from([2, 3, 4]),
    plan=st.lists(
        st.sampled_from(["answer", "bad", "stale", "wait", "drop", "back"]), min_size=1, max_size=40
    ),
)
def test_any_sequence_of_events_keeps_the_protocol_consistent(
    seed: int, players: int, plan: list[str]
) -> None:
    table = Table(
        Clock(move_ms=200, bank_ms=300, max_strikes=3, max_retries=1, grace_ms=1000),
        players=players,
        seed=seed,
    )
    away: set[int] = set()
    for what in itertools.islice(itertools.cycle(plan), 3000):
        if table.core.ended:
            break
        asked = table.asked
        assert asked, "a running match always waits for someone"
        seat = asked[0]
        if what == "answer" or not asked:
            table.answer(seat, after=0.01)
        elif what == "bad":
            table.answer(seat, 999, after=0.01)
        elif what == "stale":
            with pytest.raises(NotPending):
                table.answer(seat, request_id=0)
        elif what == "wait":
            table.wait(0.25)
        elif what == "drop" and seat not in away:
            away.add(seat)
            table.take(table.core.disconnect(seat, table.now))
        elif what == "back" and away:
            table.take(table.core.resume(away.pop(), table.now))
        else:
            table.answer(seat)
    else:
        table.play_out()
    assert table.core.ended
    match = table.core.match
    for record, steps in zip(match.records, table.core.steps, strict=False):
        assert len(steps) == len(record.actions)
    for s in range(players):
        ids = [
            m.decision.request_id
            for m in table.inbox[s]
            if m.HasField("decision") and not m.decision.resent
        ]
        assert ids == list(range(1, len(ids) + 1))  # per seat, one by one
        assert table.core.public_timeouts[s] <= table.core.timeouts[s]


def test_a_requested_clock_is_checked_against_the_bounds_of_each_field() -> None:
    assert Clock().merged(pb.TimeControl(move_ms=500, bank_ms=0)) == Clock(move_ms=500)
    with pytest.raises(ClockError, match=r"^time_control\.grace_ms is 600001; it must be 0 to"):
        Clock().merged(pb.TimeControl(grace_ms=600_001))
    with pytest.raises(ClockError, match=r"time_control\.move_ms is 9; it must be 10 to 600000"):
        Clock().merged(pb.TimeControl(move_ms=9))
