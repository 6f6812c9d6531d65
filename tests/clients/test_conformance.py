"""``kozel conformance`` passes a good bot and fails a broken one with useful reasons."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
KOZEL = [sys.executable, "-m", "kozel.cli.main"]


def conformance(bot_cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KOZEL, "conformance", "--bot-cmd", bot_cmd, "--move-ms", "1500"],
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_the_python_sdk_house_bot_passes_every_check() -> None:
    res = conformance(
        f"{sys.executable} -m kozel.cli.main bot greedy --server {{server}} "
        "--table {table} --matches 1"
    )
    assert res.returncode == 0, res.stdout
    lines = res.stdout.splitlines()
    for name in (
        "hello",
        "lead",
        "respond",
        "declaration window",
        "longest legal list",
        "rejection and retry",
        "resume after a dropped stream",
        "deadline",
        "follows a redirect with its ticket",
        "back to the first address when the redirect target is closed",
        "the bot exits after its match",
    ):
        assert any(line.startswith(f"PASS  {name}") for line in lines), (name, res.stdout)
    assert "conformance: 11 passed, 0 failed" in res.stdout


def test_a_broken_bot_fails_with_reasons() -> None:
    res = conformance(f"{sys.executable} {HERE / 'broken_bot.py'}")
    assert res.returncode == 1
    out = res.stdout
    assert "PASS  hello" in out
    assert "FAIL  lead: legal_index" in out and "outside the" in out
    assert "FAIL  rejection and retry" in out
    assert "FAIL  resume after a dropped stream: " in out
    assert "FAIL  follows a redirect with its ticket: no stream at the Redirect's address" in out
    assert "FAIL  back to the first address when the redirect target is closed: not checked" in out
