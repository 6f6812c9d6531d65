"""A Swiss of sixteen house bots at different think budgets over five rounds, played by a real
referee process through ``kozel tournament run``: no pairing repeats, every bot plays every
seat of every seed and opens about half its pairings, and the standings follow the documented
tie-breaks (recomputed here from the pairings' results)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import yaml

TIE_BREAKS = ["buchholz_cut1", "buchholz", "sonneborn_berger", "wins"]


def _bots() -> list[dict]:
    bots = [{"name": f"ismcts-{ms}ms", "house": "ismcts", "budget_ms": ms} for ms in range(1, 13)]
    bots += [{"name": "greedy-a", "house": "greedy"}, {"name": "greedy-b", "house": "greedy"}]
    bots += [{"name": "random-a", "house": "random"}, {"name": "random-b", "house": "random"}]
    return bots


def test_swiss_of_sixteen(tmp_path: Path) -> None:
    event = {
        "name": "swiss16",
        "ruleset": {"preset": "classic", "options": {"fixed_deals": 1}},
        "time_control": {"move_ms": 2000, "bank_ms": 10000, "grace_ms": 2000},
        "groups": 1,
        "max_concurrent_games": 16,
        "bots": _bots(),
        "stages": [{"format": "swiss", "rounds": 5, "tie_breaks": TIE_BREAKS}],
        "winners": ["standings", "total_score", "instant_runoff"],
    }
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump({"tournaments": [event]}))
    run = subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", "tournament", "run", str(path), "--json",
         "--quiet", "--data-dir", str(tmp_path / "data")],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    assert got["done"] and got["seed"] and len(got["seed"]) == 64
    (stage,) = got["stages"]
    assert len(stage["rounds"]) == 5
    met: Counter[frozenset[str]] = Counter()
    opened: Counter[str] = Counter()
    seats: Counter[tuple[str, int]] = Counter()
    for rnd in stage["rounds"]:
        assert len(rnd["pairings"]) == 8 and not rnd["byes"]
        for p in rnd["pairings"]:
            met[frozenset(p["order"])] += 1
            opened[p["order"][0]] += 1
            for g in p["games"]:
                assert g["status"] == "finished" and g["match_id"]
                seats.update((name, s) for s, name in enumerate(g["seats"]))
    assert max(met.values()) == 1, "a pairing was repeated"
    names = [b["name"] for b in _bots()]
    for name in names:
        assert seats[name, 0] == seats[name, 1] == 5, "every seed at both seats"
        assert abs(2 * opened[name] - 5) <= 3, f"{name} opened {opened[name]} of 5"
    first = stage["rounds"][0]["pairings"]
    assert {frozenset(p["order"]) for p in first} == {
        frozenset((names[i], names[i + 8])) for i in range(8)
    }, "round one pairs the top half of the seeding against the bottom half"
    _check_tie_breaks(stage)
    assert set(got["winners"]) == {"standings", "total_score", "instant_runoff"}
    assert got["winners"]["standings"] == stage["standings"][0]["name"]
    cells = got["crosstable"]["cells"]
    for a, b in met:
        cell = cells[min(a, b)][max(a, b)]
        assert cell["games"] == 2 and 0 <= cell["low"] <= cell["high"] <= 1
        assert 0 < cell["p_beats"] < 1


def _check_tie_breaks(stage: dict) -> None:
    """Recompute score, Buchholz (cut one), Sonneborn-Berger and wins from the pairings, and
    check the standings are in that order (then the seed)."""
    score: Counter[str] = Counter()
    wins: Counter[str] = Counter()
    opponents: dict[str, list[tuple[str, float]]] = {}
    for rnd in stage["rounds"]:
        for p in rnd["pairings"]:
            for a, b in itertools.permutations(p["order"], 2):
                pts = p["points"][a]
                score[a] += pts / 1  # one opponent: the pairing's points
                wins[a] += pts == 1.0
                opponents.setdefault(a, []).append((b, pts))
    rows = {r["name"]: r for r in stage["standings"]}
    for name, row in rows.items():
        opp = sorted(score[o] for o, _ in opponents[name])
        assert row["score"] == score[name]
        assert row["tie_breaks"]["buchholz"] == sum(opp)
        assert row["tie_breaks"]["buchholz_cut1"] == sum(opp[1:])
        assert row["tie_breaks"]["sonneborn_berger"] == sum(
            p * score[o] for o, p in opponents[name]
        )
        assert row["tie_breaks"]["wins"] == wins[name]
    order = [r["name"] for r in stage["standings"]]
    keyed = sorted(
        order,
        key=lambda n: (
            -rows[n]["score"],
            *(-rows[n]["tie_breaks"][t] for t in TIE_BREAKS),
            rows[n]["seed"],
        ),
    )
    assert order == keyed
