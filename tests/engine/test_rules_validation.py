"""Ruleset validation: every combination of knobs is either refused when the ruleset is built,
with an error naming a knob, or plays to the end at every table size it allows."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kozel.engine.cards import CODES
from kozel.engine.match import Match
from kozel.engine.rules import _ENUM_KNOBS, _KNOBS, PRESETS, RulesError, Ruleset

MAX_DEALS = 400  # far more than any accepted combination below needs to end
MAX_STEPS = 200  # actions in one deal (a 36-card deal at five seats takes well under this)


def knob_values(wild: bool) -> dict[str, st.SearchStrategy]:
    """A strategy per knob: values of the right type and range, or (``wild``) also values
    outside them."""

    def enum(knob: str) -> st.SearchStrategy:
        return st.sampled_from([e.value for e in _ENUM_KNOBS[knob]] + (["bogus"] if wild else []))

    def ints(lo: int, hi: int) -> st.SearchStrategy:
        return st.integers(lo - wild, hi + wild)

    entry = st.fixed_dictionaries(
        {},
        optional={
            "scheme": st.sampled_from(
                ["graded", "flat2", "positional"] + (["other"] if wild else [])
            ),
            "threshold": ints(0, 70),
            "zero_criterion": st.sampled_from(["no_tricks", "zero_points"]),
        },
    )
    keys = ["2", "3", "4"] + (["5"] if wild else [])
    values = {
        **{k: enum(k) for k in _ENUM_KNOBS},
        "shokha": st.booleans(),
        "midtrick_interrupt": st.booleans(),
        "limit": ints(1, 24),
        "stake": ints(0, 3),
        "fixed_deals": st.one_of(st.none(), ints(1, 4)),
        "players_allowed": st.lists(ints(2, 5), min_size=1 - wild, max_size=4),
        "lead_sizes": st.lists(ints(1, 4), min_size=1 - wild, max_size=4),
        "removed_cards": st.lists(st.sampled_from(CODES), max_size=20 if wild else 8),
        "scoring": st.dictionaries(st.sampled_from(keys), entry, max_size=3),
    }
    assert set(values) == _KNOBS  # a new knob must be added here
    return values


def play_to_the_end(rules: Ruleset, players: int, seed: int) -> Match:
    """A match of random legal actions, bounded in deals and steps."""
    rng = random.Random(seed)
    match = Match(rules, players, seed)
    for _ in range(MAX_DEALS):
        if match.over:
            return match
        deal = match.deal
        for _ in range(MAX_STEPS):
            if deal.over or match.over or match.deal is not deal:
                break
            seat = rng.choice(deal.to_act)
            legal = deal.legal_actions(seat)
            assert legal, (rules.to_options(), players, seat, deal.decision)
            match.apply(seat, rng.choice(legal))
        else:
            raise AssertionError(f"a deal did not end in {MAX_STEPS} steps")
    raise AssertionError(f"the match did not end in {MAX_DEALS} deals")


def refused_or_played(preset: str, options: dict, seed: int) -> bool:
    """True when the ruleset was accepted (and every table size played to the end)."""
    try:
        rules = Ruleset.preset(preset, options)
    except RulesError as exc:
        assert any(knob in str(exc) for knob in _KNOBS), f"no knob named: {exc}"
        return False
    assert Ruleset.preset(preset, rules.to_options()) == rules  # what was accepted round-trips
    for players in rules.players_allowed:
        play_to_the_end(rules, players, seed)
    return True


@pytest.mark.parametrize("wild", [False, True], ids=["in-range", "wild"])
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), preset=st.sampled_from(sorted(PRESETS)), seed=st.integers(0, 2**32))
def test_every_knob_combination_is_refused_or_plays_to_the_end(
    wild: bool, data: st.DataObject, preset: str, seed: int
) -> None:
    options = data.draw(st.fixed_dictionaries({}, optional=knob_values(wild)), label="options")
    event("accepted" if refused_or_played(preset, options, seed) else "refused")


@pytest.mark.parametrize(
    ("preset", "options", "knobs"),
    [
        ("classic", {"players_allowed": [5]}, ["players_allowed", "game"]),
        ("classic", {"players_allowed": [2, 5]}, ["players_allowed", "game"]),
        (
            "money",
            {"money_leads": "one_or_three", "lead_sizes": [1, 2]},
            ["money_leads", "lead_sizes"],
        ),
        (
            "money",
            {"money_leads": "one_or_three", "lead_sizes": [1, 3, 4]},
            ["money_leads", "lead_sizes"],
        ),
    ],
)
def test_conflicting_knobs_are_refused_naming_them(
    preset: str, options: dict, knobs: list[str]
) -> None:
    with pytest.raises(RulesError) as err:
        Ruleset.preset(preset, options)
    for knob in knobs:
        assert knob in str(err.value)


def test_one_or_three_alone_still_sets_the_lead_sizes() -> None:
    assert Ruleset.preset("money", {"money_leads": "one_or_three"}).lead_sizes == (1, 3)
    same = Ruleset.preset("money", {"money_leads": "one_or_three", "lead_sizes": [3, 1]})
    assert same.lead_sizes == (1, 3)
    assert Ruleset.preset("money", {"players_allowed": [5]}).players_allowed == (5,)


# -- vectors -----------------------------------------------------------------------------------

SIDE = {"points": 60, "tricks": 3}


@pytest.mark.parametrize(
    ("vector", "why"),
    [
        ({"kind": "score", "players": 4, "sides": [SIDE] * 4}, "2 sides (two teams)"),
        ({"kind": "score", "players": 3, "sides": [SIDE] * 2}, "3 sides"),
        ({"kind": "score", "players": 2, "sides": [None, SIDE]}, "sides[0]"),
        ({"kind": "score", "players": 2, "sides": [{"points": 60}, SIDE]}, "sides[0]"),
        ({"kind": "match", "players": 3, "deals": [[None, SIDE, SIDE]]}, "deals[0][0]"),
        (
            {"kind": "match", "players": 2, "deals": [[SIDE, {"points": True, "tricks": 1}]]},
            "deals[0][1]",
        ),
        ({"kind": "deal", "players": 2, "deck": [], "first_leader": 1}, "first_leader"),
        (
            {
                "kind": "deal",
                "players": 2,
                "deck": [],
                "first_leader": 7,
                "options": {"first_lead": "prev_last_trick"},
            },
            "first_leader 7",
        ),
        ({"kind": "deal", "players": 5, "deck": []}, "not 5"),
    ],
)
def test_vectors_that_cannot_be_scored_are_refused(vector: dict, why: str) -> None:
    from kozel.engine.errors import SetupError
    from kozel.engine.vectors import run

    with pytest.raises(SetupError) as err:
        run({"ruleset": "classic", **vector})
    assert why in str(err.value)


def test_a_side_that_is_out_may_be_null() -> None:
    from kozel.engine.vectors import run

    out = run(
        {
            "kind": "match",
            "ruleset": "classic",
            "players": 3,
            "options": {"limit": 2},
            "deals": [
                [
                    {"points": 0, "tricks": 0},
                    {"points": 60, "tricks": 3},
                    {"points": 60, "tricks": 3},
                ],
                [None, SIDE, {"points": 10, "tricks": 1}],
            ],
        }
    )
    assert out["eliminated"] == [0, 2] and out["over"]
