"""``kozel table create`` as a real process against a real referee process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kozel.tools.local import referee_process, wait_table

KOZEL = [sys.executable, "-m", "kozel.cli.main"]


@pytest.fixture(scope="module")
def referee(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with referee_process(tmp_path_factory.mktemp("replays")) as address:
        yield address


def kozel(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KOZEL, *args], capture_output=True, text=True, timeout=timeout)


def test_create_prints_a_table_a_bot_can_join(referee: str) -> None:
    res = kozel(
        "table",
        "create",
        "--ruleset",
        "classic",
        "--players",
        "2",
        "--house",
        "greedy",
        "--server",
        referee,
    )
    assert res.returncode == 0, res.stderr
    table_id = res.stdout.strip()
    assert table_id and "\n" not in table_id
    bot = kozel("bot", "random", "--server", referee, "--table", table_id, "--quiet")
    assert bot.returncode == 0, bot.stderr
    done = wait_table(referee, table_id, timeout=120)
    assert sorted(p.name for p in done.seating) == ["greedy-0", "random"]
    assert Path(done.replay_path).exists()


def test_refusals_are_one_line_and_non_zero(referee: str) -> None:
    res = kozel("table", "create", "--house", "nobody", "--server", referee)
    assert res.returncode == 1
    assert res.stderr.strip().startswith("error: INVALID_ARGUMENT") and "nobody" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    res = kozel("table", "create", "--players", "9", "--server", referee)
    assert res.returncode == 1 and len(res.stderr.strip().splitlines()) == 1


def test_no_referee_is_one_line() -> None:
    res = kozel("table", "create", "--server", "127.0.0.1:1", "--timeout", "3")
    assert res.returncode == 1
    assert res.stderr.strip() == "error: UNAVAILABLE: no referee reachable at 127.0.0.1:1"
