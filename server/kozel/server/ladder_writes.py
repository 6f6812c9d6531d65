"""A ladder's store calls, every one run in the store queue's worker thread (never on the event
loop): results committed with their replay, aborted matches recorded, replays kept in the
store, and the ratings the scheduler pairs by reloaded after them."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from kozel.engine.rules import Ruleset
from kozel.ladder.store import Store
from kozel.server import metrics
from kozel.server.recovery import commit_result
from kozel.server.replay.archive import ReplayArchive
from kozel.v1 import game_pb2 as pb

REFRESH_EVERY_S = 1.0  # the pairing ratings are read again at most this often after results


class LadderWrites:
    """The worker thread's side of one ladder. It only reads the archive and writes the store;
    the event loop reads :attr:`ratings`, which this side replaces whole (never mutates)."""

    def __init__(
        self, ladder: str, players: int, rules: Ruleset, store: Store, replays: ReplayArchive
    ) -> None:
        self.ladder = ladder
        self.players = players
        self.rules = rules
        self.store = store
        self.replays = replays
        self.ratings: dict[str, float] = {}  # bot name -> ordinal, refreshed after commits
        self._refreshed_at = -REFRESH_EVERY_S

    def stored_replay(self, match_id: str) -> bytes | None:
        """The replay's bytes for a store that keeps replays (not a sealed first half's: that
        one is kept once its twin has ended)."""
        if not self.store.keeps_replays or self.replays.sealed(match_id):
            return None
        return self.replays.read_bytes(match_id)

    def publish_replay(self, match_id: str) -> None:
        """Keep an unsealed first half's replay in the store."""
        data = self.replays.read_bytes(match_id)
        if data is not None:
            self.store.keep_replay(match_id, data)

    def aborted(self, match_id: str, location: str) -> None:
        """Record an aborted match (no rating change)."""
        self.store.abort_match(match_id, "aborted", location, self.stored_replay(match_id))

    def rated(
        self,
        match_id: str,
        result: pb.MatchResult,
        location: str,
        bots: list[int],
        twin: Callable[..., None] | None = None,
        ended_at: datetime | None = None,
    ) -> None:
        """Commit a result (with the replay, for a store that keeps them), then refresh the
        ratings."""
        commit_result(
            self.store,
            match_id,
            result,
            location,
            self.rules,
            self.players,
            bots,
            replay=self.stored_replay(match_id),
            after=twin,
            ended_at=ended_at,
            ladder=self.ladder,
        )
        metrics.RATING_UPDATES.labels(self.ladder).inc()
        self.refresh_after(lambda: None, every_s=REFRESH_EVERY_S)

    def refresh_after(
        self, call: Callable[..., object], *args: object, every_s: float = 0.0
    ) -> None:
        """Make a store call, then reload the ratings (after a result, at most every
        ``every_s``: under load the store's write queue is the bottleneck, and pairing needs
        ratings near, not exact)."""
        call(*args)
        now = time.monotonic()
        if now - self._refreshed_at >= every_s:
            self._refreshed_at = now
            self.ratings = {s.name: s.ordinal for s in self.store.standings(self.ladder)}
