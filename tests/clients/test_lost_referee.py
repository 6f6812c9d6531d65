"""Bots come back by themselves when their referee goes away (issue 28, item 5): the Python
SDK (``kozel bot``) and the four example bots, two of a kind queued against each other, over
real referee processes and no supervisor.

- **A resume refused by a referee that never knew the session**: the bots play through a TCP
  proxy standing for a shared address; their referee is stopped (SIGTERM) while the proxy
  now leads to another referee, which refuses their resume (NOT_FOUND); they must start new
  sessions there and play on.
- **A referee stopped and started again on the same port** after the bots' resume window
  (10 s): they must keep trying and play on the new referee.

Each bot is asked for many matches; the test watches the new referee's replays for a finished
match between the two, and checks that both bots are still running (neither gave up)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from kozel.server.replay.file import read_replay
from kozel.v1 import game_pb2, match_pb2, match_pb2_grpc
from tests.clients.test_go_bot import go_bot  # noqa: F401  (fixtures)
from tests.clients.test_java_bot import java_bot  # noqa: F401
from tests.clients.test_node_bot import BOT_DIR as NODE_DIR
from tests.clients.test_node_bot import node_bot  # noqa: F401
from tests.clients.test_rust_bot import rust_bot  # noqa: F401
from tests.cluster.proxy import Proxy
from tests.server.conftest import RefereeProcess, start_referee_process, stop_referee_process

pytestmark = pytest.mark.timeout(1800)  # first builds of four toolchains
PLAY_WAIT_S = 90  # for a finished match on the new referee
RESUME_WINDOW_S = 10  # how long the bots try to resume before starting over


@pytest.fixture(params=["python", "node", "go", "rust", "java"])
def bot_cmd(request: pytest.FixtureRequest) -> list[str]:
    lang = request.param
    if lang == "python":
        return [sys.executable, "-m", "kozel.cli.main", "bot", "random"]
    if lang == "node":
        return [request.getfixturevalue("node_bot"), str(NODE_DIR / "bot.js")]
    if lang == "java":
        return list(request.getfixturevalue("java_bot"))
    return [str(request.getfixturevalue(f"{lang}_bot"))]


def referee(tmp_path: Path, name: str, port: int = 0) -> RefereeProcess:
    """A referee that aborts its running matches at once on SIGTERM (no drain time)."""
    return start_referee_process(
        tmp_path / name, "--listen", f"127.0.0.1:{port}", "--drain-timeout", "0"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def bots(bot_cmd: list[str], tmp_path: Path) -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def start_bots(
    cmd: list[str], address: str, tmp_path: Path, procs: list[subprocess.Popen[str]]
) -> None:
    for name in ("back-a", "back-b"):
        log = (tmp_path / f"{name}.log").open("w")
        procs.append(
            subprocess.Popen(
                [*cmd, "--server", address, "--queue", "classic", "--players", "2"]
                + ["--name", name, "--matches", "1000"],
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )


def finished_matches(ref: RefereeProcess) -> list[str]:
    """The finished (not aborted) matches between the two bots in a referee's replays."""
    found = []
    for path in ref.replay_dir.glob("*.kzr"):
        try:
            replay = read_replay(path)
        except (OSError, ValueError):
            continue  # being written
        names = {s.name for s in replay.seats}
        if names == {"back-a", "back-b"} and (
            replay.result.reason != game_pb2.MATCH_END_REASON_ABORTED
        ):
            found.append(replay.match_id)
    return found


def wait_playing(ref: RefereeProcess, timeout: float = PLAY_WAIT_S) -> None:
    """Until the bots play a match at ``ref`` (one is running there)."""
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(ref.address) as channel:
        stub = match_pb2_grpc.MatchServiceStub(channel)
        while time.monotonic() < deadline:
            live = stub.ListLiveMatches(match_pb2.ListLiveMatchesRequest(), timeout=10)
            if any(set(m.seats) == {"back-a", "back-b"} for m in live.matches):
                return
            time.sleep(0.05)
    pytest.fail(f"the bots played no match at {ref.address} within {timeout} s")


def assert_they_play_on(
    ref: RefereeProcess, procs: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    deadline = time.monotonic() + PLAY_WAIT_S
    while not finished_matches(ref) and time.monotonic() < deadline:
        time.sleep(0.2)
    logs = "\n".join((tmp_path / f"{n}.log").read_text()[-3000:] for n in ("back-a", "back-b"))
    assert finished_matches(ref), f"no finished match on the new referee:\n{logs}"
    assert all(p.poll() is None for p in procs), f"a bot gave up:\n{logs}"


def test_a_resume_refused_by_another_referee_starts_a_new_session(
    bot_cmd: list[str], bots: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    first, second = referee(tmp_path, "first"), referee(tmp_path, "second")
    proxy = Proxy([first.address]).start()
    try:
        start_bots(bot_cmd, proxy.address, tmp_path, bots)
        wait_playing(first)
        proxy.backends = [second.address]  # the shared address now leads to the other one
        stop_referee_process(first)
        assert_they_play_on(second, bots, tmp_path)
        logs = "".join((tmp_path / f"{n}.log").read_text() for n in ("back-a", "back-b"))
        assert "refused to resume the session" in logs, logs[-3000:]
    finally:
        proxy.stop()
        stop_referee_process(first)
        stop_referee_process(second)


def test_a_referee_started_again_on_the_same_port_gets_its_bots_back(
    bot_cmd: list[str], bots: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    port = free_port()
    first = referee(tmp_path, "first", port)
    again = None
    try:
        start_bots(bot_cmd, first.address, tmp_path, bots)
        wait_playing(first)
        stop_referee_process(first)
        time.sleep(RESUME_WINDOW_S + 2)  # past the resume window: the bots must not give up
        assert all(p.poll() is None for p in bots), "a bot gave up while its referee was away"
        again = referee(tmp_path, "again", port)
        assert again.address == first.address
        assert_they_play_on(again, bots, tmp_path)
    finally:
        stop_referee_process(first)
        if again is not None:
            stop_referee_process(again)
