"""``kozel vectors``, ``kozel bench engine`` and ``kozel bench core`` as real processes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from kozel.core import native as core_native
from kozel.engine import native
from kozel.engine.vectors import DEAL_KEYS
from kozel.sdk import native as sdk_native

ROOT = Path(__file__).resolve().parents[2]
KOZEL = [sys.executable, "-m", "kozel.cli.main"]
GOOD: dict[str, Any] = {
    "name": "a ten led is beaten by the ace of its suit",
    "ruleset": "classic",
    "players": 2,
    "dealer": 1,
    "deck": [
        "TS",
        "AS",
        "7C",
        "KS",
        "8D",
        "6D",
        "9H",
        "QH",
        "7H",
        "JC",
        "9C",
        "6S",
        "7S",
        "8S",
        "9S",
        "JS",
        "QS",
        "6C",
        "8C",
        "TC",
        "QC",
        "KC",
        "AC",
        "7D",
        "9D",
        "TD",
        "JD",
        "QD",
        "KD",
        "AD",
        "6H",
        "8H",
        "TH",
        "JH",
        "KH",
        "AH",
    ],
    "actions": [{"seat": 0, "lead": ["TS"]}, {"seat": 1, "beat": ["AS"]}],
    "expect": {"tricks": [{"leader": 0, "winner": 1, "points": 21}], "talon": 26},
}


def kozel(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KOZEL, *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_run_prints_every_outcome_key(tmp_path: Path) -> None:
    f = tmp_path / "v.json"
    f.write_text(json.dumps(GOOD))
    res = kozel("vectors", "run", str(f))
    assert res.returncode == 0, res.stderr
    outcome = json.loads(res.stdout)
    assert set(DEAL_KEYS) <= set(outcome)
    assert outcome["tricks"] == [{"leader": 0, "winner": 1, "points": 21}]


def test_check_passes_and_fails(tmp_path: Path) -> None:
    (tmp_path / "good.json").write_text(json.dumps(GOOD))
    bad = dict(GOOD, expect={"talon": 25})
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "bad.json").write_text(json.dumps(bad))
    res = kozel("vectors", "check", str(tmp_path / "good.json"))
    assert res.returncode == 0 and "1 passed, 0 failed" in res.stdout
    res = kozel("vectors", "check", str(tmp_path))
    assert res.returncode == 1
    assert "FAIL" in res.stdout and "talon: expected 25, got 26" in res.stdout
    assert "1 passed, 1 failed" in res.stdout


def test_setup_error_exits_2(tmp_path: Path) -> None:
    f = tmp_path / "v.json"
    f.write_text(json.dumps(dict(GOOD, deck=GOOD["deck"][:-1])))
    res = kozel("vectors", "run", str(f))
    assert res.returncode == 2
    assert "deck" in res.stderr
    f.write_text(json.dumps(dict(GOOD, ruleset="courtyard")))
    res = kozel("vectors", "run", str(f))
    assert res.returncode == 2 and "4" in res.stderr


def test_bench_engine_json_shape() -> None:
    res = kozel("bench", "engine", "--json", "--seconds", "0.2")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert set(data) == {"classic-2p", "classic-3p", "classic-4p"}
    for entry in data.values():
        assert entry["deals_per_s"] > 0 and entry["decisions_per_s"] > entry["deals_per_s"]
        assert entry["clones_per_s"] > 0
        assert 0 < entry["playouts_per_s"] < entry["clones_per_s"]  # a playout clones, then plays
        assert entry["native"] is native.wanted()  # the engine the command ran
        assert entry["playouts_native"] is sdk_native.wanted()


def test_bench_core_json_shape() -> None:
    res = kozel("bench", "core", "--json", "--matches", "1")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert set(data) == {"classic-2p", "classic-4p"}
    for entry in data.values():
        assert entry["decisions"] > 5 * 20  # five rounds of at least a deal each
        assert 0 < entry["cpu_us_per_decision"] <= entry["median_cpu_us_per_decision"]
        assert entry["native"] is native.wanted()
        assert entry["core_native"] is core_native.wanted()


def test_bench_core_refuses_no_matches() -> None:
    res = kozel("bench", "core", "--matches", "0")
    assert res.returncode == 2 and res.stderr.strip() == (
        "kozel bench core: --matches must be at least 1"
    )


def test_demo_plays_a_ladder_over_grpc(tmp_path: Path) -> None:
    res = kozel("demo", "--replay-dir", str(tmp_path / "replays"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Standings" in res.stdout and "greedy-1" in res.stdout
    out = " ".join(res.stdout.split())
    assert re.search(r"classic team \S+ & \S+ vs team \S+ & \S+: ", out)  # partners together
    assert "(limit)" not in out and "penalty limit" in out  # end reasons in words
    replays = sorted((tmp_path / "replays").glob("*.kzr"))
    assert len(replays) == 9
    for path in replays[:3]:
        assert str(path) in res.stdout.replace("\n", "")
        check = kozel("replay", "verify", str(path))
        assert check.returncode == 0, check.stdout
