"""A tournament's definition, validated with errors that name the field (as ladder files are).

A file holds ``tournaments:``, a list of events. Each event names its bots (house bots the
referee plays in-process, registered bots that connect with their token, or commands started
per game as ``kozel play`` starts them), the ruleset and clock, how many seed groups each
pairing plays (every seat rotation of each seed: duplicate deals), what happens to absent or
crashed bots, its stages (round robin, gauntlet, Swiss, knockout; chained), and the winner rules
to report. docs/tournaments.md describes every key.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from kozel.core.clock import Clock
from kozel.engine.rules import RulesError, Ruleset

NAME = r"^[a-z0-9][a-z0-9_.-]{0,63}$"  # a tournament's name (as a ladder's)
_BOT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,63}$")
TIE_BREAKS = (
    "buchholz",
    "buchholz_cut1",
    "median_buchholz",
    "sonneborn_berger",
    "head_to_head",
    "wins",
    "game_points",
    "penalties",
)
WINNER_RULES = ("standings", "total_score", "instant_runoff", "copeland")


_UNION_TAGS = ("round_robin", "gauntlet", "swiss", "knockout")


class SpecError(ValueError):
    """A tournament file that cannot be used; the message names the field and what is wrong."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RulesetSpec(_Strict):
    preset: str = "classic"
    options: dict[str, Any] = Field(default_factory=dict)


class BotSpec(_Strict):
    """One entrant: ``house`` (a house bot), ``command`` (a process per game) or neither (a
    registered bot that connects with its token and joins the tournament by name)."""

    name: str  # the entrant's name; a registered bot's is its account name
    house: str = ""  # a house bot kind (random, greedy, ismcts ...)
    command: str = ""  # a shell command with {server}, {table}, {name}, as in kozel play
    budget_ms: int | None = Field(None, ge=1, le=60_000)  # a searching house bot's think time
    concurrency: int = Field(4, ge=1, le=256)  # games at once (house and command bots)

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not _BOT_NAME.match(name):
            raise ValueError(
                "a bot name is 1 to 64 letters, digits and _ . : + - "
                "(starting with a letter or digit)"
            )
        return name

    @model_validator(mode="after")
    def _one_kind(self) -> BotSpec:
        if self.house and self.command:
            raise ValueError("a bot is a house bot or a command, not both")
        if self.budget_ms is not None and not self.house:
            raise ValueError("budget_ms is for house bots")
        return self

    @property
    def kind(self) -> str:
        return "house" if self.house else "command" if self.command else "account"


class Forfeits(_Strict):
    """What happens to bots that are not there: every game is played, an absent seat is
    forfeited by the referee's own rule (after the clock's grace time), and a bot that
    forfeits ``withdraw_after`` games in a row is withdrawn (its later games are lost
    without being played)."""

    # A game waits this long for a registered bot that is not connected, then starts.
    absent_wait_s: float = Field(30.0, ge=0, le=86_400)
    # A command bot not connected this long after it was started is absent.
    start_timeout_s: float = Field(30.0, gt=0, le=3600)
    withdraw_after: int = Field(3, ge=0, le=1000)  # forfeits in a row (0: never withdrawn)


