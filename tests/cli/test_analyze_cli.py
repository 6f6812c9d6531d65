"""``kozel analyze`` and ``kozel replay html --analysis`` as a user runs them: the JSON of a
replay's analysis, its cache (a second run reads it), worker processes that give the same
result, the seat filter, and clear refusals (the money game, a file that is no replay, a
budget out of range)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.analysis.replays import write_small_replay

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--budget", "5", "--open-nodes", "20000"]


def kozel(*args: str, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env_cache = ["--cache-dir", str(cache)] if cache is not None else ["--no-cache"]
    return subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", *args, *env_cache],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )


def test_the_json_of_an_analysis_and_its_cache(tmp_path: Path) -> None:
    replay = write_small_replay(tmp_path, deals=1, seed=3)
    cache = tmp_path / "cache"
    first = kozel("analyze", str(replay), *FAST, "--json", cache=cache)
    assert first.returncode == 0, first.stderr
    a = json.loads(first.stdout)
    assert a["format"] == "kozel-analysis/1" and a["version"] == 1
    assert a["match_id"] == "0123456789abcdef" and a["players"] == 2
    assert a["thresholds"] == {"blunder": 20.0, "mistake": 10.0, "inaccuracy": 4.0}
    assert a["settings"] == {"budget_ms": 5, "open_nodes": 20000, "seed": 0, "seats": None}
    deal = a["deals"][0]
    assert deal["decisions"] and set(a["summary"]) == {"0", "1"}
    for d in deal["decisions"]:
        assert 0 <= d["played"] < len(d["actions"]) and d["loss"] >= 0
        assert d["label"] in ("good", "inaccuracy", "mistake", "blunder")
        assert all("open" in x for x in d["actions"])
    assert sum(s["decisions"] for s in a["summary"].values()) == len(deal["decisions"])
    files = list(cache.glob("*.json"))
    assert len(files) == 1
    # A second run is the cache's (a planted marker shows it was read, not recomputed).
    cached = json.loads(files[0].read_text())
    cached["summary"]["0"]["marker"] = "from the cache"
    files[0].write_text(json.dumps(cached))
    second = kozel("analyze", str(replay), *FAST, "--json", cache=cache)
    assert json.loads(second.stdout)["summary"]["0"]["marker"] == "from the cache"
    # Other settings are another entry.
    third = kozel("analyze", str(replay), "--budget", "6", "--open-nodes", "20000", "--json",
                  cache=cache)  # fmt: skip
    assert "marker" not in json.loads(third.stdout)["summary"]["0"]
    assert len(list(cache.glob("*.json"))) == 2


def test_worker_processes_give_the_same_result_and_the_text_names_the_seats(
    tmp_path: Path,
) -> None:
    replay = write_small_replay(tmp_path, deals=2, seed=5)
    one = kozel("analyze", str(replay), *FAST, "--json")
    two = kozel("analyze", str(replay), *FAST, "--json", "--jobs", "2")
    assert one.returncode == two.returncode == 0, two.stderr
    assert json.loads(one.stdout) == json.loads(two.stdout)
    text = kozel("analyze", str(replay), *FAST)
    assert text.returncode == 0 and "bot0" in text.stdout and "bot1" in text.stdout


def test_the_seat_filter(tmp_path: Path) -> None:
    replay = write_small_replay(tmp_path, deals=1, seed=7)
    res = kozel("analyze", str(replay), *FAST, "--seat", "1", "--json")
    a = json.loads(res.stdout)
    assert set(a["summary"]) == {"1"}
    assert {d["seat"] for d in a["deals"][0]["decisions"]} == {1}


def test_refusals_say_why(tmp_path: Path) -> None:
    money = write_small_replay(tmp_path, "money.kzr", preset="money", deals=1)
    res = kozel("analyze", str(money), *FAST)
    assert res.returncode == 1 and "money game is not analysed" in res.stdout
    junk = tmp_path / "junk.kzr"
    junk.write_bytes(b"not a replay")
    res = kozel("analyze", str(junk), *FAST)
    assert res.returncode == 2 and "cannot read the replay" in res.stderr
    res = kozel("analyze", str(money), "--budget", "0")
    assert res.returncode == 2 and "--budget must be 1 to" in res.stderr
    res = kozel("analyze", "feedbeef", "--server", "127.0.0.1:1", *FAST)
    assert res.returncode == 2 and "cannot read the replay" in res.stderr


def test_replay_html_embeds_the_analysis(tmp_path: Path) -> None:
    replay = write_small_replay(tmp_path, deals=1, seed=2)
    out = tmp_path / "m.html"
    res = subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", "replay", "html", str(replay), "-o", str(out),
         "--analysis", "--budget", "5", "--open-nodes", "20000"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
        env={"XDG_CACHE_HOME": str(tmp_path / "xdg"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    html = out.read_text()
    assert 'id="analysis-data"' in html and "kozel-analysis/1" in html
    assert "const Analysis" in html
    assert list((tmp_path / "xdg" / "kozel" / "analysis").glob("*.json"))  # cached
