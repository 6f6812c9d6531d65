"""What the example-bot tests share: toolchain checks, running bot processes at a table, and
the checks every clean match must pass."""

from __future__ import annotations

import asyncio
import os
import subprocess
from dataclasses import dataclass, field
from typing import NoReturn

import pytest

from kozel.server.replay.file import read_replay
from kozel.server.replay.verify import verify_replay
from kozel.v1 import game_pb2, referee_pb2
from tests.server.rawbot import create_table, wait_table

MATCH_TIMEOUT_S = 120


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def toolchain_missing(message: str) -> NoReturn:
    """A missing toolchain fails under CI, where it must be installed, and skips elsewhere."""
    if in_ci():
        pytest.fail(f"{message} (CI is set, so this is an error, not a skip)", pytrace=False)
    pytest.skip(message)


@dataclass
class Played:
    """A finished table: the referee's result and each bot process's (stdout, stderr)."""

    result: referee_pb2.WaitTableResponse
    outputs: list[tuple[str, str]] = field(default_factory=list)


def play_table(
    cmd: list[str],
    address: str,
    players: int,
    house: list[str],
    bot_args: list[list[str]],
    preset: str = "classic",
) -> Played:
    """Open a table with ``house`` bots in the first seats, start ``cmd`` once per entry of
    ``bot_args`` for the other seats, and wait for the match and for every bot to exit 0."""
    table = asyncio.run(create_table(address, preset, players, house=house))
    procs = [
        subprocess.Popen(
            [*cmd, "--server", address, "--table", table, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for args in bot_args
    ]
    try:
        result = asyncio.run(wait_table(address, table, timeout=MATCH_TIMEOUT_S))
        played = Played(result)
        for proc in procs:
            try:
                out, err = proc.communicate(timeout=MATCH_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
                pytest.fail(f"a bot did not finish within {MATCH_TIMEOUT_S} s:\n{err[-4000:]}")
            assert proc.returncode == 0, f"a bot exited with {proc.returncode}:\n{out}\n{err}"
            played.outputs.append((out, err))
        return played
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


def assert_clean(played: Played, names: list[str]) -> None:
    """The match ended normally with no forfeit, no refused or timed-out answer from the named
    bots, and a replay that verifies."""
    r = played.result.result
    logs = [err for _, err in played.outputs]
    assert r.reason in (game_pb2.MATCH_END_REASON_LIMIT, game_pb2.MATCH_END_REASON_FIXED_DEALS), (
        r,
        logs,
    )
    assert list(r.forfeits) == [], (r, logs)
    seats = {p.name: p.seat for p in played.result.seating}
    for name in names:
        assert r.rejections[seats[name]] == 0, (r, logs)
        assert r.timeouts[seats[name]] == 0, (r, logs)
    replay = read_replay(played.result.replay_path)
    assert replay.match_id == played.result.match_id
    assert verify_replay(replay) == []
