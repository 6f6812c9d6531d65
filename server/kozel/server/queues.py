"""Queues: one per ruleset and player count; a queued session's free slots are matched in
arrival order, as soon as enough distinct bots wait and admission allows."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Mapping

from kozel.core.clock import Clock
from kozel.engine.rules import Ruleset
from kozel.engine.shuffle import new_seed
from kozel.server.running import MatchStart
from kozel.server.session import Session


class Queues:
    """The queues of one referee; ``start`` runs a match (spending the start budget) while
    ``admits`` allows."""

    def __init__(
        self,
        clock: Clock,
        start: Callable[[MatchStart], object],
        admits: Callable[[], bool],
        running_by_unit: Mapping[str, int],
        max_per_unit: int,
    ) -> None:
        self.clock = clock
        self.running_by_unit = running_by_unit  # the running matches' count, kept by them
        self.max_per_unit = max_per_unit  # limits.max_queue_matches_per_peer
        self.waiting: dict[str, deque[Session]] = {}  # by queue key, one entry per free slot
        self._rules: dict[str, tuple[Ruleset, int]] = {}
        self._start = start
        self._admits = admits

    def join(self, rules: Ruleset, players: int, session: Session) -> None:
        """Queue every free slot of ``session`` for matches of ``rules`` at ``players`` seats;
        it is queued again whenever a slot frees up, until it leaves."""
        key = json.dumps([rules.name, players, rules.to_options()], sort_keys=True)
        self._rules[key] = (rules, players)
        session.queue_in(key)
        self.requeue(session)

    def requeue(self, session: Session) -> None:
        """Queue the free slots of a session that queued (after a match, or on resume)."""
        key = session.queue_key
        if key is None:
            return
        queue = self.waiting.setdefault(key, deque())
        queue.extend([session] * (session.free_slots - queue.count(session)))
        self._drain(key)

    def forget(self, session: Session) -> None:
        """Take a session that cannot play now out of every queue."""
        for key, queue in list(self.waiting.items()):
            while session in queue:
                queue.remove(session)
            if not queue:
                del self.waiting[key]

    def drain(self) -> None:
        """Start what every queue allows now."""
        for key in list(self.waiting):
            self._drain(key)

    def _drain(self, key: str) -> None:
        rules, players = self._rules[key]
        queue = self.waiting[key]
        while self._admits():
            picked = self._pick(queue, players)
            if len(picked) < players:
                return
            for s in picked:
                queue.remove(s)
            links = [s.new_link() for s in picked]
            self._start(MatchStart(links, rules, players, self.clock, new_seed()))

    def _pick(self, queue: deque[Session], players: int) -> list[Session]:
        """The sessions of the next queue match: those whose unit plays the fewest matches
        first (queue order among equals), none whose unit already plays ``max_per_unit``. So
        one client's crowd of streams (which may never answer) cannot keep the bots of another
        waiting behind it."""
        running = self.running_by_unit
        ready: dict[Session, int] = {}  # in queue order, with their unit's running matches
        fresh = 0  # of them, those whose unit plays none: enough of them ends the search
        for s in queue:
            if (
                s in ready
                or s.free_slots <= 0
                or (n := running.get(s.unit, 0)) >= self.max_per_unit
            ):
                continue
            ready[s] = n
            fresh += n == 0
            if fresh == players:
                return [s for s, n in ready.items() if n == 0]
        return sorted(ready, key=ready.__getitem__)[:players]  # stable: queue order among equals
