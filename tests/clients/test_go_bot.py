"""The Go example bot (clients/go) against a real referee process.

The bot is built once per test process into ~/.cache/kozel/go-bin (Go keeps its module and
build caches in ~/go and ~/.cache as well, outside the clone), so only the first build on a
machine is slow. Without a Go toolchain these tests skip, or fail under CI.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from kozel.tools.conformance import CHECKS, FALLBACK, check_command
from tests.clients.botkit import MATCH_TIMEOUT_S, assert_clean, play_table, toolchain_missing
from tests.server.conftest import RefereeProcess

ROOT = Path(__file__).resolve().parents[2]
GO_DIR = ROOT / "clients" / "go"
BUF = ROOT / "proto" / "node_modules" / ".bin" / "buf"
BIN_DIR = Path.home() / ".cache" / "kozel" / "go-bin"
BUILD_TIMEOUT = 900

# The first build downloads and compiles grpc-go: more than the suite's 300 s per test may be
# needed on a slow machine.
pytestmark = pytest.mark.timeout(BUILD_TIMEOUT + 2 * MATCH_TIMEOUT_S)


def _go() -> str:
    """The go command: on PATH, or where the official archive installs it."""
    go = shutil.which("go") or shutil.which("go", path="/usr/local/go/bin")
    if go is None:
        toolchain_missing(
            "the Go toolchain (`go`, 1.26 or newer) is not on PATH: the Go bot in "
            "clients/go cannot be built"
        )
    assert go is not None
    return go


def _run(cmd: list[str], *, timeout: float, cwd: Path = GO_DIR) -> subprocess.CompletedProcess:
    # buf runs the plugins as `go tool ...`, so go's folder goes on PATH.
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(_go()).parent), os.environ.get("PATH", "")]),
    }
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


def test_generated_stubs_are_current(tmp_path: Path) -> None:
    """clients/go/gen is what `go generate` (buf with the pinned Go plugins) makes today."""
    _go()
    if not BUF.exists():
        toolchain_missing(f"buf is not installed at {BUF}: run `cd proto && npm ci`")
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
    played = play_table([str(go_bot)], referee.address, 2, ["greedy"], [["--name", "go-bot"]])
    assert_clean(played, ["go-bot"])
    assert "ended" in played.outputs[0][0] + played.outputs[0][1]


def test_four_player_match_with_house_bots(go_bot: Path, referee: RefereeProcess) -> None:
    played = play_table(
        [str(go_bot)],
        referee.address,
        4,
        ["greedy", "random"],
        [["--name", "go-east"], ["--name", "go-west"]],
    )
    assert_clean(played, ["go-east", "go-west"])


def test_resumes_after_a_dropped_stream(go_bot: Path, referee: RefereeProcess) -> None:
    played = play_table(
        [str(go_bot)], referee.address, 2, ["greedy"], [["--name", "go-drop", "--drop-after", "3"]]
    )
    assert_clean(played, ["go-drop"])
    out = played.outputs[0][0] + played.outputs[0][1]
    assert "cancelling the stream" in out and "resumed=true" in out, out


def test_conformance_checker(go_bot: Path, tmp_path: Path) -> None:
    checks, logs = check_command(
        f"{go_bot} --server {{server}} --table {{table}}", log_dir=tmp_path
    )
    failed = [c.line() for c in checks if c.status == "FAIL"]
    assert not failed, f"{failed}\n{''.join(p.read_text() for p in logs)}"
    assert [c.name for c in checks] == list(CHECKS) and FALLBACK in CHECKS
    # The example keeps no SDK report: its crashes show as its exit status.
    assert [c.name for c in checks if c.status == "SKIP"] == ["no exception in the bot's code"]
