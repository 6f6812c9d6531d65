"""Rulesets: every knob of the rules decision record, the presets, and validation."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kozel.engine.cards import CARD_OF, deck_mask


class RulesError(ValueError):
    """A ruleset or option that cannot be used; the message names the bad knob."""


class Game(StrEnum):
    PENALTY = "penalty"
    MONEY = "money"


class ShokhaInLead(StrEnum):
    WILD = "wild"
    SPADE = "spade"


class TrumpMode(StrEnum):
    TURNUP_BOTTOM = "turnup_bottom"
    RANDOM_MIDDLE = "random_middle"


class FirstLead(StrEnum):
    LEFT_OF_DEALER = "left_of_dealer"
    PREV_LAST_TRICK = "prev_last_trick"


class BeatTarget(StrEnum):
    CURRENT_WINNER = "current_winner"
    ORIGINAL_LEAD = "original_lead"


class DiscardVisibility(StrEnum):
    FACE_DOWN = "face_down"
    OPEN = "open"


class DrawMode(StrEnum):
    ROUND_ROBIN = "round_robin"
    FILL_EACH = "fill_each"


class Combos(StrEnum):
    BOTH = "both"
    MOLODKA = "molodka"
    FOUR_ACES = "four_aces"
    NONE = "none"


class SpecialEffect(StrEnum):
    AUTO_WIN = "auto_win"
    LEAD_ONLY = "lead_only"


class Eggs(StrEnum):
    NONE = "none"
    DOUBLE_NEXT = "double_next"


class Elimination(StrEnum):
    LAST_SURVIVOR = "last_survivor"
    FIRST_OUT = "first_out"


class MoneyLeads(StrEnum):
    ANY = "any"
    ONE_OR_THREE = "one_or_three"


class Scheme(StrEnum):
    GRADED = "graded"
    FLAT2 = "flat2"
    POSITIONAL = "positional"


class ZeroCriterion(StrEnum):
    NO_TRICKS = "no_tricks"
    ZERO_POINTS = "zero_points"


@dataclass(frozen=True, slots=True)
class ScoringEntry:
    """How the sides that did not come top are penalised, for one number of active players."""

    scheme: Scheme
    threshold: int = 31
    zero_criterion: ZeroCriterion = ZeroCriterion.NO_TRICKS


_CLASSIC_SCORING = {
    "2": ScoringEntry(Scheme.FLAT2, 31, ZeroCriterion.NO_TRICKS),
    "3": ScoringEntry(Scheme.POSITIONAL, 31, ZeroCriterion.NO_TRICKS),
    "4": ScoringEntry(Scheme.GRADED, 32, ZeroCriterion.ZERO_POINTS),
}


@dataclass(frozen=True, slots=True)
class Ruleset:
    """A complete, validated set of knobs. Build one with :meth:`preset`."""

    name: str = "classic"
    players_allowed: tuple[int, ...] = (2, 3, 4)
    game: Game = Game.PENALTY
    removed_cards: tuple[str, ...] = ()
    shokha: bool = True
    shokha_in_lead: ShokhaInLead = ShokhaInLead.WILD
    trump_mode: TrumpMode = TrumpMode.TURNUP_BOTTOM
    first_lead: FirstLead = FirstLead.LEFT_OF_DEALER
    lead_sizes: tuple[int, ...] = (1, 2, 3, 4)
    beat_target: BeatTarget = BeatTarget.CURRENT_WINNER
    discard_visibility: DiscardVisibility = DiscardVisibility.FACE_DOWN
    draw_mode: DrawMode = DrawMode.ROUND_ROBIN
    combos: Combos = Combos.BOTH
    special_effect: SpecialEffect = SpecialEffect.AUTO_WIN
    midtrick_interrupt: bool = False
    eggs: Eggs = Eggs.NONE
    scoring: Mapping[str, ScoringEntry] = field(default_factory=lambda: dict(_CLASSIC_SCORING))
    limit: int = 12
    elimination: Elimination = Elimination.LAST_SURVIVOR
    fixed_deals: int | None = None
    stake: int = 1
    money_leads: MoneyLeads = MoneyLeads.ANY

    # -- construction -------------------------------------------------------------------------

    @staticmethod
    def preset(name: str = "classic", options: Mapping[str, Any] | None = None) -> Ruleset:
        """The named preset with ``options`` (knob name to value) applied over it."""
        if name not in PRESETS:
            raise RulesError(f"unknown ruleset {name!r}; presets are: {', '.join(PRESETS)}")
        base = PRESETS[name]
        return base.with_options(options or {})

    def with_options(self, options: Mapping[str, Any]) -> Ruleset:
        """A copy with knobs overridden; every value is checked and coerced."""
        changes: dict[str, Any] = {}
        for key, value in options.items():
            if key not in _KNOBS:
                raise RulesError(f"unknown knob {key!r}; knobs are: {', '.join(sorted(_KNOBS))}")
            if key == "scoring":
                changes[key] = _merge_scoring(self.scoring, value)
            else:
                changes[key] = _coerce(key, value)
        if changes.get("money_leads") == MoneyLeads.ONE_OR_THREE and "lead_sizes" not in changes:
            changes["lead_sizes"] = (1, 3)
        rules = dataclasses.replace(self, **changes)
        rules._validate()
        return rules

    def _validate(self) -> None:
        if 1 not in self.lead_sizes:
            raise RulesError(f"lead_sizes {list(self.lead_sizes)} must contain 1")
        if self.limit < 1:
            raise RulesError(f"limit must be at least 1, not {self.limit}")
        if self.fixed_deals is not None and self.fixed_deals < 1:
            raise RulesError(f"fixed_deals must be at least 1, not {self.fixed_deals}")
        if self.stake < 0:
            raise RulesError(f"stake must not be negative, not {self.stake}")
        if self.game == Game.MONEY and self.fixed_deals is None:
            raise RulesError("the money game needs fixed_deals")
        if self.deck_size < 4 * max(self.players_allowed) + 1:
            raise RulesError(
                f"a deck of {self.deck_size} cards (removed_cards) is too small "
                f"for players_allowed {list(self.players_allowed)}"
            )
        if self.game == Game.PENALTY and max(self.players_allowed) > 4:
            raise RulesError(
                f"players_allowed {list(self.players_allowed)}: the penalty game "
                "(game: penalty) is scored for 2 to 4 players (scoring entries "
                "'2', '3', '4'); five play the money game only"
            )
        if self.money_leads == MoneyLeads.ONE_OR_THREE and self.lead_sizes != (1, 3):
            raise RulesError(
                f"money_leads one_or_three sets lead_sizes to [1, 3]; lead_sizes "
                f"{list(self.lead_sizes)} conflicts with it (leave lead_sizes out)"
            )

    def check_players(self, players: int) -> None:
        """Raise :class:`RulesError` unless this ruleset allows ``players`` seats."""
        if players not in self.players_allowed:
            allowed = ", ".join(map(str, self.players_allowed))
            raise RulesError(f"{self.name} is played by {allowed} players, not {players}")

    # -- derived facts ------------------------------------------------------------------------

    @property
    def deck(self) -> int:
        """The deck as a card mask."""
        return deck_mask(self.removed_cards)

    @property
    def deck_size(self) -> int:
        return self.deck.bit_count()

    @property
    def is_money(self) -> bool:
        return self.game == Game.MONEY

    def teams(self, players: int) -> bool:
        """True when seats play in two teams (four players, penalty game)."""
        return players == 4 and self.game == Game.PENALTY

    def side_of(self, players: int) -> tuple[int, ...]:
        """The side index of every seat."""
        if self.teams(players):
            return (0, 1, 0, 1)
        return tuple(range(players))

    def scoring_for(self, active_players: int) -> ScoringEntry:
        """The scoring entry for a number of active players."""
        return self.scoring[str(active_players)]

    def to_options(self) -> dict[str, Any]:
        """Every knob as plain JSON values (the inverse of :meth:`with_options`)."""
        out: dict[str, Any] = {}
        for key in _KNOBS:
            value = getattr(self, key)
            if key == "scoring":
                value = {
                    k: {
                        "scheme": str(e.scheme),
                        "threshold": e.threshold,
                        "zero_criterion": str(e.zero_criterion),
                    }
                    for k, e in sorted(value.items())
                }
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, StrEnum):
                value = str(value)
            out[key] = value
        return out


_ENUM_KNOBS: dict[str, type[StrEnum]] = {
    "game": Game,
    "shokha_in_lead": ShokhaInLead,
    "trump_mode": TrumpMode,
    "first_lead": FirstLead,
    "beat_target": BeatTarget,
    "discard_visibility": DiscardVisibility,
    "draw_mode": DrawMode,
    "combos": Combos,
    "special_effect": SpecialEffect,
    "eggs": Eggs,
    "elimination": Elimination,
    "money_leads": MoneyLeads,
}
_BOOL_KNOBS = {"shokha", "midtrick_interrupt"}
_INT_KNOBS = {"limit", "stake"}
_KNOBS = (
    set(_ENUM_KNOBS)
    | _BOOL_KNOBS
    | _INT_KNOBS
    | {"removed_cards", "lead_sizes", "scoring", "fixed_deals", "players_allowed"}
)


def _coerce(key: str, value: Any) -> Any:
    if key in _ENUM_KNOBS:
        enum = _ENUM_KNOBS[key]
        try:
            return enum(value)
        except ValueError:
            choices = ", ".join(e.value for e in enum)
            raise RulesError(f"{key} must be one of {choices}, not {value!r}") from None
    if key in _BOOL_KNOBS:
        if not isinstance(value, bool):
            raise RulesError(f"{key} must be true or false, not {value!r}")
        return value
    if key in _INT_KNOBS:
        if not isinstance(value, int) or isinstance(value, bool):
            raise RulesError(f"{key} must be a whole number, not {value!r}")
        return value
    if key == "fixed_deals":
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise RulesError(f"fixed_deals must be a whole number or null, not {value!r}")
        return value
    if key == "removed_cards":
        if not isinstance(value, (list, tuple)) or not all(isinstance(c, str) for c in value):
            raise RulesError(f"removed_cards must be a list of card codes, not {value!r}")
        bad = [c for c in value if c.upper() not in CARD_OF]
        if bad:
            raise RulesError(f"removed_cards holds unknown card codes: {', '.join(bad)}")
        return tuple(sorted({c.upper() for c in value}, key=CARD_OF.__getitem__))
    if key in ("lead_sizes", "players_allowed"):
        if (
            not isinstance(value, (list, tuple))
            or not value
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in value)
        ):
            raise RulesError(f"{key} must be a non-empty list of whole numbers, not {value!r}")
        lo, hi = (1, 4) if key == "lead_sizes" else (2, 5)
        bad = [n for n in value if not lo <= n <= hi]
        if bad:
            raise RulesError(f"{key} values must lie in {lo}..{hi}, not {bad}")
        return tuple(sorted(set(value)))
    raise AssertionError(key)  # pragma: no cover


def _merge_scoring(base: Mapping[str, ScoringEntry], value: Any) -> dict[str, ScoringEntry]:
    if not isinstance(value, Mapping):
        raise RulesError(f"scoring must map '2', '3', '4' to entries, not {value!r}")
    merged = dict(base)
    for players, entry in value.items():
        key = str(players)
        if key not in ("2", "3", "4"):
            raise RulesError(f"scoring keys are '2', '3' and '4', not {players!r}")
        if not isinstance(entry, Mapping):
            raise RulesError(f"scoring[{key!r}] must be an object, not {entry!r}")
        unknown = set(entry) - {"scheme", "threshold", "zero_criterion"}
        if unknown:
            raise RulesError(f"scoring[{key!r}] has unknown fields: {', '.join(sorted(unknown))}")
        old = merged[key]
        try:
            scheme = Scheme(entry.get("scheme", old.scheme))
            zero = ZeroCriterion(entry.get("zero_criterion", old.zero_criterion))
        except ValueError as exc:
            raise RulesError(f"scoring[{key!r}]: {exc}") from None
        threshold = entry.get("threshold", old.threshold)
        if not isinstance(threshold, int) or isinstance(threshold, bool) or threshold < 0:
            raise RulesError(f"scoring[{key!r}].threshold must be a whole number >= 0")
        merged[key] = ScoringEntry(scheme, threshold, zero)
    return merged


def _preset(name: str, **knobs: Any) -> Ruleset:
    scoring = knobs.pop("scoring", {})
    rules = dataclasses.replace(Ruleset(), name=name, **knobs)
    if scoring:
        rules = rules.with_options({"scoring": scoring})
    rules._validate()
    return rules


_GRADED_31 = {"scheme": "graded", "threshold": 31, "zero_criterion": "no_tricks"}

PRESETS: dict[str, Ruleset] = {
    "classic": _preset("classic"),
    "classic-no-shokha": _preset("classic-no-shokha", shokha=False),
    "classic-35": _preset("classic-35", players_allowed=(3,), removed_cards=("6C",)),
    "classic-no-combos": _preset("classic-no-combos", combos=Combos.NONE),
    "courtyard": _preset(
        "courtyard",
        players_allowed=(4,),
        shokha=False,
        trump_mode=TrumpMode.RANDOM_MIDDLE,
        combos=Combos.MOLODKA,
        special_effect=SpecialEffect.LEAD_ONLY,
        midtrick_interrupt=True,
        first_lead=FirstLead.PREV_LAST_TRICK,
        scoring={"4": _GRADED_31},
    ),
    "balkan": _preset(
        "balkan",
        scoring={"2": _GRADED_31, "3": {**_GRADED_31, "threshold": 21}, "4": _GRADED_31},
    ),
    "money": _preset(
        "money",
        game=Game.MONEY,
        players_allowed=(2, 3, 4, 5),
        combos=Combos.FOUR_ACES,
        fixed_deals=10,
        stake=1,
    ),
}
"""Every preset of the rules decision record, by name."""