class _Stage(_Strict):
    name: str = ""
    top: int | None = Field(None, ge=2)  # the best N of the stage before
    seeding: Literal["order", "previous", "rating", "random"] = "previous"
    rating_ladder: str = ""
    groups: int | None = Field(None, ge=1, le=1000)  # seed groups a pairing (default: event's)
    tie_breaks: tuple[str, ...] = ("buchholz", "sonneborn_berger", "wins", "game_points")

    @field_validator("tie_breaks")
    @classmethod
    def _known(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [t for t in value if t not in TIE_BREAKS]
        if bad:
            raise ValueError(f"unknown tie-break {bad[0]!r}; tie-breaks: {', '.join(TIE_BREAKS)}")
        return value


class RoundRobin(_Stage):
    """Every pair (every table of ``players`` bots) meets ``cycles`` times."""

    format: Literal["round_robin"]
    cycles: int = Field(1, ge=1, le=100)
    score: Literal["games", "pairings"] = "games"


class Gauntlet(_Stage):
    """The ``challengers`` each meet every other bot (every table of one challenger and
    ``players - 1`` others) ``cycles`` times."""

    format: Literal["gauntlet"]
    challengers: tuple[str, ...] = Field(min_length=1)
    cycles: int = Field(1, ge=1, le=100)
    score: Literal["games", "pairings"] = "games"


class Swiss(_Stage):
    """``rounds`` rounds paired by score (docs/tournaments.md: the pairing rules)."""

    format: Literal["swiss"]
    rounds: int = Field(ge=1, le=100)
    score: Literal["games", "pairings"] = "pairings"
    bye_points: float = Field(1.0, ge=0, le=1)  # a bye scores as this share of a won pairing
    tie_breaks: tuple[str, ...] = ("buchholz_cut1", "buchholz", "sonneborn_berger", "wins")


class Knockout(_Stage):
    """A bracket, single or double elimination (two players a table)."""

    format: Literal["knockout"]
    elimination: Literal["single", "double"] = "single"
    extra_groups: int = Field(2, ge=0, le=100)  # seed groups added, one by one, to a tie
    grand_final_reset: bool = True  # double: a second final when the losers' champion wins
    tie_breaks: tuple[str, ...] = ()


StageSpec = Annotated[RoundRobin | Gauntlet | Swiss | Knockout, Field(discriminator="format")]


class TournamentSpec(_Strict):
    """One event."""

    name: str = Field(pattern=NAME)
    players: int = Field(2, ge=2, le=4)
    ruleset: RulesetSpec = Field(default_factory=RulesetSpec)
    time_control: Clock = Field(default_factory=Clock)
    seed: str = Field("", pattern=r"^([0-9a-f]{64})?$")  # default: drawn once, kept in the store
    groups: int = Field(1, ge=1, le=1000)  # seed groups a pairing: duplicate deals
    max_concurrent_games: int = Field(16, ge=1, le=10_000)
    bots: tuple[BotSpec, ...] = Field(min_length=2)
    forfeits: Forfeits = Field(default_factory=Forfeits)
    stages: tuple[StageSpec, ...] = Field(min_length=1)
    winners: tuple[str, ...] = ("standings",)

    @field_validator("ruleset")
    @classmethod
    def _ruleset(cls, spec: RulesetSpec) -> RulesetSpec:
        try:
            Ruleset.preset(spec.preset, spec.options)
        except RulesError as exc:
            raise ValueError(str(exc)) from None
        return spec

    @field_validator("winners")
    @classmethod
    def _winners(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [w for w in value if w not in WINNER_RULES]
        if bad:
            raise ValueError(f"unknown winner rule {bad[0]!r}; rules: {', '.join(WINNER_RULES)}")
        return value

    @field_validator("bots")
    @classmethod
    def _unique(cls, bots: tuple[BotSpec, ...]) -> tuple[BotSpec, ...]:
        names = [b.name for b in bots]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"bot names must be unique: {', '.join(dup)}")
        return bots

    @model_validator(mode="after")
    def _coherent(self) -> TournamentSpec:
        try:
            self.rules().check_players(self.players)
        except RulesError as exc:
            raise ValueError(f"players: {exc}") from None
        _check_stages(self)
        return self

    def rules(self) -> Ruleset:
        return Ruleset.preset(self.ruleset.preset, self.ruleset.options)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.bots)

    def bot(self, name: str) -> BotSpec:
        return next(b for b in self.bots if b.name == name)

    def stage_groups(self, index: int) -> int:
        stage = self.stages[index]
        return stage.groups if stage.groups is not None else self.groups


