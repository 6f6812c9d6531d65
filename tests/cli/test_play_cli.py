"""``kozel play`` as a real process: its own referee processes, house bots seated in-process,
a command bot started per match, seats rotated, the SPRT stopping early."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

KOZEL = [sys.executable, "-m", "kozel.cli.main"]

FEWEST = """
import sys
from kozel.sdk import Bot, run_bot

class FewestCards(Bot):
    def choose(self, request):
        acts = request.legal_actions
        return min(range(len(acts)), key=lambda i: len(acts[i].cards))

run_bot(FewestCards, sys.argv[1], name=sys.argv[3], join_table=sys.argv[2])
"""


def play(tmp_path: Path, *args: str, timeout: float = 300) -> dict[str, Any]:
    res = subprocess.run(
        [*KOZEL, "play", *args, "--replay-dir", str(tmp_path / "replays"), "--json"],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout)


def test_house_against_house_in_pairs(tmp_path: Path) -> None:
    out = play(tmp_path, "--bot", "greedy", "--vs", "random", "--matches", "4")
    assert out["matches"] == 4 and out["wins"] + out["draws"] + out["losses"] == 4
    assert out["wins"] >= 3  # greedy wins 200 of 200 against random in the SDK tests
    assert sum(out["pentanomial"]) == 2  # two pairs, one seed each, sides swapped
    assert out["timeouts"] == 0 and out["forfeits"] == 0
    assert out["elo"]["value"] is None or out["elo"]["value"] > 0
    assert out["score"]["low"] <= out["score"]["value"] <= out["score"]["high"]
    assert isinstance(out["average_penalty"], float)
    luck = out["luck"]  # from the replays: the score and card points corrected for luck
    assert luck["matches"] == 4 and luck["version"] >= 1 and luck["score"]["groups"] == 2
    assert luck["deal_points"]["plain"]["value"] > 0  # greedy takes more card points
    assert luck["deal_points"]["units"] >= 4 and "multiplier" in luck["score"]
    for path in out["losses_replays"]:
        assert Path(path).exists()


def test_command_bot_rotates_seats_and_loses_replays_are_listed(tmp_path: Path) -> None:
    script = tmp_path / "fewest.py"
    script.write_text(FEWEST)
    out = play(
        tmp_path,
        "--bot",
        f"{sys.executable} {script} {{server}} {{table}} {{name}}",
        "--vs",
        "greedy",
        "--matches",
        "2",
        "--concurrency",
        "2",
    )
    assert out["matches"] == 2 and out["errors"] == []
    assert out["wins"] + out["draws"] + out["losses"] == 2
    assert len(out["losses_replays"]) == out["losses"]
    assert all(Path(p).exists() for p in out["losses_replays"])
    replays = tmp_path / "replays"
    logs = sorted((replays / "play-logs").iterdir())
    assert {p.name.split("-")[1] for p in logs} == {"seat0", "seat1"}  # the seat rotated


def test_three_players_and_four_in_teams(tmp_path: Path) -> None:
    out = play(tmp_path, "--bot", "greedy", "--vs", "random", "--players", "3", "--matches", "3")
    assert out["matches"] == 3 and out["fair_share"] == 1 / 3 and "elo" not in out
    assert out["luck"]["score"]["groups"] == 1 and "elo" not in out["luck"]  # one seed, rotated
    out = play(tmp_path, "--bot", "greedy", "--vs", "random", "--players", "4", "--matches", "2")
    assert out["teams"] is True and out["matches"] == 2 and "elo" in out
    assert out["luck"]["matches"] == 2 and "elo" in out["luck"]


def test_sprt_stops_as_soon_as_decided(tmp_path: Path) -> None:
    out = play(
        tmp_path, "--bot", "greedy", "--vs", "random", "--matches", "200", "--sprt", "0", "200"
    )
    assert out["sprt"]["result"] == "H1"
    assert out["matches"] < 200
    assert out["sprt"]["decided_llr"] >= out["sprt"]["bounds"][1]
    assert out["sprt"]["statistic"] == "results"


def test_sprt_on_the_luck_corrected_pairs(tmp_path: Path) -> None:
    args = ["--bot", "greedy", "--vs", "random", "--matches", "60", "--sprt", "0", "200"]
    out = play(tmp_path, *args, "--sprt-luck")
    assert out["sprt"]["statistic"] == "luck-corrected pairs"
    assert out["sprt"]["result"] == "H1" and out["matches"] < 60
    assert out["sprt"]["decided_llr"] >= out["sprt"]["bounds"][1]


def test_bad_flags_are_one_line(tmp_path: Path) -> None:
    for args in (
        ["--ruleset", "nope"],
        ["--players", "7"],
        ["--sprt", "5", "1"],
        ["--sprt-luck"],
        ["--players", "3", "--sprt", "0", "5"],
    ):
        res = subprocess.run(
            [*KOZEL, "play", "--bot", "greedy", *args], capture_output=True, text=True, timeout=60
        )
        assert res.returncode == 2, (args, res.stderr)
        assert res.stderr.startswith("error: ") and len(res.stderr.strip().splitlines()) == 1


def test_max_time_stops_starting_matches(tmp_path: Path) -> None:
    out = play(
        tmp_path, "--bot", "greedy", "--vs", "random", "--matches", "1000", "--max-time", "0.5"
    )
    assert 1 <= out["matches"] < 1000
    assert out["wins"] + out["draws"] + out["losses"] + out["aborted"] == out["matches"]


def test_help_reads_as_it_should() -> None:
    res = subprocess.run([*KOZEL, "play", "--help"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0
    text = " ".join(res.stdout.split())
    assert "95 % intervals" in text and "%%" not in text
    assert "'mybot.py {server} {table}'" in text  # the example works as typed
