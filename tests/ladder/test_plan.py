"""The shared scheduler's plan, pure: hosts (never a draining referee, rebalancing toward an
idle one), declared match limits, and why bots that wait get no match."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from kozel.ladder.plan import REBALANCE_GAP, Host, Policy, Snapshot, Waiting, choose_host, plan
from kozel.ladder.scheduler import History, MeetingCap

POLICY = Policy(
    players=2,
    max_concurrent_matches=100,
    repeat_window=0,
    repeat_cap=0,
    repeat_cap_window_s=3600,
    rating_scale=5.0,
    patience_s=1.0,
)


def _snap(waiting: list[Waiting], hosts: dict[str, Host], **kw: object) -> Snapshot:
    return Snapshot(now=100.0, wall=1000.0, waiting=waiting, hosts=hosts, **kw)  # type: ignore[arg-type]


def _w(i: int, referee: str, slots: int = 1, since: float = 0.0) -> Waiting:
    return Waiting(f"t{i}", i, referee, slots, slots, since)


def test_a_draining_referee_never_hosts_and_its_bots_move_to_one_that_plays_on() -> None:
    hosts = {"a": Host("a", draining=True), "b": Host("b")}
    out = plan(_snap([_w(1, "a"), _w(2, "a")], hosts), POLICY, random.Random(0))
    assert [f.host for f in out.formed] == ["b"]  # both bots are redirected to b
    assert out.stalled == ""


def test_nothing_forms_when_no_referee_can_host_and_the_plan_says_why() -> None:
    hosts = {"a": Host("a", draining=True), "b": Host("b", admits=False)}
    out = plan(_snap([_w(1, "a"), _w(2, "b")], hosts), POLICY, random.Random(0))
    assert out.formed == [] and out.stuck and "draining" in out.stalled


def test_a_busy_bot_pins_its_match_and_a_draining_pin_waits() -> None:
    snap = _snap(
        [_w(1, "a", slots=2), _w(2, "b")],
        {"a": Host("a"), "b": Host("b")},
        busy=Counter({1: 1}),
        busy_on={1: {"a"}},
    )
    assert choose_host(snap.waiting, snap) == "a"
    snap.hosts["a"] = Host("a", draining=True)
    assert choose_host(snap.waiting, snap) is None
    out = plan(snap, POLICY, random.Random(0))
    assert out.formed == [] and not out.stuck  # bot 1's match waits for a to finish


def test_an_idle_referee_takes_a_group_and_a_busy_one_only_past_the_gap() -> None:
    hosts = {"a": Host("a"), "b": Host("b"), "c": Host("c")}
    both_on_a = [_w(1, "a"), _w(2, "a")]
    snap = _snap(both_on_a, hosts, load=Counter({"a": 1, "b": 1, "c": 1}))
    assert choose_host(both_on_a, snap) == "a"  # balanced: no redirect
    snap = _snap(both_on_a, hosts, load=Counter({"a": 1, "b": 1}))
    assert choose_host(both_on_a, snap) == "c"  # c has no match (just back): it takes this one
    snap = _snap(both_on_a, hosts, load=Counter({"a": REBALANCE_GAP, "b": 1, "c": 1}))
    assert choose_host(both_on_a, snap) == "a"  # not worth a redirect yet
    snap = _snap(both_on_a, hosts, load=Counter({"a": REBALANCE_GAP + 1, "b": 1, "c": 1}))
    assert choose_host(both_on_a, snap) == "b"  # b is the gap below a


def test_every_group_at_its_meeting_cap_is_a_stall_with_its_reason() -> None:
    policy = Policy(2, 100, 0, repeat_cap=3, repeat_cap_window_s=3600, rating_scale=5.0)
    cap = MeetingCap(3, 3600)
    for _ in range(3):
        cap.record([1, 2], 990.0)
    snap = _snap([_w(1, "a"), _w(2, "a")], {"a": Host("a")}, cap=cap)
    out = plan(snap, policy, random.Random(0))
    assert out.formed == [] and out.stuck
    assert "repeat_cap (3)" in out.stalled and "3600 s" in out.stalled
    assert (out.capped, out.groups) == (1, 1)


def test_the_plan_counts_the_groups_at_their_meeting_cap() -> None:
    policy = Policy(2, 100, 0, repeat_cap=2, repeat_cap_window_s=3600, rating_scale=5.0)
    cap = MeetingCap(2, 3600)
    cap.record([1, 2], 990.0)
    cap.record([1, 2], 995.0)  # at the cap
    cap.record([1, 3], 995.0)  # once: not yet
    for _ in range(2):
        cap.record([2, 9], 990.0)  # bot 9 does not wait
        cap.record([3, 4], -3000.0)  # long ago: outside the window
    snap = _snap([_w(i, "a") for i in (1, 2, 3, 4)], {"a": Host("a")}, cap=cap)
    out = plan(snap, policy, random.Random(0))
    assert (out.capped, out.groups) == (1, 6)  # of the 6 pairs of 4 bots
    assert out.formed and out.stalled == ""


def test_one_bot_waiting_is_not_a_stall() -> None:
    out = plan(_snap([_w(1, "a")], {"a": Host("a")}), POLICY, random.Random(0))
    assert out.formed == [] and not out.stuck and "needs 2" in out.stalled


tickets = st.lists(
    st.tuples(st.sampled_from("abc"), st.integers(1, 3), st.floats(0, 99)), min_size=0, max_size=9
)


@settings(max_examples=200, deadline=None)
@given(tickets, st.sets(st.sampled_from("abc")), st.integers(0, 2**32 - 1))
def test_plans_respect_hosts_and_declared_limits(
    raw: list[tuple[str, int, float]], draining: set[str], seed: int
) -> None:
    waiting = [Waiting(f"t{i}", i % 5, r, n, n, since) for i, (r, n, since) in enumerate(raw)]
    hosts = {r: Host(r, draining=r in draining) for r in "abc"}
    declared = Counter[int]()
    for t in waiting:
        declared[t.bot_id] = max(declared[t.bot_id], t.max_matches)
    snap = _snap(waiting, hosts, history=History(2), cap=MeetingCap(2, 3600))
    out = plan(snap, POLICY, random.Random(seed))
    per_bot = Counter(t.bot_id for f in out.formed for t in f.seats)
    for f in out.formed:
        assert not hosts[f.host].draining
        assert len({t.bot_id for t in f.seats}) == POLICY.players  # distinct bots
    assert all(per_bot[b] <= declared[b] for b in per_bot)
    if out.formed:
        assert out.stalled == ""
