"""``kozel bot`` as a real process: it says who won each match, and a queue bot started
without ``--matches`` stops on SIGTERM once its running match has ended, with a summary."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc

from kozel.v1 import match_pb2, match_pb2_grpc
from tests.server.conftest import start_referee_process, stop_referee_process

KOZEL = [sys.executable, "-m", "kozel.cli.main"]


def bot(kind: str, address: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*KOZEL, "bot", kind, "--server", address, "--queue", "classic", "--players", "2", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_live(address: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(address) as channel:
        stub = match_pb2_grpc.MatchServiceStub(channel)
        while time.monotonic() < deadline:
            if stub.ListLiveMatches(match_pb2.ListLiveMatchesRequest(), timeout=10).matches:
                return
            time.sleep(0.02)
    raise AssertionError("no match started")


def test_sigterm_lets_the_running_match_finish_then_summarizes(tmp_path: Path) -> None:
    ref = start_referee_process(tmp_path / "replays")
    greedy = bot("greedy", ref.address)
    random = bot("random", ref.address)
    try:
        wait_live(ref.address)
        greedy.send_signal(signal.SIGTERM)
        out, err = greedy.communicate(timeout=60)
        assert greedy.returncode == 0, err
        assert "stopping: running matches finish, no new one starts" in err
        played = re.findall(
            r"^match (\w+): (won|lost|drawn) \((.+)\); replay \1$", out, re.MULTILINE
        )
        assert played, out
        summary = out.strip().splitlines()[-1]
        wins = sum(1 for _, verdict, _ in played if verdict == "won")
        assert summary.startswith(f"{len(played)} match") and f"{wins} won" in summary, out
        # The match was running at the signal, or (a fast match on a loaded machine) it had
        # just ended: the Leave names it either way, as running or as ended.
        leave = re.search(r"sending Leave: no new match after the (\d+) running \((\d+) ended", err)
        assert leave and int(leave[1]) <= 1 <= int(leave[1]) + int(leave[2]), err
        assert not re.search(r"\d+ of \d+ matches done", err)
    finally:
        for proc in (greedy, random):
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
        stop_referee_process(ref)
