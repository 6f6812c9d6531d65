"""Rulesets: the presets hold what the rules table says, and bad knobs are refused by name."""

from __future__ import annotations

from typing import Any

import pytest

from kozel.engine import PRESETS, RulesError, Ruleset
from kozel.engine.rules import (
    Combos,
    FirstLead,
    Game,
    Scheme,
    ShokhaInLead,
    SpecialEffect,
    TrumpMode,
    ZeroCriterion,
)

# -- the presets (rules.md section 12) -----------------------------------------------------------


def entry(rules: Ruleset, players: str) -> tuple[str, int, str]:
    e = rules.scoring[players]
    return str(e.scheme), e.threshold, str(e.zero_criterion)


def test_every_preset_of_the_rules_exists() -> None:
    assert set(PRESETS) == {
        "classic",
        "classic-no-shokha",
        "classic-35",
        "classic-no-combos",
        "courtyard",
        "balkan",
        "money",
    }
    for name, rules in PRESETS.items():
        assert rules.name == name
        assert Ruleset.preset(name) == rules


def test_classic() -> None:
    r = Ruleset.preset("classic")
    assert r.players_allowed == (2, 3, 4)
    assert r.game == Game.PENALTY
    assert r.shokha and r.shokha_in_lead == ShokhaInLead.WILD
    assert r.trump_mode == TrumpMode.TURNUP_BOTTOM
    assert r.combos == Combos.BOTH and r.special_effect == SpecialEffect.AUTO_WIN
    assert not r.midtrick_interrupt
    assert r.first_lead == FirstLead.LEFT_OF_DEALER
    assert str(r.eggs) == "none"
    assert r.lead_sizes == (1, 2, 3, 4)
    assert r.removed_cards == () and r.deck_size == 36
    assert r.limit == 12 and r.fixed_deals is None
    assert str(r.beat_target) == "current_winner"
    assert str(r.draw_mode) == "round_robin"
    assert str(r.discard_visibility) == "face_down"
    assert str(r.elimination) == "last_survivor"
    assert str(r.scoring["2"].scheme) == "flat2"
    assert str(r.scoring["3"].scheme) == "positional"
    assert entry(r, "4") == ("graded", 32, "zero_points")


def test_classic_variants_change_one_thing() -> None:
    classic = Ruleset.preset("classic")
    no_shokha = Ruleset.preset("classic-no-shokha")
    assert not no_shokha.shokha
    assert no_shokha.combos == Combos.BOTH
    assert no_shokha.scoring == classic.scoring and no_shokha.players_allowed == (2, 3, 4)
    c35 = Ruleset.preset("classic-35")
    assert c35.players_allowed == (3,)
    assert c35.removed_cards == ("6C",) and c35.deck_size == 35
    assert c35.scoring == classic.scoring  # "2" is used after an elimination
    no_combos = Ruleset.preset("classic-no-combos")
    assert no_combos.combos == Combos.NONE and no_combos.shokha
    assert no_combos.scoring == classic.scoring


def test_courtyard() -> None:
    r = Ruleset.preset("courtyard")
    assert r.players_allowed == (4,)
    assert not r.shokha
    assert r.trump_mode == TrumpMode.RANDOM_MIDDLE
    assert r.combos == Combos.MOLODKA and r.special_effect == SpecialEffect.LEAD_ONLY
    assert r.midtrick_interrupt
    assert r.first_lead == FirstLead.PREV_LAST_TRICK
    assert entry(r, "4") == ("graded", 31, "no_tricks")
    classic = Ruleset.preset("classic")
    assert r.scoring["2"] == classic.scoring["2"] and r.scoring["3"] == classic.scoring["3"]


def test_balkan() -> None:
    r = Ruleset.preset("balkan")
    assert r.players_allowed == (2, 3, 4) and r.shokha and r.shokha_in_lead == ShokhaInLead.WILD
    assert r.combos == Combos.BOTH and r.special_effect == SpecialEffect.AUTO_WIN
    assert entry(r, "2") == ("graded", 31, "no_tricks")
    assert entry(r, "3") == ("graded", 21, "no_tricks")
    assert entry(r, "4") == ("graded", 31, "no_tricks")