def _check_stages(spec: TournamentSpec) -> None:
    """What only the whole event can tell: field sizes through the stages, names, formats."""
    field = len(spec.bots)
    for i, stage in enumerate(spec.stages):
        where = f"stages.{i}"
        if stage.seeding == "rating" and not stage.rating_ladder:
            raise ValueError(f"{where}.rating_ladder: seeding 'rating' names the ladder to read")
        if stage.top is not None:
            if stage.top > field:
                raise ValueError(f"{where}.top: {stage.top} is more than the {field} bots left")
            field = stage.top
        if field < spec.players:
            raise ValueError(f"{where}: {field} bots cannot fill a table of {spec.players}")
        _check_format(spec, stage, where, field)


def _check_format(spec: TournamentSpec, stage: Any, where: str, field: int) -> None:
    if isinstance(stage, Knockout) and spec.players != 2:
        raise ValueError(
            f"{where}.format: a knockout is played by two bots a table, not {spec.players}"
        )
    if isinstance(stage, Swiss) and stage.rounds > (field + 1) // 2:
        raise ValueError(
            f"{where}.rounds: a Swiss of {field} bots has at most {(field + 1) // 2} rounds "
            "(then a round without a repeat pairing always exists); a round robin plays more"
        )
    if isinstance(stage, Gauntlet):
        unknown = [c for c in stage.challengers if c not in spec.names]
        if unknown:
            raise ValueError(f"{where}.challengers: no bot named {unknown[0]!r}")
        if len(set(stage.challengers)) != len(stage.challengers):
            raise ValueError(f"{where}.challengers: a challenger is named twice")
        if field - len(stage.challengers) < spec.players - 1:
            raise ValueError(f"{where}.challengers: too few other bots to fill a table")


class TournamentFile(_Strict):
    tournaments: tuple[TournamentSpec, ...] = Field(min_length=1)

    @field_validator("tournaments")
    @classmethod
    def _unique(cls, events: tuple[TournamentSpec, ...]) -> tuple[TournamentSpec, ...]:
        names = [t.name for t in events]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"tournament names must be unique: {', '.join(dup)}")
        return events


def parse_tournaments(data: Any, source: str = "tournaments") -> list[TournamentSpec]:
    """Validate a tournament file's content (a parsed YAML document); raises
    :class:`SpecError` with one line per problem, each naming its field."""
    try:
        return list(TournamentFile.model_validate(data).tournaments)
    except ValidationError as exc:
        errors = exc.errors()
        locs = [tuple(str(p) for p in e["loc"] if str(p) not in _UNION_TAGS) for e in errors]
        lines = []
        for err, loc in zip(errors, locs):
            # A list whose items failed is also reported too short: its items say why.
            if err["type"] == "too_short" and any(o[: len(loc)] == loc != o for o in locs):
                continue
            msg, where = _problem(err), loc
            if (m := _PATH.match(msg)) is not None:  # a check of the whole event names a field
                where, msg = (*loc, m.group(1)), m.group(2)
            lines.append(f"{source}: {'.'.join(where) or '(top)'}: {msg}")
        raise SpecError("\n".join(lines)) from None


_PATH = re.compile(r"^([a-z_]+(?:\.[a-z0-9_]+)*): (.*)$", re.DOTALL)


def _problem(err: ErrorDetails) -> str:
    if err["type"] == "unexpected_keyword_argument":  # an unknown key of the Clock dataclass
        return "Extra inputs are not permitted"
    if err["type"] == "union_tag_invalid":
        return "format must be one of round_robin, gauntlet, swiss, knockout"
    return err["msg"].removeprefix("Value error, ")


def spec_json(spec: TournamentSpec) -> dict[str, Any]:
    """The definition as plain JSON (what the store keeps: the event reads on its own)."""
    return spec.model_dump(mode="json")


def spec_from_json(data: dict[str, Any]) -> TournamentSpec:
    """The definition the store keeps, validated again."""
    return TournamentSpec.model_validate(data)
