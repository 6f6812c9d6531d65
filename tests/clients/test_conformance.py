"""``kozel conformance`` passes a good bot and names every failure of a bad one: each check
is listed, run or skipped with the reason, and the bot's output is in a log it names."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kozel.tools.conformance import CHECKS

HERE = Path(__file__).resolve().parent
KOZEL = [sys.executable, "-m", "kozel.cli.main"]
BOT = HERE / "misbehaving_bot.py"
DOC = HERE.parents[1] / "docs" / "bots.md"


def conformance(bot_cmd: str, log_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KOZEL, "conformance", "--bot-cmd", bot_cmd, "--move-ms", "1500"]
        + ["--log-dir", str(log_dir)],
        capture_output=True,
        text=True,
        timeout=180,
    )


def lines_of(res: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """Each check's line by name; every check is listed once, in order."""
    found = {}
    for line in res.stdout.splitlines():
        m = re.match(r"(PASS|FAIL|SKIP)  ([^:]+)", line)
        if m:
            found[m.group(2)] = line
    assert list(found) == list(CHECKS), res.stdout
    return found


def test_the_python_sdk_house_bot_passes_every_check(tmp_path: Path) -> None:
    res = conformance(
        f"{sys.executable} -m kozel.cli.main bot greedy --server {{server}} "
        "--table {table} --matches 1",
        tmp_path,
    )
    assert res.returncode == 0, res.stdout
    found = lines_of(res)
    assert all(line.startswith("PASS") for line in found.values()), res.stdout
    assert re.search(r"whole deals: \d+ deals, (\d+) decisions \(.*lead \d+.*respond", res.stdout)
    decisions = int(re.search(r"(\d+) decisions", res.stdout).group(1))  # type: ignore[union-attr]
    assert decisions >= 40
    assert f"conformance: {len(CHECKS)} passed, 0 failed, 0 skipped of {len(CHECKS)}" in res.stdout
    assert f"bot output: {tmp_path / 'run1.log'}" in res.stdout


def test_a_broken_bot_fails_with_reasons(tmp_path: Path) -> None:
    res = conformance(f"{sys.executable} {HERE / 'broken_bot.py'}", tmp_path)
    assert res.returncode == 1
    found = lines_of(res)
    assert found["hello"].startswith("PASS")
    assert "FAIL  lead: legal_index" in found["lead"] and "outside the" in found["lead"]
    assert found["rejection and retry"].startswith("FAIL")
    assert found["resume after a dropped stream"].startswith("FAIL  resume after a dropped")
    assert found["whole deals"].startswith("SKIP  whole deals: not run: ")
    assert "no stream at the Redirect's address" in found["follows a redirect with its ticket"]
    assert "not run" in found["back to the first address when the redirect target is closed"]
    assert found["no exception in the bot's code"].startswith("SKIP")  # no SDK report


@pytest.mark.parametrize(
    ("mode", "failed", "why"),
    [
        ("raises", "respond", "its process ended (exit status 1)"),
        ("crash-at-3", "declaration window", "its process ended (exit status 3)"),
        ("crash-at-15", "whole deals", "its process ended (exit status 3)"),
        ("cannot-start", "hello", "the bot did not connect: its process ended (exit status 1)"),
        ("slow", "lead", "answered in 3"),
        ("illegal", "lead", "the action is refused: "),
    ],
)
def test_a_misbehaving_bot_fails_where_it_misbehaved(
    tmp_path: Path, mode: str, failed: str, why: str
) -> None:
    res = conformance(f"{BOT} {mode} {{server}} {{table}}", tmp_path)
    assert res.returncode == 1, res.stdout
    found = lines_of(res)
    assert found[failed].startswith(f"FAIL  {failed}: ") and why in found[failed], res.stdout
    exits = found["the bot exits after its match"]
    if mode in ("raises", "crash-at-3", "crash-at-15", "cannot-start"):
        status = "exit status 1" if mode in ("raises", "cannot-start") else "exit status 3"
        assert exits.startswith("FAIL") and f"run 1: {status} (log {tmp_path}" in exits
        later = list(CHECKS)[list(CHECKS).index(failed) + 1 : CHECKS.index("deadline") + 1]
        assert all(found[name].startswith("SKIP") for name in later), res.stdout
    if mode == "raises":
        raised = found["no exception in the bot's code"]
        assert raised.startswith("FAIL") and "1 raised, the first: choose: ZeroDivision" in raised
    if mode == "slow":
        assert found["deadline"].startswith("FAIL  deadline: slowest answer 3")
        assert found["resume after a dropped stream"].startswith("PASS"), res.stdout
        assert found["whole deals"].startswith("SKIP")
    assert (tmp_path / "run1.log").exists() and f"bot output: {tmp_path}" in res.stdout


def test_a_bot_printing_megabytes_to_stdout_passes(tmp_path: Path) -> None:
    """Its output goes to a log file, not a pipe that nobody reads until the end."""
    res = conformance(f"{BOT} stdout {{server}} {{table}}", tmp_path)
    assert res.returncode == 0, res.stdout
    assert (tmp_path / "run1.log").stat().st_size > 40 * 65536


def test_the_docs_list_the_checks_the_checker_runs() -> None:
    text = DOC.read_text()
    section = text[text.index("## 6. Checking a bot") : text.index("## 7.")]
    listed = re.findall(r"^\d+\. \*\*([^*]+)\*\*", section, re.MULTILINE)
    assert listed == list(CHECKS)
    assert f"{len(CHECKS)} checks" in section
