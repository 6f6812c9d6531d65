"""Ladder files: the shipped example loads; mistakes are reported with the key that is wrong."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

from kozel.core.clock import Clock
from kozel.ladder.config import ConfigError, load_ladders, parse_ladders

ROOT = Path(__file__).resolve().parents[2]


def test_the_example_ladder_file_loads() -> None:
    ladders = load_ladders(ROOT / "deploy" / "ladders.example.yaml")
    assert [lad.name for lad in ladders] == [
        "classic-2p",
        "classic-3p",
        "teams",
        "classic-2p-duplicate",
        "balkan-2p",
    ]
    assert ladders[0].time_control.move_ms == 2000 and ladders[4].rules().eggs == "double_next"
    assert ladders[0].repeat_cap == 20 and ladders[3].duplicate


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (
            {"ladders": [{"name": "a", "ruleset": {"preset": "classic", "options": {"limt": 3}}}]},
            ["ladders.0.ruleset", "unknown knob 'limt'"],
        ),
        ({"ladders": [{"name": "a", "players": 9}]}, ["ladders.0.players"]),
        (
            {"ladders": [{"name": "a", "time_control": {"move_ms": 1}}]},
            ["ladders.0.time_control.move_ms", "greater than or equal to 10"],
        ),
        (
            {"ladders": [{"name": "a", "time_control": {"bank_ms": 3_600_001}}]},
            ["ladders.0.time_control.bank_ms", "less than or equal to 3600000"],
        ),
        (
            {"ladders": [{"name": "a", "time_control": {"move_sm": 500}}]},
            ["ladders.0.time_control.move_sm: Extra inputs are not permitted"],
        ),
        (
            {"ladders": [{"name": "a", "time_control": 500}]},
            ["ladders.0.time_control: Input should be a dictionary"],
        ),
        ({"ladders": [{"name": "a", "colour": "red"}]}, ["ladders.0.colour", "Extra inputs"]),
        ({"ladders": [{"name": "a"}, {"name": "a"}]}, ["unique"]),
        (
            {"ladders": [{"name": "c35", "players": 2, "ruleset": {"preset": "classic-35"}}]},
            ["classic-35 is played by 3 players, not 2"],
        ),
        ({"ladders": []}, ["ladders"]),
    ],
)
def test_bad_ladder_files_name_the_key(data: dict, words: list[str]) -> None:
    with pytest.raises(ConfigError) as err:
        parse_ladders(data, "ladders.yaml")
    for w in words:
        assert w in str(err.value)


def test_a_ladder_clock_is_the_table_clock() -> None:
    """``time_control`` is :class:`kozel.core.clock.Clock`: its defaults, its values."""
    plain, quick = parse_ladders(
        {"ladders": [{"name": "a"}, {"name": "b", "time_control": {"move_ms": 500, "grace_ms": 0}}]}
    )
    assert plain.time_control == Clock()
    assert quick.time_control == Clock(move_ms=500, grace_ms=0)


def test_the_documented_clock_is_the_clock() -> None:
    """docs/referee.md lists each setting of the clock with Clock's own default and bounds."""
    doc = (ROOT / "docs" / "referee.md").read_text(encoding="utf-8")
    for f in dataclasses.fields(Clock):
        bounds = typing.get_type_hints(Clock, include_extras=True)[f.name].__metadata__[0]
        row = f"| `{f.name}` | {f.default} | {bounds.ge} to {bounds.le} |"
        assert row in doc, row


def test_serve_refuses_a_bad_ladder_file(tmp_path: Path) -> None:
    import subprocess
    import sys

    bad = tmp_path / "l.yaml"
    bad.write_text("ladders:\n  - name: x\n    players: 9\n")
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "kozel.cli.main",
            "serve",
            "--ladders",
            str(bad),
            "--listen",
            "127.0.0.1:0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and "ladders.0.players" in res.stdout
