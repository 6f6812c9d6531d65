"""Command bots in a tournament, started per game as ``kozel play`` starts them: one plays
(the SDK's greedy bot as a process joining its one-game table), one exits at once (its seats
start absent at once and are forfeited by the referee's rule, and it is withdrawn), and the
event ends."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import yaml

PLAYS = (
    f"{sys.executable} -m kozel.cli.main bot greedy"
    " --server {server} --table {table} --name {name} --matches 1 --quiet"
)
CRASHES = f"{sys.executable} -c 'import sys; sys.exit(3)'"


def test_command_bots_play_or_forfeit(tmp_path: Path) -> None:
    event = {
        "name": "commands",
        "ruleset": {"preset": "classic", "options": {"fixed_deals": 1}},
        "time_control": {"move_ms": 5000, "bank_ms": 20000, "grace_ms": 300},
        "groups": 1,
        "bots": [
            {"name": "house", "house": "greedy"},
            {"name": "process", "command": PLAYS},
            {"name": "crash", "command": CRASHES},
        ],
        "forfeits": {"start_timeout_s": 60, "withdraw_after": 2},
        "stages": [{"format": "round_robin", "cycles": 2}],
    }
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump({"tournaments": [event]}))
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", "tournament", "run", str(path), "--json",
         "--quiet", "--data-dir", str(tmp_path / "data")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert time.monotonic() - started < 60, "a command that ended was not waited for"
    got = json.loads(run.stdout)
    games = [g for r in got["stages"][0]["rounds"] for p in r["pairings"] for g in p["games"]]
    assert got["done"] and len(games) == 3 * 2 * 2
    played = [g for g in games if "process" in g["seats"] and "crash" not in g["seats"]]
    assert played and all(not any(g["forfeited"]) for g in played), "the process played"
    crashed = [g for g in games if "crash" in g["seats"]]
    for g in crashed:
        seat = g["seats"].index("crash")
        assert g["forfeited"][seat] and g["points"][seat] == 0, g
    assert {g["status"] for g in crashed} == {"finished", "decided"}  # then withdrawn
    assert got["withdrawn"] == ["crash"]
    logs = list((tmp_path / "data" / "tournaments" / "commands").glob("*-process.log"))
    assert logs, "each command's output is kept"
    rows = {r["name"]: r for r in got["stages"][0]["standings"]}
    assert rows["crash"]["forfeits"] == 8 and rows["crash"]["rank"] == 3  # all its games
