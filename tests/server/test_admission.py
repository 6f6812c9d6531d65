"""Admission control: queue matches wait (no clock running) while the referee is at its match
limit or its event loop lags, and start as soon as it is not."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kozel.sdk import play
from kozel.sdk.house import RandomBot
from kozel.server.config import ServerConfig
from kozel.server.lobby import Lobby
from kozel.server.match_cap import MatchCap
from kozel.server.replay.file import read_replay
from kozel.server.running import MatchStart
from tests.server.served import base_config, serve


def test_queue_matches_wait_for_the_running_match_limit(tmp_path: Path) -> None:
    ref = serve(base_config(tmp_path, limits={"max_running_matches": 1}), tmp_path)

    async def four_bots() -> list:
        return await asyncio.gather(
            *(
                play(
                    RandomBot,
                    ref.addr(),
                    name=f"q{i}",
                    join_queue=("classic", 2),
                    matches=1,
                    reconnect=False,
                )
                for i in range(4)
            )
        )

    try:
        ends = [e for bot in asyncio.run(four_bots()) for e in bot]
    finally:
        assert ref.stop() == 0
    replays = sorted({e.replay_id for e in ends})
    assert len(replays) == 2  # two matches, every bot played one
    first, second = sorted(
        (read_replay(tmp_path / "data" / "replays" / f"{r}.kzr") for r in replays),
        key=lambda r: r.started_at.ToNanoseconds(),
    )
    assert second.started_at.ToNanoseconds() >= first.ended_at.ToNanoseconds()  # one at a time
    assert not any(e.result.timeouts and any(e.result.timeouts) for e in ends)


def test_a_lagging_event_loop_pauses_admission_until_it_recovers() -> None:
    lobby = Lobby(ServerConfig(admission_lag_ms=100))
    assert lobby.admits()
    lobby.observe_lag(0.02)
    assert lobby.admits()  # a single short hiccup is smoothed away
    for _ in range(5):
        lobby.observe_lag(0.5)
    assert lobby.overloaded and not lobby.admits()
    for _ in range(12):
        lobby.observe_lag(0.0)
    assert not lobby.overloaded and lobby.admits()
    off = Lobby(ServerConfig(admission_lag_ms=0))
    for _ in range(5):
        off.observe_lag(5.0)
    assert off.admits()


def test_match_starts_are_paced_by_the_start_budget() -> None:
    lobby = Lobby(ServerConfig(max_match_starts_per_s=8))  # 2 per 0.25 s sample, 8 at most
    assert lobby.admits()
    lobby.cap.starts_left = 0.5  # as if the budget were spent by starts
    assert not lobby.admits()
    lobby.observe_lag(0.0)  # a quarter second later: two more starts
    assert lobby.admits() and lobby.cap.starts_left == 2.5
    for _ in range(10):
        lobby.observe_lag(0.0)
    assert lobby.cap.starts_left == 8  # never more than a second's worth


def test_the_match_cap_grows_while_it_binds_and_drops_when_the_loop_lags() -> None:
    cap = MatchCap(max_running=40, starts_per_s=32, lag_limit_s=0.025)
    assert cap.cap == 32
    for _ in range(20):  # the cap binds and the loop keeps time: +1 per sample, up to the max
        cap.observe(0.0, 0.0, 0.25, running=cap.cap)
    assert cap.cap == 40
    for _ in range(5):  # the loop lags: 90 % of what runs
        cap.observe(0.5, 0.0, 0.25, running=40)
    assert cap.overloaded and cap.cap == 36
    for _ in range(20):
        cap.observe(0.0, 0.0, 0.25, running=0)
    assert not cap.overloaded and cap.cap == 36  # idle: no reason to grow


def test_waiting_queue_bots_start_when_a_match_under_the_cap_ends() -> None:
    """Regression: with the adaptive cap below max_running_matches, a match ending (its bots
    requeued while its task still counted as running) must still let waiting bots in."""

    class Bot:  # the parts of a Session the queue uses
        def __init__(self, name: str) -> None:
            self.name, self.free_slots, self.ladder = name, 1, None
            self.queue_key: str | None = None
            self.unit = ""

        def new_link(self):  # noqa: ANN202
            return self

        def queue_in(self, key: str) -> None:
            self.queue_key = key

    async def scenario() -> list[int]:
        lobby = Lobby(ServerConfig(admission_lag_ms=25))
        lobby.cap.cap = 1
        gates: dict[str, asyncio.Event] = {}

        def start(start: MatchStart, on_done: object = None) -> None:
            links: list[Any] = list(start.links)
            match_id, gate = f"m{len(gates)}", asyncio.Event()
            gates[match_id] = gate

            async def run() -> None:
                await gate.wait()
                for bot in links:  # like the runner's end: seats freed and requeued first
                    bot.free_slots = 1
                    lobby.requeue(bot)

            for bot in links:
                bot.free_slots = 0
            task = asyncio.get_running_loop().create_task(run())
            lobby.running.tasks[match_id] = task  # type: ignore[assignment]
            task.add_done_callback(lambda t: lobby.running._ended(match_id, t))  # type: ignore[arg-type]

        lobby.running.start = start  # type: ignore[method-assign,assignment]
        from kozel.engine import Ruleset

        for i in range(4):
            lobby.join_queue(Ruleset.preset("classic"), 2, Bot(f"b{i}"))  # type: ignore[arg-type]
        running = [len(lobby.matches)]
        gates["m0"].set()
        await asyncio.sleep(0.01)
        running.append(len(lobby.matches))
        return running + [len(gates)]

    assert asyncio.run(scenario()) == [1, 1, 2]  # the second match started after the first


def test_the_cap_never_rises_above_the_configured_limit() -> None:
    """Regression: a busy or lagging loop set the cap to its floor (4) even where
    max_running_matches was 1, and a second queue match started beside the first."""
    for lag, busy in ((0.0, 1.0), (0.5, 0.0)):
        cap = MatchCap(max_running=1, starts_per_s=32, lag_limit_s=0.025, busy_target=0.75)
        for _ in range(10):
            cap.observe(lag, busy, 0.25, running=1)
            assert cap.cap == 1 and not cap.admits(1)


def test_a_busy_event_loop_holds_the_cap_to_what_fits_before_it_lags() -> None:
    cap = MatchCap(max_running=100, starts_per_s=32, lag_limit_s=0.025, busy_target=0.75)
    for _ in range(10):  # the loop keeps time but is 95 % busy: no growth, cap to what fits
        cap.observe(0.0, 0.95, 0.25, running=32)
    assert not cap.overloaded
    assert cap.cap == int(32 * 0.75 / cap.busy) < 32
    held = cap.cap
    for _ in range(10):  # still as busy with the same matches: the cap does not ratchet down
        cap.observe(0.0, 0.95, 0.25, running=32)
    assert cap.cap == held
    for _ in range(20):  # fewer matches, less busy: the smoothed share settles
        cap.observe(0.0, 0.72, 0.25, running=held)
    held = cap.cap
    for _ in range(20):  # between 90 % of the target and the target: hold
        cap.observe(0.0, 0.72, 0.25, running=held)
    assert cap.cap == held
    for _ in range(5):  # room to spare: grow again while the cap binds
        cap.observe(0.0, 0.2, 0.25, running=cap.cap)
    assert cap.cap > held
    off = MatchCap(max_running=100, starts_per_s=32, lag_limit_s=0.025, busy_target=0)
    for _ in range(5):
        off.observe(0.0, 1.0, 0.25, running=32)
    assert off.cap > 32  # busyness ignored: only lag counts
