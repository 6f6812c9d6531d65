"""The tournament scheduler's plan: which of the games that can be played start now, on which
referee, and where each seat's bot comes from. Pure: the store reads the snapshot and writes the
plan (:mod:`kozel.ladder.tournament_store`), as the ladders' scheduler does.

A game starts when every seat can be filled: a house bot or a command under its concurrency, a
registered bot from a session with a free slot on any live referee, or, once the game has waited
``absent_wait_s`` for it, nobody (the seat starts absent and the referee forfeits it after the
clock's grace time). Games start in key order, at most ``max_concurrent_games`` at once. The
host is the ready referee holding most of the game's waiting bots (the others are redirected
to it), the least loaded among equals; a game with no registered bot goes to the least loaded
ready referee.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Ticket:
    """A session of a registered bot waiting on a referee."""

    id: str
    bot: str  # the bot's name
    referee: str
    slots: int


@dataclass(frozen=True, slots=True)
class Waiting:
    """A game that can be played, not yet assigned."""

    key: str
    seats: tuple[str, ...]
    since: float  # when it became playable (database clock)


@dataclass
class Snapshot:
    now: float
    games: list[Waiting]  # in key order
    kinds: Mapping[str, str]  # bot name -> "house" | "command" | "account"
    concurrency: Mapping[str, int]  # house and command bots
    tickets: list[Ticket]
    hosts: Mapping[str, bool]  # live referee -> ready (not draining, admits matches)
    busy: Counter[str] = field(default_factory=Counter)  # games assigned or running, per bot
    load: Counter[str] = field(default_factory=Counter)  # games assigned or running, per host
    active: int = 0  # the event's games assigned or running


@dataclass(frozen=True, slots=True)
class Seat:
    kind: str  # "house" | "command" | "ticket" | "absent"
    ticket: str = ""
    referee: str = ""  # where the ticket's bot waits


@dataclass(frozen=True, slots=True)
class Assigned:
    key: str
    host: str
    seats: tuple[Seat, ...]


def plan(snap: Snapshot, max_games: int, absent_wait_s: float) -> list[Assigned]:
    """Every game that can start now (the snapshot is updated as games are assigned)."""
    slots = {t.id: t.slots for t in snap.tickets}
    out: list[Assigned] = []
    for game in snap.games:
        if snap.active >= max_games:
            break
        if not any(snap.hosts.values()):
            break
        seats = _seats(snap, game, slots, absent_wait_s)
        if seats is None:
            continue
        host = _host(snap, seats)
        for s, name in zip(seats, game.seats):
            snap.busy[name] += 1
            if s.kind == "ticket":
                slots[s.ticket] = slots[s.ticket] - 1 if s.referee == host else 0
        snap.load[host] += 1
        snap.active += 1
        out.append(Assigned(game.key, host, tuple(seats)))
    return out


def _seats(
    snap: Snapshot, game: Waiting, slots: dict[str, int], absent_wait_s: float
) -> list[Seat] | None:
    """Where each seat's bot comes from, or None when the game cannot start yet."""
    seats: list[Seat] = []
    taken: set[str] = set()
    patient = snap.now - game.since < absent_wait_s
    for name in game.seats:
        kind = snap.kinds.get(name, "account")
        if kind in ("house", "command"):
            if snap.busy[name] >= snap.concurrency.get(name, 1):
                return None
            seats.append(Seat(kind))
            continue
        free = (t for t in snap.tickets if t.bot == name and slots[t.id] > 0)
        ticket = next((t for t in free if t.id not in taken and t.referee in snap.hosts), None)
        if ticket is not None:
            taken.add(ticket.id)
            seats.append(Seat("ticket", ticket.id, ticket.referee))
        elif snap.busy[name] > 0 or patient:
            return None  # it plays elsewhere, or may still come: wait
        else:
            seats.append(Seat("absent"))
    return seats


def _host(snap: Snapshot, seats: Sequence[Seat]) -> str:
    ready = sorted(h for h, ok in snap.hosts.items() if ok)
    held = Counter(s.referee for s in seats if s.kind == "ticket" and s.referee in ready)
    if held:
        most = max(held.values())
        return min((h for h, n in held.items() if n == most), key=lambda h: (snap.load[h], h))
    return min(ready, key=lambda h: (snap.load[h], h))
