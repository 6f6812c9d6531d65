"""The pairing rules: rating-near sampling, the soft repeat window, the hard meeting cap,
fair seats."""

from __future__ import annotations

import random
from collections import Counter

from kozel.ladder.scheduler import Entrant, History, MeetingCap, pick


def entrants(*ordinals: float) -> list[Entrant]:
    return [
        Entrant(key=f"bot{i}", bot_id=i, ordinal=o, since=float(i)) for i, o in enumerate(ordinals)
    ]


def ids(group: list[Entrant] | None) -> frozenset[int]:
    assert group is not None
    return frozenset(e.bot_id for e in group)


def test_the_longest_waiting_bot_is_always_in_and_near_ratings_are_likelier() -> None:
    rng = random.Random(1)
    partners: Counter[int] = Counter()
    for _ in range(2000):
        group = pick(entrants(10, 10.5, 30, 50), 2, History(0), 5.0, rng)
        assert 0 in ids(group)
        partners.update(ids(group) - {0})
    assert partners[1] > 10 * max(partners[2], 1) > 10 * partners[3]


def test_too_few_distinct_bots_make_no_group() -> None:
    one_bot_two_slots = [Entrant("a", 1, 0, 0), Entrant("a", 1, 0, 1)]
    assert pick(one_bot_two_slots, 2, History(4), 5.0, random.Random(0)) is None


def test_a_recent_pairing_is_avoided_while_another_exists_and_held_back_if_asked() -> None:
    history = History(window=2)
    history.record([0, 1])
    rng = random.Random(2)
    for _ in range(100):  # bot 1 is far likelier by rating, yet never picked again
        assert ids(pick(entrants(10, 10, 40), 2, history, 5.0, rng)) == {0, 2}
    only_repeat = entrants(10, 10)
    assert ids(pick(only_repeat, 2, history, 5.0, rng)) == {0, 1}  # better than nothing
    assert pick(only_repeat, 2, history, 5.0, rng, allow_repeat=False) is None


def test_the_hard_cap_is_never_exceeded() -> None:
    cap = MeetingCap(limit=2, window_s=100.0)
    cap.record([0, 1], now=0.0)
    assert not cap.blocked([1, 0], now=1.0)
    cap.record([0, 1], now=1.0)
    assert cap.blocked([1, 0], now=50.0)
    assert not cap.blocked([0, 1], now=100.5)  # the first meeting left the window
    rng = random.Random(3)
    group = pick(entrants(10, 10), 2, History(0), 5.0, rng, blocked=lambda g: cap.blocked(g, 50.0))
    assert group is None  # the only pair is capped: nobody plays


def test_a_capped_anchor_does_not_stall_the_others() -> None:
    cap = MeetingCap(limit=1, window_s=100.0)
    cap.record([0, 1], now=0.0)
    cap.record([0, 2], now=0.0)
    group = pick(
        entrants(10, 10, 10),
        2,
        History(0),
        5.0,
        random.Random(4),
        blocked=lambda g: cap.blocked(g, 1.0),
    )
    assert ids(group) == {1, 2}


def test_seats_rotate_fairly() -> None:
    rng = random.Random(5)
    first_seat: Counter[int] = Counter()
    for _ in range(4000):
        group = pick(entrants(0, 0, 0, 0), 4, History(0), 5.0, rng)
        assert group is not None
        first_seat[group[0].bot_id] += 1
    assert all(900 < first_seat[b] < 1100 for b in range(4)), first_seat
