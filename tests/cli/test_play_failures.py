"""``kozel play`` names every failure of a bot: a misbehaving SDK bot (tests/clients/
misbehaving_bot.py, run as a bare ``.py`` command with the project's Python) plays two
matches against ``greedy``, and the JSON report must name the failure, count it, and point
at the log (named by match id) and the replay of the first match where it happened."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

KOZEL = [sys.executable, "-m", "kozel.cli.main"]
BOT = Path(__file__).resolve().parents[1] / "clients" / "misbehaving_bot.py"


def play(tmp_path: Path, mode: str, *extra: str) -> tuple[int, dict[str, Any], str]:
    res = subprocess.run(
        [
            *KOZEL,
            "play",
            "--bot",
            f"{BOT} {mode} {{server}} {{table}}",
            "--vs",
            "greedy",
            "--matches",
            "2",
            "--replay-dir",
            str(tmp_path / "replays"),
            "--json",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    return res.returncode, json.loads(res.stdout), res.stderr


def failure(out: dict[str, Any], kind: str) -> dict[str, Any]:
    """The bot's failure of ``kind``, after checking that its first match's files exist and
    that its log is named by that match's id."""
    f = out["failures"]["bot"][kind]
    first = f["first"]
    log, replay = Path(first["log"]), Path(first["replay"])
    assert log.is_absolute() and log.exists(), first
    assert log.name.startswith(first["match_id"] + "-seat"), first
    assert replay.is_absolute() and replay.exists() and replay.stem == first["match_id"]
    return f


def quiet(out: dict[str, Any], *kinds: str) -> None:
    for kind in kinds:
        assert out["failures"]["bot"][kind]["count"] == 0, (kind, out["failures"])
    assert all(v["count"] == 0 for v in out["failures"]["vs"].values()), out["failures"]


def test_an_exception_in_choose_is_counted_with_its_line_and_ends_the_bot(tmp_path: Path) -> None:
    code, out, err = play(tmp_path, "raises")
    assert code == 0, err
    raised = failure(out, "exceptions")
    assert raised["count"] == 2 and raised["matches"] == 2  # strict: one per match, then exit
    assert raised["first"]["detail"].startswith("choose: ZeroDivisionError")
    assert "misbehaving_bot.py, line" in raised["first"]["detail"]
    assert "ZeroDivisionError" in Path(raised["first"]["log"]).read_text()
    assert failure(out, "exits")["by"] == {"exit status 1": 2}
    assert failure(out, "forfeits")["by"] == {"disconnected": 2}
    assert out["losses"] == 2


def test_refused_answers_are_counted_with_the_first_code_and_sentence(tmp_path: Path) -> None:
    code, out, err = play(tmp_path, "illegal")
    assert code == 0, err
    refused = failure(out, "refusals")
    assert refused["count"] > 2 and refused["matches"] == 2
    assert refused["first"]["detail"].startswith("ERROR_CODE_")
    quiet(out, "forfeits", "exceptions", "exits")


@pytest.mark.parametrize("at", [3, 15])
def test_a_crash_is_an_exit_status_and_a_forfeit(tmp_path: Path, at: int) -> None:
    code, out, err = play(tmp_path, f"crash-at-{at}")
    assert code == 0, err
    assert failure(out, "exits")["by"] == {"exit status 3": 2}
    assert failure(out, "forfeits")["by"] == {"disconnected": 2}
    quiet(out, "exceptions", "refusals")


def test_a_bot_that_cannot_start_stops_the_run_at_once(tmp_path: Path) -> None:
    code, out, err = play(tmp_path, "cannot-start")
    assert code == 1
    stopped = out["stopped"]
    assert stopped["exit"] == "exit status 1" and stopped["role"] == "bot"
    assert Path(stopped["log"]).exists()
    assert "ModuleNotFoundError: No module named 'kozel_no_such_module'" in stopped["last_lines"]
    assert out["matches"] == 0
    lines = err.strip().splitlines()
    assert any(ln.startswith("error: the bot could not start: ") for ln in lines), err
    assert f"its log: {stopped['log']}, last lines:" in lines, err


def test_timeouts_of_a_slow_bot(tmp_path: Path) -> None:
    code, out, err = play(tmp_path, "slow", "--move-ms", "500", "--bank-ms", "1")
    assert code == 0, err
    slow = failure(out, "timeouts")
    assert slow["count"] >= 2 and slow["matches"] == 2
    assert slow["count"] == out["timeouts"]
    quiet(out, "exceptions", "refusals", "exits")


def test_a_bot_printing_to_stdout_is_fine_and_its_output_is_in_its_log(tmp_path: Path) -> None:
    code, out, err = play(tmp_path, "stdout")
    assert code == 0, err
    quiet(out, *out["failures"]["bot"])
    logs = list((tmp_path / "replays" / "play-logs").glob("*-seat*-bot.log"))
    assert len(logs) == 2 and all(log.stat().st_size > 65536 for log in logs)
    assert not list((tmp_path / "replays" / "play-logs").glob("*.report.jsonl"))


def test_the_table_prints_whole_paths_in_a_pipe(tmp_path: Path) -> None:
    """Without --json and through a pipe (80 columns), every path is printed whole."""
    res = subprocess.run(
        [
            *KOZEL,
            "play",
            "--bot",
            f"{BOT} illegal {{server}} {{table}}",
            "--matches",
            "2",
            "--replay-dir",
            str(tmp_path / "a-rather-long-folder-name-for-the-replays-of-this-test"),
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert res.returncode == 0, res.stderr
    out = res.stdout
    paths = [ln.split(": ", 1)[1] for ln in out.splitlines() if "first log:" in ln]
    assert paths and all(Path(p.strip()).exists() for p in paths), out
    assert "refused answers: " in out and "first: ERROR_CODE_" in out
    assert "95 %%" not in out


def test_a_program_that_does_not_exist_stops_the_run_too(tmp_path: Path) -> None:
    res = subprocess.run(
        [*KOZEL, "play", "--bot", "no-such-program-here {server} {table}", "--json"]
        + ["--matches", "2", "--replay-dir", str(tmp_path / "replays")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 1
    stopped = json.loads(res.stdout)["stopped"]
    assert stopped["exit"] == "could not be run"
    assert "No such file or directory: 'no-such-program-here'" in stopped["last_lines"][-1]


def test_exit_statuses_and_signals_read_as_words() -> None:
    from kozel.tools.play_diag import exit_text

    assert (exit_text(0), exit_text(3), exit_text(-9)) == ("", "exit status 3", "signal SIGKILL")
