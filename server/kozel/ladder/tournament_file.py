"""Tournament files (YAML): read, then validated by :mod:`kozel.tournament.spec` with errors
that name the field (raised as the ladder files' :class:`~kozel.ladder.config.ConfigError`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kozel.ladder.config import ConfigError
from kozel.tournament.spec import SpecError, TournamentSpec, parse_tournaments


def load_tournaments(path: Path) -> list[TournamentSpec]:
    """Read and validate a tournament file."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    return parse(data, str(path))


def parse(data: Any, source: str) -> list[TournamentSpec]:
    try:
        return parse_tournaments(data, source)
    except SpecError as exc:
        raise ConfigError(str(exc)) from None
