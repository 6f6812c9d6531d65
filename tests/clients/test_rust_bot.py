"""The Rust example bot (clients/rust) as a separate process against a real referee.

The bot is built with cargo into ~/.cache/kozel/cargo-target (outside the clone, so later runs
reuse the build). Without cargo the tests fail under CI and are skipped elsewhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.clients.botkit import (
    MATCH_TIMEOUT_S,
    Played,
    assert_clean,
    play_table,
    toolchain_missing,
)
from tests.server.conftest import RefereeProcess

BOT_DIR = Path(__file__).resolve().parents[2] / "clients" / "rust"
TARGET_DIR = Path.home() / ".cache" / "kozel" / "cargo-target"
BUILD_TIMEOUT_S = 900

# The first build downloads and compiles the crates (a few minutes); it runs in the setup of
# the first test, which pytest-timeout counts.
pytestmark = pytest.mark.timeout(BUILD_TIMEOUT_S + 2 * MATCH_TIMEOUT_S)


def _cargo() -> str | None:
    found = shutil.which("cargo")
    if found:
        return found
    rustup_default = Path.home() / ".cargo" / "bin" / "cargo"
    return str(rustup_default) if rustup_default.is_file() else None


@pytest.fixture(scope="module")
def rust_bot() -> Path:
    """The built bot's binary (cargo build, --locked to the committed Cargo.lock)."""
    cargo = _cargo()
    if cargo is None:
        toolchain_missing(
            "cargo is not installed, so the Rust example bot (clients/rust) "
            "cannot be built: install Rust (rustup, https://rustup.rs)"
        )
    env = {**os.environ, "CARGO_TARGET_DIR": str(TARGET_DIR), "CARGO_TERM_COLOR": "never"}
    try:
        build = subprocess.run(
            [cargo, "build", "--locked"],
            cwd=BOT_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"cargo build of {BOT_DIR} took over {BUILD_TIMEOUT_S} s", pytrace=False)
    if build.returncode != 0:
        pytest.fail(f"cargo build failed in {BOT_DIR}:\n{build.stderr[-6000:]}", pytrace=False)
    binary = TARGET_DIR / "debug" / "kozel-bot"
    assert binary.is_file(), f"cargo build made no {binary}"
    return binary


def _check(played: Played, names: list[str]) -> None:
    assert_clean(played, names)
    for out, err in played.outputs:
        assert f"match {played.result.match_id} ended" in out, (out, err)


def test_two_player_match_against_greedy(referee: RefereeProcess, rust_bot: Path) -> None:
    played = play_table([str(rust_bot)], referee.address, 2, ["greedy"], [["--name", "rust-a"]])
    assert [p.name for p in played.result.seating] == ["greedy-0", "rust-a"]
    _check(played, ["rust-a"])


def test_four_player_match_with_house_bots(referee: RefereeProcess, rust_bot: Path) -> None:
    played = play_table(
        [str(rust_bot)],
        referee.address,
        4,
        ["greedy", "random"],
        [["--name", "rust-b"], ["--name", "rust-c"]],
    )
    assert sorted(p.name for p in played.result.seating[2:]) == ["rust-b", "rust-c"]
    _check(played, ["rust-b", "rust-c"])


def test_bot_resumes_after_a_dropped_stream(referee: RefereeProcess, rust_bot: Path) -> None:
    played = play_table(
        [str(rust_bot)], referee.address, 2, ["greedy"], [["--name", "rust-d", "--drop-after", "3"]]
    )
    _, err = played.outputs[0]
    assert "cancelling the stream after 3 answers" in err, err
    assert "resumed" in err, err
    _check(played, ["rust-d"])