def test_money() -> None:
    r = Ruleset.preset("money")
    assert r.is_money and r.game == Game.MONEY
    assert r.players_allowed == (2, 3, 4, 5)
    assert r.shokha
    assert r.combos == Combos.FOUR_ACES and r.special_effect == SpecialEffect.AUTO_WIN
    assert r.stake == 1 and r.fixed_deals == 10
    assert str(r.money_leads) == "any" and r.lead_sizes == (1, 2, 3, 4)


def test_sides() -> None:
    classic = Ruleset.preset("classic")
    assert classic.side_of(4) == (0, 1, 0, 1) and classic.teams(4)
    assert classic.side_of(3) == (0, 1, 2) and not classic.teams(3)
    money = Ruleset.preset("money")
    assert money.side_of(4) == (0, 1, 2, 3) and not money.teams(4)


# -- options ---------------------------------------------------------------------------------------


def test_options_override_a_preset() -> None:
    r = Ruleset.preset(
        "classic",
        {
            "beat_target": "original_lead",
            "draw_mode": "fill_each",
            "eggs": "double_next",
            "midtrick_interrupt": True,
        },
    )
    assert str(r.beat_target) == "original_lead" and str(r.draw_mode) == "fill_each"
    assert str(r.eggs) == "double_next" and r.midtrick_interrupt
    assert r.name == "classic"
    assert Ruleset.preset("classic") != r


def test_scoring_override_merges_field_by_field() -> None:
    r = Ruleset.preset("classic", {"scoring": {"4": {"threshold": 40}}})
    assert entry(r, "4") == ("graded", 40, "zero_points")
    r = Ruleset.preset("classic", {"scoring": {3: {"scheme": "graded"}}})
    assert entry(r, "3") == ("graded", 31, "no_tricks")
    assert r.scoring["2"] == Ruleset.preset("classic").scoring["2"]
    r = Ruleset.preset("balkan", {"scoring": {"3": {"zero_criterion": "zero_points"}}})
    assert entry(r, "3") == ("graded", 21, "zero_points")


def test_money_leads_one_or_three_sets_the_lead_sizes() -> None:
    assert Ruleset.preset("money", {"money_leads": "one_or_three"}).lead_sizes == (1, 3)
    with pytest.raises(RulesError, match="lead_sizes"):  # a conflict, refused
        Ruleset.preset("money", {"money_leads": "one_or_three", "lead_sizes": [1, 2]})


def test_removed_cards_and_lists_are_normalised() -> None:
    r = Ruleset.preset("classic", {"removed_cards": ["7h", "6C", "6C"], "players_allowed": [3]})
    assert r.removed_cards == ("6C", "7H") and r.deck_size == 34
    assert Ruleset.preset("classic", {"lead_sizes": [3, 1, 1]}).lead_sizes == (1, 3)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_to_options_round_trips(name: str) -> None:
    rules = PRESETS[name]
    opts = rules.to_options()
    assert Ruleset.preset(name, opts) == rules
    rebuilt = Ruleset.preset("classic", opts)  # every knob, applied over another preset
    assert rebuilt.to_options() == opts


def test_check_players() -> None:
    Ruleset.preset("money").check_players(5)
    for name, players in [
        ("classic", 5),
        ("classic", 1),
        ("classic-35", 4),
        ("courtyard", 3),
        ("money", 6),
    ]:
        with pytest.raises(RulesError, match=str(players)):
            Ruleset.preset(name).check_players(players)


# -- refusals: every bad knob is named in the message ----------------------------------------------


