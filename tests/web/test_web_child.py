"""The web child of a referee takes only the CPU time the match clocks leave over."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.web.conftest import Arena


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()]


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux only")
def test_the_web_child_runs_at_idle_priority(arena: Arena) -> None:
    web = [
        pid
        for pid in _children(arena.proc.pid)
        if b"--listen-fd" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
    assert len(web) == 1, "the referee runs one web child"
    (child,) = web
    assert os.sched_getscheduler(child) == os.SCHED_IDLE
    assert os.getpriority(os.PRIO_PROCESS, child) == 19
