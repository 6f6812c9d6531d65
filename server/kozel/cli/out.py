"""Where the ``kozel`` commands print tables: a terminal's own width, or, when the output is
piped or captured, one wide enough that names, ids and paths are never cut."""

from __future__ import annotations

import sys

from rich.console import Console

PIPED_WIDTH = 200  # columns when stdout is not a terminal


def console() -> Console:
    return Console() if sys.stdout.isatty() else Console(width=PIPED_WIDTH)
