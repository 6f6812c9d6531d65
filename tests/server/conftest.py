"""A real referee process on a loopback port, shared by the tests of a module."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from kozel.ladder.store import Store


@dataclass
class RefereeProcess:
    proc: subprocess.Popen[str]
    address: str
    replay_dir: Path


def start_referee_process(replay_dir: Path, *args: str) -> RefereeProcess:
    """Start ``kozel serve`` on a free port and wait until it listens."""
    # A data folder of its own by default (its referee id and lock live there), the same one
    # for the same replay folder, so a restarted referee is the same referee.
    data_dir = replay_dir.parent / f"{replay_dir.name}.data"
    cmd = [
        sys.executable,
        "-m",
        "kozel.cli.main",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--replay-dir",
        str(replay_dir),
        "--data-dir",
        str(data_dir),
        "--log-level",
        "WARNING",
        "--drain-timeout",
        "5",
        "--web-listen",
        "",
        *args,
    ]  # no web unless asked
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    deadline = time.monotonic() + 60
    assert proc.stdout is not None
    seen = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        m = re.search(r"listening on (\S+):(\d+)", line)
        if m:
            return RefereeProcess(proc, f"127.0.0.1:{m.group(2)}", replay_dir)
    proc.kill()
    raise RuntimeError(f"the referee did not start: {''.join(seen)}{proc.stdout.read()}")


def start_ladder_referee(
    tmp_path: Path, ladders: dict, bots: list[str]
) -> tuple[RefereeProcess, Store, list[str]]:
    """A referee serving ``ladders`` (a ladder file's content) from a fresh SQLite store in
    ``tmp_path`` with ``bots`` registered; returns it, the open store and the bots' tokens."""
    import yaml

    from kozel.ladder.store import Store

    path = tmp_path / "ladders.yaml"
    path.write_text(yaml.safe_dump(ladders))
    url = f"sqlite:///{tmp_path / 'kozel.db'}"
    store = Store(url)
    store.migrate()
    tokens = [store.register_bot(name) for name in bots]
    ref = start_referee_process(tmp_path / "replays", "--ladders", str(path), "--db", url)
    return ref, store, tokens


def stop_referee_process(ref: RefereeProcess) -> None:
    ref.proc.terminate()
    try:
        ref.proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        ref.proc.kill()


@pytest.fixture(scope="module")
def referee(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefereeProcess]:
    """A referee with a fast clock: 300 ms a move, 300 ms bank, 2 strikes, 1 s grace."""
    ref = start_referee_process(
        tmp_path_factory.mktemp("replays"),
        "--move-ms",
        "400",
        "--bank-ms",
        "400",
        "--max-strikes",
        "2",
        "--max-retries",
        "2",
        "--grace-ms",
        "1500",
        "--hello-timeout",
        "1",
    )
    yield ref
    stop_referee_process(ref)
