"""Ladder definitions from a YAML file, validated with clear messages that name the bad key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails

from kozel.core.clock import Clock
from kozel.engine.rules import RulesError, Ruleset


class ConfigError(ValueError):
    """A ladder file that cannot be used; the message names the key and what is wrong."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RulesetSpec(_Strict):
    preset: str = "classic"
    options: dict[str, Any] = Field(default_factory=dict)


class LadderSpec(_Strict):
    """One ladder: what is played, how fast, and how pairings are made."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")
    ruleset: RulesetSpec = Field(default_factory=RulesetSpec)
    players: int = Field(2, ge=2, le=5)
    time_control: Clock = Field(default_factory=Clock)  # its bounds are Clock's
    max_concurrent_matches: int = Field(16, ge=1, le=10_000)
    repeat_window: int = Field(
        4,
        ge=0,
        le=1000,
        description="a group that met in the last N matches of a bot "
        "is avoided while other opponents wait",
    )
    repeat_cap: int = Field(
        0,
        ge=0,
        le=1_000_000,
        description="hard cap: a group meets at most this often within "
        "repeat_cap_window_s (0 = no cap)",
    )
    repeat_cap_window_s: float = Field(3600.0, gt=0, le=30 * 86_400)
    duplicate: bool = Field(
        False,
        description="every match is followed by its twins, the same seed with the seats "
        "rotated until every bot has held every side's cards",
    )
    rating_scale: float = Field(
        5.0, gt=0, description="how quickly opponents far in rating become unlikely"
    )

    @field_validator("ruleset")
    @classmethod
    def _ruleset_exists(cls, spec: RulesetSpec) -> RulesetSpec:
        try:
            Ruleset.preset(spec.preset, spec.options)
        except RulesError as exc:
            raise ValueError(str(exc)) from None
        return spec

    def rules(self) -> Ruleset:
        return Ruleset.preset(self.ruleset.preset, self.ruleset.options)


class LadderFile(_Strict):
    ladders: list[LadderSpec] = Field(min_length=1)

    @field_validator("ladders")
    @classmethod
    def _unique(cls, ladders: list[LadderSpec]) -> list[LadderSpec]:
        names = [lad.name for lad in ladders]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"ladder names must be unique: {', '.join(dup)}")
        for lad in ladders:
            try:
                lad.rules().check_players(lad.players)
            except RulesError as exc:
                raise ValueError(f"ladder {lad.name!r}: {exc}") from None
        return ladders


def load_ladders(path: Path) -> list[LadderSpec]:
    """Read and validate a ladder file."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    return parse_ladders(data, str(path))


def parse_ladders(data: Any, source: str = "ladders") -> list[LadderSpec]:
    try:
        return LadderFile.model_validate(data).ladders
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"]) or "(top)"
            lines.append(f"{source}: {where}: {problem(err)}")
        raise ConfigError("\n".join(lines)) from None


def problem(err: ErrorDetails) -> str:
    """What is wrong, in a configuration file's words, for one pydantic error."""
    if err["type"] == "unexpected_keyword_argument":  # an unknown key of a dataclass (Clock)
        return "Extra inputs are not permitted"
    return err["msg"]
