"""The Rust example bot (clients/rust) as a separate process against a real referee.

The bot is built with cargo into ~/.cache/kozel/cargo-target (outside the clone, so later runs
reuse the build). Without cargo the tests fail under CI and are skipped elsewhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from kozel.server.replay import read_replay, verify_replay
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc
from tests.server.conftest import RefereeProcess, start_referee_process, stop_referee_process

BOT_DIR = Path(__file__).resolve().parents[2] / "clients" / "rust"
TARGET_DIR = Path.home() / ".cache" / "kozel" / "cargo-target"
BUILD_TIMEOUT_S = 900
MATCH_TIMEOUT_S = 120

# The first build downloads and compiles the crates (a few minutes); it runs in the setup of
# the first test, which pytest-timeout counts.
pytestmark = pytest.mark.timeout(BUILD_TIMEOUT_S + 2 * MATCH_TIMEOUT_S)


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


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
        message = ("cargo is not installed, so the Rust example bot (clients/rust) cannot be "
                   "built: install Rust (rustup, https://rustup.rs) to run these tests")
        if _in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    env = {**os.environ, "CARGO_TARGET_DIR": str(TARGET_DIR), "CARGO_TERM_COLOR": "never"}
    try:
        build = subprocess.run([cargo, "build", "--locked"], cwd=BOT_DIR, env=env,
                               capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"cargo build of {BOT_DIR} took over {BUILD_TIMEOUT_S} s", pytrace=False)
    if build.returncode != 0:
        pytest.fail(f"cargo build failed in {BOT_DIR}:\n{build.stderr[-6000:]}", pytrace=False)
    binary = TARGET_DIR / "debug" / "kozel-bot"
    assert binary.is_file(), f"cargo build made no {binary}"
    return binary


@pytest.fixture(scope="module")
def referee(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefereeProcess]:
    """A referee with the default clock (2 s a move, 10 s bank, 10 s grace)."""
    ref = start_referee_process(tmp_path_factory.mktemp("replays"))
    yield ref
    stop_referee_process(ref)


def play_table(ref: RefereeProcess, binary: Path, players: int, house: list[str],
               bots: list[list[str]]) -> tuple[rpb.WaitTableResponse, list[tuple[str, str]]]:
    """Open a classic table with ``house`` bots, run one bot process per argument list in
    ``bots`` at it, and return the table's result and each process's (stdout, stderr)."""
    with grpc.insecure_channel(ref.address) as channel:
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        table = stub.CreateTable(rpb.CreateTableRequest(
            ruleset=pb.Ruleset(preset="classic"), players=players, house_bots=house),
            timeout=10).table_id
        procs = [subprocess.Popen([str(binary), "--server", ref.address, "--table", table, *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for args in bots]
        outputs = []
        try:
            for proc in procs:
                try:
                    out, err = proc.communicate(timeout=MATCH_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    out, err = proc.communicate()
                    pytest.fail(f"the bot did not finish in {MATCH_TIMEOUT_S} s:\n{err[-4000:]}")
                assert proc.returncode == 0, f"the bot exited with {proc.returncode}:\n{err}"
                outputs.append((out, err))
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        result = stub.WaitTable(rpb.WaitTableRequest(table_id=table), timeout=MATCH_TIMEOUT_S)
    return result, outputs


def check_clean_match(result: rpb.WaitTableResponse, names: list[str],
                      outputs: list[tuple[str, str]]) -> None:
    """The match ended normally, no forfeit, no refused or timed-out answer from the bots, a
    replay that verifies, and each bot reported the match's end."""
    assert result.result.reason in (pb.MATCH_END_REASON_LIMIT, pb.MATCH_END_REASON_FIXED_DEALS)
    assert not result.result.forfeits, result.result.forfeits
    seats = {p.name: p.seat for p in result.seating}
    for name, (out, err) in zip(names, outputs, strict=True):
        seat = seats[name]
        assert result.result.rejections[seat] == 0, err
        assert result.result.timeouts[seat] == 0, err
        assert f"match {result.match_id} ended" in out, (out, err)
    replay = read_replay(result.replay_path)
    assert verify_replay(replay) == []
    assert replay.match_id == result.match_id


def test_two_player_match_against_greedy(referee: RefereeProcess, rust_bot: Path) -> None:
    result, outputs = play_table(referee, rust_bot, 2, ["greedy"], [["--name", "rust-a"]])
    assert [p.name for p in result.seating] == ["greedy-0", "rust-a"]
    check_clean_match(result, ["rust-a"], outputs)


def test_four_player_match_with_house_bots(referee: RefereeProcess, rust_bot: Path) -> None:
    result, outputs = play_table(referee, rust_bot, 4, ["greedy", "random"],
                                 [["--name", "rust-b"], ["--name", "rust-c"]])
    assert sorted(p.name for p in result.seating[2:]) == ["rust-b", "rust-c"]
    check_clean_match(result, ["rust-b", "rust-c"], outputs)


def test_bot_resumes_after_a_dropped_stream(referee: RefereeProcess, rust_bot: Path) -> None:
    result, outputs = play_table(referee, rust_bot, 2, ["greedy"],
                                 [["--name", "rust-d", "--drop-after", "3"]])
    _, err = outputs[0]
    assert "cancelling the stream after 3 answers" in err, err
    assert "resumed" in err, err
    check_clean_match(result, ["rust-d"], outputs)
