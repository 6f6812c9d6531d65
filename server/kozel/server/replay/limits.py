"""How much of a replay file a reader takes before it refuses it.

A ``.kzr`` file may come from anyone (a download, a folder another host writes): a 1 MB gzip
bomb decompresses to gigabytes, a field the format does not know can hold hundreds of
megabytes, and a file of thousands of deals makes every later step (verify, render, convert
to JSON) slow. Every reader (:func:`kozel.server.replay.file.decode_replay`, the archives, the
``kozel replay`` commands, the web) applies these bounds; the referee's come from its
configuration (``limits.replay_*``), the commands take ``--limit replay_max_deals=N``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, fields, replace

PREFIX = "replay_"  # a field's configuration key is PREFIX + its name: replay_max_deals


@dataclass(frozen=True, slots=True)
class ReplayLimits:
    """The bounds of one replay (see docs/referee.md, "Hostile input")."""

    max_bytes: int = 32 * 1024 * 1024  # the file, and its content once decompressed
    max_deals: int = 1000  # deals of one match (keep it at least limits.max_match_deals)
    max_steps: int = 200_000  # decisions in all its deals (a deal takes under 100)
    max_unknown_bytes: int = 64 * 1024  # bytes of fields this reader does not know

    @staticmethod
    def keys() -> list[str]:
        """The configuration keys, ``replay_max_bytes`` and so on."""
        return [PREFIX + f.name for f in fields(ReplayLimits)]

    def with_pairs(self, pairs: Iterable[tuple[str, int | float]]) -> ReplayLimits:
        """These limits with ``(key, value)`` pairs applied (keys as :meth:`keys` gives them);
        ``ValueError`` naming an unknown key or a negative value."""
        changes = {}
        for key, value in pairs:
            if key not in self.keys():
                raise ValueError(f"{key!r} is not a replay limit ({', '.join(self.keys())})")
            if value != int(value) or value < 0:
                raise ValueError(f"{key} must be a whole number, at least 0, not {value}")
            changes[key.removeprefix(PREFIX)] = int(value)
        return replace(self, **changes)

    def pairs(self) -> list[tuple[str, int]]:
        """The limits as ``(key, value)`` pairs (to hand them to another process)."""
        return [(PREFIX + f.name, getattr(self, f.name)) for f in fields(self)]


def parse_pairs(items: Iterable[str]) -> list[tuple[str, int | float]]:
    """``KEY=N`` command-line items as pairs (N a whole number, or a decimal one such as a
    share); ``ValueError`` for one that is not."""
    out: list[tuple[str, int | float]] = []
    for item in items:
        key, sep, value = item.partition("=")
        text = value.strip()
        if sep and text.isdigit():
            out.append((key.strip(), int(text)))
            continue
        try:
            number = float(text) if sep else math.nan
        except ValueError:
            number = math.nan
        if not math.isfinite(number) or number < 0:
            raise ValueError(f"{item!r} is not KEY=N (N a number, at least 0)")
        out.append((key.strip(), number))
    return out