BAD_OPTIONS: list[tuple[dict[str, Any], str]] = [
    ({"no_such_knob": 1}, "no_such_knob"),
    ({"lead_sizes": [2, 3]}, "lead_sizes"),
    ({"lead_sizes": []}, "lead_sizes"),
    ({"lead_sizes": [1, 5]}, "lead_sizes"),
    ({"lead_sizes": [1, True]}, "lead_sizes"),
    ({"lead_sizes": "1"}, "lead_sizes"),
    ({"players_allowed": [1, 2]}, "players_allowed"),
    ({"players_allowed": [6]}, "players_allowed"),
    ({"beat_target": "latest"}, "beat_target"),
    ({"trump_mode": "top"}, "trump_mode"),
    ({"combos": "all"}, "combos"),
    ({"special_effect": None}, "special_effect"),
    ({"eggs": "triple"}, "eggs"),
    ({"draw_mode": "fill"}, "draw_mode"),
    ({"shokha_in_lead": "heart"}, "shokha_in_lead"),
    ({"discard_visibility": "hidden"}, "discard_visibility"),
    ({"first_lead": "dealer"}, "first_lead"),
    ({"elimination": "never"}, "elimination"),
    ({"money_leads": "two"}, "money_leads"),
    ({"shokha": "yes"}, "shokha"),
    ({"shokha": 1}, "shokha"),
    ({"midtrick_interrupt": None}, "midtrick_interrupt"),
    ({"limit": 0}, "limit"),
    ({"limit": "12"}, "limit"),
    ({"limit": True}, "limit"),
    ({"stake": -1}, "stake"),
    ({"stake": 1.5}, "stake"),
    ({"fixed_deals": 0}, "fixed_deals"),
    ({"fixed_deals": "3"}, "fixed_deals"),
    ({"fixed_deals": False}, "fixed_deals"),
    ({"removed_cards": ["XX"]}, "removed_cards"),
    ({"removed_cards": "6C"}, "removed_cards"),
    ({"scoring": []}, "scoring"),
    ({"scoring": {"5": {"scheme": "flat2"}}}, "scoring"),
    ({"scoring": {"4": {"scheme": "harsh"}}}, "scoring"),
    ({"scoring": {"4": {"limit": 3}}}, "scoring"),
    ({"scoring": {"4": {"threshold": -1}}}, "threshold"),
    ({"scoring": {"4": {"threshold": "31"}}}, "threshold"),
    ({"scoring": {"4": {"zero_criterion": "zero"}}}, "scoring"),
    ({"scoring": {"4": "graded"}}, "scoring"),
]


@pytest.mark.parametrize(("options", "knob"), BAD_OPTIONS, ids=[k for _, k in BAD_OPTIONS])
def test_bad_options_are_refused_naming_the_knob(options: dict, knob: str) -> None:
    with pytest.raises(RulesError, match=knob):
        Ruleset.preset("classic", options)


def test_unknown_preset() -> None:
    with pytest.raises(RulesError, match="nope"):
        Ruleset.preset("nope")


def test_money_needs_fixed_deals() -> None:
    with pytest.raises(RulesError, match="fixed_deals"):
        Ruleset.preset("money", {"fixed_deals": None})


def test_a_deck_too_small_for_the_table_is_refused() -> None:
    sixteen = [r + s for r in "6789" for s in "SCDH"]  # 20 cards left, all the points
    with pytest.raises(RulesError, match="small"):
        Ruleset.preset("money", {"removed_cards": sixteen})  # five hands and a trump need 21
    # the same deck is enough for at most four players (17 cards)
    assert Ruleset.preset("classic", {"removed_cards": sixteen}).deck_size == 20


def test_refusals_leave_the_presets_alone() -> None:
    before = {name: rules.to_options() for name, rules in PRESETS.items()}
    for options, _ in BAD_OPTIONS:
        with pytest.raises(RulesError):
            Ruleset.preset("classic", options)
    assert {name: rules.to_options() for name, rules in PRESETS.items()} == before


def test_scheme_enums_cover_the_rules() -> None:
    assert {s.value for s in Scheme} == {"graded", "flat2", "positional"}
    assert {z.value for z in ZeroCriterion} == {"no_tricks", "zero_points"}
