"""Tournament files: every problem is named by its field."""

from __future__ import annotations

from pathlib import Path

import pytest

from kozel.tournament.spec import SpecError, parse_tournaments

REPO = Path(__file__).resolve().parents[2]


def _event(**fields: object) -> dict:
    base = {
        "name": "cup",
        "bots": [{"name": f"b{i}", "house": "greedy"} for i in range(6)],
        "stages": [{"format": "swiss", "rounds": 3}],
    }
    return {"tournaments": [{**base, **fields}]}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"stages": [{"format": "swiss", "rounds": 9}]}, "stages.0.rounds: a Swiss of 6 bots"),
        ({"stages": [{"format": "ladder"}]}, "stages.0: format must be one of"),
        ({"stages": [{"format": "swiss"}]}, "stages.0.rounds: Field required"),
        ({"groups": 0}, "groups: Input should be greater than or equal to 1"),
        ({"players": 4, "stages": [{"format": "knockout"}]}, "stages.0.format: a knockout"),
        (
            {"stages": [{"format": "gauntlet", "challengers": ["x"]}]},
            "stages.0.challengers: no bot",
        ),
        ({"winners": ["fame"]}, "winners: unknown winner rule 'fame'"),
        ({"time_control": {"move_ms": 1}}, "time_control.move_ms"),
        ({"forfeits": {"absent_wait": 3}}, "forfeits.absent_wait: Extra inputs"),
        ({"seed": "xyz"}, "seed: String should match pattern"),
        (
            {"stages": [{"format": "swiss", "rounds": 2}, {"format": "knockout", "top": 9}]},
            "stages.1.top: 9 is more than the 6 bots left",
        ),
        (
            {"stages": [{"format": "swiss", "rounds": 2, "tie_breaks": ["luck"]}]},
            "stages.0.tie_breaks: unknown tie-break",
        ),
    ],
)
def test_errors_name_the_field(fields: dict, expected: str) -> None:
    with pytest.raises(SpecError) as exc:
        parse_tournaments(_event(**fields), "t.yaml")
    assert f"t.yaml: tournaments.0.{expected}" in str(exc.value)


def test_a_bot_is_one_kind_and_named_safely() -> None:
    bots = [{"name": "a", "house": "greedy", "command": "x"}, {"name": "b\x1b[2J"}]
    with pytest.raises(SpecError) as exc:
        parse_tournaments(_event(bots=bots))
    text = str(exc.value)
    assert "bots.0: a bot is a house bot or a command, not both" in text
    assert "at least" not in text  # the items' errors, not the list's length
    assert "bots.1.name" in text


def test_the_example_file_is_valid() -> None:
    import yaml

    data = yaml.safe_load((REPO / "deploy" / "tournaments.example.yaml").read_text())
    events = parse_tournaments(data)
    assert {s.format for e in events for s in e.stages} == {
        "round_robin",
        "gauntlet",
        "swiss",
        "knockout",
    }
