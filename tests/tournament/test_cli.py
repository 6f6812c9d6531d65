"""``kozel tournament`` as a user runs it: an event from flags played to its end, then read
back from its data folder (``show``, ``list``, ``replays``), a second ``run`` of the same folder
that finds the event over and plays nothing, and the errors of a bad file and a missing event."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

BOTS = "greedy,random,g2:greedy,r2:random"


def _kozel(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", "tournament", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_run_from_flags_then_read_it_back(tmp_path: Path) -> None:
    data = tmp_path / "data"
    flags = ["--format", "round_robin", "--bots", BOTS, "--options", '{"fixed_deals": 1}']
    run = _kozel("run", *flags, "--data-dir", data, "--json", "--quiet")
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    assert got["name"] == "cup" and got["done"]
    assert [b["name"] for b in got["bots"]] == ["greedy", "random", "g2", "r2"]
    (stage,) = got["stages"]
    games = [g for r in stage["rounds"] for p in r["pairings"] for g in p["games"]]
    assert len(stage["rounds"]) == 3 and len(games) == 6 * 2
    shown = _kozel("show", "cup", "--data-dir", data, "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout) == got
    text = _kozel("show", "cup", "--data-dir", data).stdout
    assert "tournament cup: over" in text and "crosstable" in text and "winners: " in text
    listed = _kozel("list", "--data-dir", data)
    assert listed.stdout.strip() == "cup: over", listed.stderr
    zipped = _kozel("replays", "cup", "-o", tmp_path / "cup.zip", "--data-dir", data)
    assert zipped.returncode == 0, zipped.stderr
    with zipfile.ZipFile(tmp_path / "cup.zip") as zf:
        kzr = sorted(n for n in zf.namelist() if n.endswith(".kzr"))
        assert json.loads(zf.read("cup/results.json"))["winners"] == got["winners"]
    assert kzr == sorted(f"cup/replays/{g['key']}-{g['match_id']}.kzr" for g in games)
    again = _kozel("run", *flags, "--data-dir", data, "--json", "--quiet")
    assert again.returncode == 0 and json.loads(again.stdout) == got, "over: nothing replayed"


def test_errors_name_what_is_wrong(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "tournaments:\n  - name: x\n    bots: [{name: a, house: greedy}, {name: b, house: greedy}]"
        "\n    stages: [{format: swiss, rounds: 3}]\n"
    )
    checked = _kozel("check", bad)
    assert checked.returncode == 2
    assert "tournaments.0.stages.0.rounds: a Swiss of 2 bots has at most 1 rounds" in checked.stderr
    missing = _kozel("show", "nope", "--data-dir", tmp_path)
    assert missing.returncode != 0 and "no store" in missing.stderr
    (tmp_path / "data").mkdir()
    run = _kozel("run", "--bots", "greedy", "--data-dir", tmp_path / "data")
    assert run.returncode == 2 and "tournaments.0.bots: Tuple should have at least 2" in run.stderr
