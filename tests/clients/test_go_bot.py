"""The Go example bot (clients/go) against a real referee process.

The bot is built once per test process into ~/.cache/kozel/go-bin (Go keeps its module and
build caches in ~/go and ~/.cache as well, outside the clone), so only the first build on a
machine is slow. Without a Go toolchain these tests skip, or fail under CI.
"""

from __future__ import annotations

import asyncio
import filecmp
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kozel.server.replay import read_replay, verify_replay
from kozel.tools.conformance import check_command
from tests.server.conftest import RefereeProcess, start_referee_process, stop_referee_process
from tests.server.rawbot import create_table, wait_table

ROOT = Path(__file__).resolve().parents[2]
GO_DIR = ROOT / "clients" / "go"
BUF = ROOT / "proto" / "node_modules" / ".bin" / "buf"
BIN_DIR = Path.home() / ".cache" / "kozel" / "go-bin"
BUILD_TIMEOUT = 900
MATCH_TIMEOUT = 120

# The first build downloads and compiles grpc-go: more than the suite's 300 s per test may be
# needed on a slow machine.
pytestmark = pytest.mark.timeout(BUILD_TIMEOUT + 2 * MATCH_TIMEOUT)


def _missing(what: str) -> None:
    """Fail under CI, where the toolchain must be there; skip elsewhere."""
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(f"{what} (CI is set, so this is an error, not a skip)", pytrace=False)
    pytest.skip(what)


def _go() -> str:
    """The go command: on PATH, or where the official archive installs it."""
    go = shutil.which("go") or shutil.which("go", path="/usr/local/go/bin")
    if go is None:
        _missing("the Go toolchain (`go`, 1.26 or newer) is not on PATH: the Go bot in "
                 "clients/go cannot be built")
    assert go is not None
    return go


def _run(cmd: list[str], *, timeout: float, cwd: Path = GO_DIR) -> subprocess.CompletedProcess:
    # buf runs the plugins as `go tool ...`, so go's folder goes on PATH.
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(_go()).parent),
                                                  os.environ.get("PATH", "")])}
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def go_bot() -> Path:
    """The built bot: `go build` into the cache folder (incremental after the first time)."""
    go = _go()
    BIN_DIR.mkdir(parents=True, exist_ok=True)
    binary = BIN_DIR / "kozel-bot"
    tmp = BIN_DIR / f"kozel-bot.{os.getpid()}.tmp"  # pytest-xdist workers may build at once
    start = time.monotonic()
    _run([go, "build", "-buildvcs=false", "-o", str(tmp), "."], timeout=BUILD_TIMEOUT)
    os.replace(tmp, binary)
    print(f"go build: {time.monotonic() - start:.1f} s")
    return binary


@pytest.fixture(scope="module")
def referee(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefereeProcess]:
    """A referee with its default clock (2 s a move, 10 s grace to resume)."""
    ref = start_referee_process(tmp_path_factory.mktemp("replays"))
    yield ref
    stop_referee_process(ref)


@dataclass
class Played:
    result: object  # WaitTableResponse
    outputs: list[str]  # each bot's stdout and stderr


def play_table(bot: Path, ref: RefereeProcess, players: int, house: list[str],
               *bot_args: list[str]) -> Played:
    """Open a classic table with ``house`` bots first, start one Go bot process per entry of
    ``bot_args`` for the other seats, and wait for the match and the bots to end."""
    table = asyncio.run(create_table(ref.address, "classic", players, house=house))
    procs = [subprocess.Popen([str(bot), "--server", ref.address, "--table", table, *args],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for args in bot_args]
    try:
        result = asyncio.run(wait_table(ref.address, table, timeout=MATCH_TIMEOUT))
        outputs = []
        for p in procs:
            out, _ = p.communicate(timeout=30)
            assert p.returncode == 0, f"the bot exited with {p.returncode}:\n{out}"
            outputs.append(out)
        return Played(result, outputs)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                print(p.communicate()[0])


def check_clean(played: Played, names: list[str]) -> None:
    """No forfeits, no refused answers from the Go bots, and the replay verifies."""
    result = played.result
    seats = {p.name: p.seat for p in result.seating}
    assert set(names) <= set(seats), (seats, played.outputs)
    assert list(result.result.forfeits) == [], (result.result, played.outputs)
    for name in names:
        assert result.result.rejections[seats[name]] == 0, (result.result, played.outputs)
    replay = read_replay(result.replay_path)
    assert replay.match_id == result.match_id
    assert verify_replay(replay) == []


def test_generated_stubs_are_current(tmp_path: Path) -> None:
    """clients/go/gen is what `go generate` (buf with the pinned Go plugins) makes today."""
    _go()
    if not BUF.exists():
        _missing(f"buf is not installed at {BUF}: run `cd proto && npm ci`")
    _run([str(BUF), "generate", "--output", str(tmp_path)], timeout=BUILD_TIMEOUT)
    fresh = tmp_path / "gen" / "kozel" / "v1"
    committed = GO_DIR / "gen" / "kozel" / "v1"
    names = sorted(p.name for p in fresh.iterdir())
    assert names == sorted(p.name for p in committed.iterdir())
    stale = [n for n in names if not filecmp.cmp(fresh / n, committed / n, shallow=False)]
    assert not stale, f"run `go generate` in clients/go: {stale} are out of date"


def test_go_vet_and_unit_tests() -> None:
    go = _go()
    _run([go, "vet", "./..."], timeout=BUILD_TIMEOUT)
    _run([go, "test", "-buildvcs=false", "./..."], timeout=BUILD_TIMEOUT)


def test_two_player_match_against_greedy(go_bot: Path, referee: RefereeProcess) -> None:
    played = play_table(go_bot, referee, 2, ["greedy"], ["--name", "go-bot"])
    check_clean(played, ["go-bot"])
    assert "ended" in played.outputs[0]


def test_four_player_match_with_house_bots(go_bot: Path, referee: RefereeProcess) -> None:
    played = play_table(go_bot, referee, 4, ["greedy", "random"],
                        ["--name", "go-east"], ["--name", "go-west"])
    check_clean(played, ["go-east", "go-west"])


def test_resumes_after_a_dropped_stream(go_bot: Path, referee: RefereeProcess) -> None:
    played = play_table(go_bot, referee, 2, ["greedy"], ["--name", "go-drop", "--drop-after", "3"])
    check_clean(played, ["go-drop"])
    out = played.outputs[0]
    assert "cancelling the stream" in out and "resumed=true" in out, out


def test_conformance_checker(go_bot: Path) -> None:
    checks, output = check_command(f"{go_bot} --server {{server}} --table {{table}}")
    failed = [c.line() for c in checks if not c.passed]
    assert not failed, f"{failed}\n{output}"
