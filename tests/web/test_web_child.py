"""The web child of a referee takes only the CPU time the match clocks leave over, and at
most a quarter of a core."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml

from tests.web.conftest import start, stop


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()]


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux only")
def test_the_web_child_runs_at_idle_priority_by_default(tmp_path: Path) -> None:
    config = {
        "listen": "127.0.0.1:0",
        "web": {"listen": "127.0.0.1:0"},
        "storage": {"data_dir": str(tmp_path / "data")},
        "logging": {"level": "WARNING"},
    }
    path = tmp_path / "referee.yaml"
    path.write_text(yaml.safe_dump(config))
    proc, _, _ = start(
        [sys.executable, "-m", "kozel.cli.main", "serve", "--config", str(path)],
        {"web": r"web pages on (http://\S+)"},
    )
    try:
        web = [
            pid
            for pid in _children(proc.pid)
            if b"--listen-fd" in Path(f"/proc/{pid}/cmdline").read_bytes()
        ]
        assert len(web) == 1, "the referee runs one web child"
        (child,) = web
        assert os.sched_getscheduler(child) == os.SCHED_IDLE
        assert os.getpriority(os.PRIO_PROCESS, child) == 19
        argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        assert argv[argv.index(b"--cpu-share") + 1] == b"0.25"  # web.cpu_share
    finally:
        stop(proc)
