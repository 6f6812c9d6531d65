"""A failure that repeats is logged once, then counted: once a window has passed, the next
line says how many like it were left out. (Under a flood of connections a web server once
wrote the same traceback 100,000 times a second; its referee logged every line.)"""

from __future__ import annotations

import time
from collections.abc import Callable

WINDOW_S = 60.0
MAX_KEYS = 1000  # distinct lines remembered per window; past it the window starts afresh


class Repeats:
    """What to do with each occurrence of a line (by a key: the line itself, a message)."""

    def __init__(self, window_s: float = WINDOW_S, clock: Callable[[], float] = time.monotonic):
        self.window_s = window_s
        self.clock = clock
        self._seen: dict[str, tuple[float, int]] = {}  # key -> (logged at, left out since)

    def admit(self, key: str) -> int | None:
        """None: leave this occurrence out (it is counted). Otherwise log it, with the number
        of occurrences left out since it was last logged (0 the first time)."""
        now = self.clock()
        logged, left_out = self._seen.get(key, (float("-inf"), 0))
        if now - logged < self.window_s:
            self._seen[key] = (logged, left_out + 1)
            return None
        if len(self._seen) >= MAX_KEYS:
            self._seen.clear()
        self._seen[key] = (now, 0)
        return left_out
