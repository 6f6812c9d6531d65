"""The shared scheduler's plan: from a snapshot of one ladder (who waits where, who plays,
recent meetings, the referees that could host), which matches to form, which referee hosts
each, and, when bots wait and nothing can start, why. Pure: no I/O, no clock; the store reads
the snapshot and writes the plan (:mod:`kozel.ladder.matchmaking`).

The policy is the single referee's (:func:`kozel.ladder.scheduler.pick`: near in rating,
longest waiting first, soft repeat window, hard meeting cap, shuffled seats). A host is a live
referee that is not draining and admits matches: the one where a busy bot already plays, else
the least loaded of those holding most of the group's bots, unless another has no match of
the ladder or is at least ``REBALANCE_GAP`` matches less loaded (then the bots are redirected
there, and stay: a referee that comes back, or one added, gets work at the next pass).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from kozel.ladder.scheduler import Entrant, History, MeetingCap, pick

REBALANCE_GAP = 2  # matches: a host this much less loaded takes a group from its bots' referee


@dataclass(frozen=True, slots=True)
class Policy:
    """What the scheduler of one ladder needs from its definition."""

    players: int
    max_concurrent_matches: int
    repeat_window: int
    repeat_cap: int
    repeat_cap_window_s: float
    rating_scale: float
    patience_s: float = 1.0
    expire_s: float = 30.0  # an assignment its host has not started by then is dropped


@dataclass(frozen=True, slots=True)
class Waiting:
    """A waiting session (a ticket) as its referee published it."""

    ticket: str
    bot_id: int
    referee: str
    slots: int  # free match slots
    max_matches: int  # what the session declared
    since: float  # waiting since (database clock)


@dataclass(frozen=True, slots=True)
class Host:
    """A live referee as a possible host, from what it last published."""

    id: str
    draining: bool = False
    admits: bool = True  # not overloaded, under its match cap

    @property
    def ready(self) -> bool:
        return self.admits and not self.draining


@dataclass
class Snapshot:
    """One ladder as the store shows it at one moment (``now``: database clock; ``wall``:
    epoch seconds, the meeting cap's clock)."""

    now: float
    wall: float
    waiting: list[Waiting]
    hosts: dict[str, Host]
    busy: Counter[int] = field(default_factory=Counter)  # running or assigned matches per bot
    busy_on: dict[int, set[str]] = field(default_factory=dict)  # the referees they play on
    moving: set[str] = field(default_factory=set)  # tickets being redirected already
    matches: int = 0  # the ladder's running and assigned matches
    load: Counter[str] = field(default_factory=Counter)  # the ladder's matches per referee
    ordinals: dict[int, float] = field(default_factory=dict)
    history: History = field(default_factory=lambda: History(0))
    cap: MeetingCap = field(default_factory=lambda: MeetingCap(0, 0.0))


@dataclass(frozen=True, slots=True)
class Formed:
    """A match to assign: its host and its seats in seat order."""

    host: str
    seats: tuple[Waiting, ...]


@dataclass
class Plan:
    """What one pass forms, and why bots that wait get no match ("" when none do)."""

    formed: list[Formed] = field(default_factory=list)
    stalled: str = ""
    capped: int = 0  # groups of the waiting bots at their meeting cap (as the pass began)
    groups: int = 0  # groups the waiting bots could form

    @property
    def stuck(self) -> bool:
        """Bots wait and no match can start until an operator or the bots act (every group at
        its meeting cap, or no referee can host); passing states (too few bots free, the
        concurrency limit, a repeat pairing waiting a moment) are not."""
        return self.stalled.startswith((CAPPED, _NO_HOST))


def plan(snap: Snapshot, policy: Policy, rng: random.Random) -> Plan:
    """Form every match the snapshot allows (it is updated as matches are formed)."""
    out = Plan()
    out.capped, out.groups = capped_groups(snap, policy.players)
    declared: dict[int, int] = {}
    for t in snap.waiting:
        declared[t.bot_id] = max(declared.get(t.bot_id, 0), t.max_matches)
    slots = {t.ticket: t.slots for t in snap.waiting}
    entrants = [
        Entrant(t, t.bot_id, snap.ordinals.get(t.bot_id, 0.0), t.since)
        for t in snap.waiting
        if t.ticket not in snap.moving
    ]
    while True:
        free = [
            e
            for e in entrants
            if slots[_ticket(e).ticket] > 0 and snap.busy[e.bot_id] < declared[e.bot_id]
        ]
        idle = _why_idle(snap, policy, free)
        if idle or len({e.bot_id for e in free}) < policy.players:
            out.stalled = "" if out.formed else idle
            return out
        group, why = _group(snap, policy, free, rng)
        if group is None:
            out.stalled = "" if out.formed else why
            return out
        chosen = [_ticket(e) for e in group]
        host = choose_host(chosen, snap)
        if host is None:  # its busy bots' referee cannot host: leave them to a later pass
            stuck = {t.ticket for t in chosen if t.referee in snap.busy_on.get(t.bot_id, ())}
            entrants = [e for e in entrants if _ticket(e).ticket not in stuck]
            if not stuck:
                out.stalled = "" if out.formed else _NO_HOST
                return out
            continue
        _form(snap, out, host, chosen, group, slots)


def choose_host(chosen: Sequence[Waiting], snap: Snapshot) -> str | None:
    """The referee that hosts a group (see the module docstring), or None if none can."""
    pinned = {t.referee for t in chosen if t.referee in snap.busy_on.get(t.bot_id, ())}
    if len(pinned) > 1:
        return None
    if pinned:
        (only,) = pinned
        host = snap.hosts.get(only)
        return only if host is not None and host.ready else None
    ready = sorted(r for r, h in snap.hosts.items() if h.ready)
    if not ready:
        return None
    least = min(ready, key=lambda r: (snap.load[r], r))
    held = Counter(t.referee for t in chosen if t.referee in ready)
    if not held:
        return least
    most = max(held.values())
    near = min((r for r, n in held.items() if n == most), key=lambda r: (snap.load[r], r))
    idle = snap.load[least] == 0 < snap.load[near]  # a referee back (or new) with no match
    return least if idle or snap.load[least] + REBALANCE_GAP <= snap.load[near] else near


_NO_HOST = "no referee can host a match: every live referee is draining or not admitting"
CAPPED = "every group of the waiting bots has met"


def _ticket(e: Entrant) -> Waiting:
    assert isinstance(e.key, Waiting)
    return e.key


def _why_idle(snap: Snapshot, policy: Policy, free: Sequence[Entrant]) -> str:
    """Why no match can form before trying (too few bots, or nowhere to play)."""
    bots = {e.bot_id for e in free}
    if not bots:
        return ""
    if len(bots) < policy.players:
        return too_few(len(bots), policy.players)
    if not any(h.ready for h in snap.hosts.values()):
        return _NO_HOST
    if snap.matches >= policy.max_concurrent_matches:
        return f"max_concurrent_matches ({policy.max_concurrent_matches}) running"
    return ""


def _group(
    snap: Snapshot, policy: Policy, free: Sequence[Entrant], rng: random.Random
) -> tuple[list[Entrant] | None, str]:
    patient = snap.now - min(e.since for e in free) < policy.patience_s
    group = pick(
        free,
        policy.players,
        snap.history,
        policy.rating_scale,
        rng,
        allow_repeat=not patient,
        blocked=lambda ids: snap.cap.blocked(ids, now=snap.wall),
    )
    if group is not None:
        return group, ""
    if patient:
        return None, ""  # a repeat pairing waits a moment for other opponents
    return None, capped(policy.repeat_cap, policy.repeat_cap_window_s)


def capped_groups(snap: Snapshot, players: int) -> tuple[int, int]:
    """How many groups of the waiting bots are at their meeting cap, of how many they could
    form (what an operator reads before the ladder stalls)."""
    bots = {t.bot_id for t in snap.waiting}
    cap = snap.cap
    at_cap = sum(
        1
        for group in cap.meetings
        if len(group) == players and group <= bots and cap.blocked(list(group), now=snap.wall)
    )
    return at_cap, math.comb(len(bots), players)


def too_few(free: int, players: int) -> str:
    """Why nothing starts: fewer bots are free than a match seats."""
    return f"{free} bot(s) free to play; a match needs {players}"


def capped(repeat_cap: int, window_s: float) -> str:
    """Why nothing starts: every group of the waiting bots is at its meeting cap."""
    return f"{CAPPED} repeat_cap ({repeat_cap}) times within repeat_cap_window_s ({window_s:g} s)"


def _form(
    snap: Snapshot,
    out: Plan,
    host: str,
    chosen: list[Waiting],
    group: list[Entrant],
    slots: dict[str, int],
) -> None:
    out.formed.append(Formed(host, tuple(chosen)))
    for t, e in zip(chosen, group):
        # A redirected session moves to the host: it has no other slot where it was.
        slots[t.ticket] = slots[t.ticket] - 1 if t.referee == host else 0
        e.since = snap.now
        snap.busy[t.bot_id] += 1
        snap.busy_on.setdefault(t.bot_id, set()).add(host)
    ids = [t.bot_id for t in chosen]
    snap.history.record(ids)
    snap.cap.record(ids, snap.wall)
    snap.load[host] += 1
    snap.matches += 1
