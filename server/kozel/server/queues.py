"""Queues: one per ruleset and player count; a queued session's free slots are matched in
arrival order, as soon as enough distinct bots wait and admission allows."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable

from kozel.core.clock import Clock
from kozel.engine.rules import Ruleset
from kozel.engine.shuffle import new_seed
from kozel.server.running import MatchStart
from kozel.server.session import Session


class Queues:
    """The queues of one referee; ``start`` runs a match (spending the start budget) while
    ``admits`` allows."""

    def __init__(
        self, clock: Clock, start: Callable[[MatchStart], object], admits: Callable[[], bool]
    ) -> None:
        self.clock = clock
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
            picked: list[Session] = []
            for s in list(queue):
                if s not in picked and s.free_slots > 0:
                    picked.append(s)
                if len(picked) == players:
                    break
            if len(picked) < players:
                return
            for s in picked:
                queue.remove(s)
            links = [s.new_link() for s in picked]
            self._start(MatchStart(links, rules, players, self.clock, new_seed()))
