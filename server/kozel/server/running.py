"""The matches a referee runs: each started from a typed :class:`MatchStart`, watched by its
spectator hub, and forgotten when it ends."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

from kozel.core.clock import Clock
from kozel.engine.rules import Ruleset
from kozel.server.config import ServerConfig
from kozel.server.replay.archive import ReplayArchive
from kozel.server.runner import FinishedMatch, MatchRunner
from kozel.server.seats import SeatLink
from kozel.server.session import RemoteLink
from kozel.server.spectators import SpectatorCount, SpectatorHub

log = structlog.get_logger("kozel.lobby")


@dataclass(frozen=True, slots=True)
class MatchStart:
    """What a match is started with (a table's, a queue's or a ladder's)."""

    links: Sequence[SeatLink]  # by seat
    rules: Ruleset
    players: int
    clock: Clock
    seed: bytes
    table_id: str = ""  # the table it is played at ("" for a queue or ladder match)
    ladder: str = ""  # the ladder it is rated on
    reveal_seed: bool = True  # False for a duplicate first half (its twin reuses the seed)
    match_id: str | None = None  # given by the cluster's scheduler; else a new one
    absent: dict[int, float] | None = None  # seats whose bot is missing: forfeit after this


OnDone = Callable[[MatchRunner], None]


class RunningMatches:
    """The running matches of one referee, by match id; ``after`` is called with each match's
    id and task when it ends (after the match's own ``on_done``)."""

    def __init__(
        self,
        config: ServerConfig,
        replays: ReplayArchive,
        after: Callable[[str, asyncio.Task[FinishedMatch]], None],
    ) -> None:
        self.config = config
        self.replays = replays
        self.tasks: dict[str, asyncio.Task[FinishedMatch]] = {}
        self.runners: dict[str, MatchRunner] = {}  # for details and spectators
        self.spectating = SpectatorCount(config.max_spectators)  # WatchMatch streams in all
        # Running matches by unit (a client address, or a ladder bot's identity: Session.unit),
        # each counted once per unit that plays in it: a unit's share of the queue is capped.
        self.by_unit: dict[str, int] = {}
        self._units_of: dict[str, tuple[str, ...]] = {}  # by match id
        self._after = after

    def __len__(self) -> int:
        return len(self.tasks)

    def start(self, start: MatchStart, on_done: OnDone | None = None) -> MatchRunner:
        """Run a match; ``on_done`` (its owner, which settles it) is called first when it ends."""
        config = self.config
        runner = MatchRunner(
            rules=start.rules,
            players=start.players,
            seed=start.seed,
            clock=start.clock,
            links=start.links,
            replays=self.replays,
            table_id=start.table_id,
            ladder=start.ladder,
            reveal_seed=start.reveal_seed,
            max_deals=config.max_match_deals,
            match_id=start.match_id,
            absent=start.absent,
        )
        runner.spectators = SpectatorHub(
            runner,
            delay_s=config.spectator_delay_s,
            max_spectators=config.max_spectators_per_match,
            total=self.spectating,
            max_per_peer=config.max_spectators_per_peer,
        )
        match_id = runner.match_id
        self.runners[match_id] = runner
        self._count_units(match_id, start.links)
        for link in start.links:
            if isinstance(link, RemoteLink):
                link.session.register(link)
        task = asyncio.get_running_loop().create_task(runner.run(), name=match_id)
        self.tasks[match_id] = task
        if on_done is not None:
            task.add_done_callback(lambda _: on_done(runner))
        task.add_done_callback(lambda t: self._ended(match_id, t))
        runner.log.info(
            "match_started",
            rules=start.rules.name,
            players=start.players,
            table=start.table_id,
            seats=[link.name for link in start.links],
        )
        return runner

    def _count_units(self, match_id: str, links: Sequence[SeatLink]) -> None:
        units = {link.session.unit for link in links if isinstance(link, RemoteLink)}
        self._units_of[match_id] = tuple(units)
        for unit in units:
            self.by_unit[unit] = self.by_unit.get(unit, 0) + 1

    def _uncount_units(self, match_id: str) -> None:
        for unit in self._units_of.pop(match_id, ()):
            if (left := self.by_unit.pop(unit) - 1) > 0:
                self.by_unit[unit] = left

    def _ended(self, match_id: str, task: asyncio.Task[FinishedMatch]) -> None:
        self.tasks.pop(match_id, None)
        self.runners.pop(match_id, None)
        self._uncount_units(match_id)
        if not task.cancelled() and task.exception() is not None:
            log.error("match_crashed", match_id=match_id, exc_info=task.exception())
        self._after(match_id, task)

    async def wait_idle(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for running matches to end; returns how many still run."""
        tasks = list(self.tasks.values())
        if tasks and timeout > 0:
            await asyncio.wait(tasks, timeout=timeout)
        return len(self.tasks)

    async def shutdown(self) -> None:
        """Abort every running match (each writes an aborted replay) and wait for them."""
        tasks = list(self.tasks.values())
        runners = list(self.runners.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # A match cancelled again while it wrote its replay still finishes that write (it is
        # shielded); wait for it, so its result is settled before the store closes.
        ending = [r.finishing for r in runners if r.finishing is not None]
        await asyncio.gather(*ending, return_exceptions=True)
        await asyncio.sleep(0)  # their done callbacks queue the store writes
