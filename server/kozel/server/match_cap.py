"""How many queue and ladder matches may run and start now: a pure policy fed with event-loop
samples (no clock and no I/O of its own, so tests drive it sample by sample).

The cap starts low, grows by one per sample while it is the binding limit and the loop keeps
time with room to spare, drops to 90 % of the running matches when the loop starts to lag, and
to the share of them that would keep the loop ``busy_target`` busy when it is busier (additive
increase, multiplicative decrease); never above ``max_running``. Starts are also paced by a
budget of ``starts_per_s`` that each sample refills."""

from __future__ import annotations

from dataclasses import dataclass, field

CAP_START = 32  # where the adaptive cap starts ...
CAP_MIN = 4  # ... and how low it may go (unless max_running is lower)
BUSY_ROOM = 0.9  # the cap grows only while the loop is less busy than this share of its target
SMOOTHING = 0.3  # weight of a new sample in the smoothed lag and busy share


@dataclass(slots=True)
class MatchCap:
    """The adaptive match cap and the start budget of one referee."""

    max_running: int  # limits.max_running_matches
    starts_per_s: float  # limits.max_match_starts_per_s
    lag_limit_s: float = 0.0  # admission pauses while the smoothed lag is above it; 0: off
    busy_target: float = 0.0  # the share of time the loop may be busy; 0: no target
    cap: int = field(init=False)
    starts_left: float = field(init=False)  # starts allowed now
    overloaded: bool = False  # the loop lags: nothing starts
    lag_s: float = 0.0  # smoothed event-loop lag
    busy: float = 0.0  # smoothed share of the time the loop's thread is on the CPU

    def __post_init__(self) -> None:
        self.cap = min(self.max_running, CAP_START) if self.lag_limit_s else self.max_running
        self.starts_left = self.starts_per_s

    def admits(self, running: int) -> bool:
        """Whether one more match may start while ``running`` run."""
        return not self.overloaded and self.starts_left >= 1 and running < self.cap

    def spend(self) -> None:
        """One match started."""
        self.starts_left -= 1

    def observe(self, lag_s: float, busy: float, interval_s: float, running: int) -> bool:
        """One event-loop sample (taken every ``interval_s``: how late it ran, and the share of
        the time its thread was busy) while ``running`` matches run: refill the budget and move
        the cap. Returns whether ``overloaded`` changed."""
        rate = self.starts_per_s
        self.starts_left = min(self.starts_left + rate * interval_s, max(rate, 1.0))
        if not self.lag_limit_s:
            return False
        self.lag_s += SMOOTHING * (lag_s - self.lag_s)
        self.busy += SMOOTHING * (busy - self.busy)
        was, self.overloaded = self.overloaded, self.lag_s > self.lag_limit_s
        target = self.busy_target
        floor = min(CAP_MIN, self.max_running)  # never above the configured limit
        if self.overloaded and not was:  # once per episode; meanwhile nothing starts
            self.cap = max(floor, int(min(self.cap, running) * 0.9))
        elif target and self.busy > target:
            # Matches end slowly, so this only stops new ones until enough have ended; it is
            # recomputed from what runs, so a steady overload does not ratchet it down to zero.
            self.cap = max(floor, min(self.cap, int(running * target / self.busy)))
        elif (
            not self.overloaded
            and running >= self.cap - 1
            and (not target or self.busy < target * BUSY_ROOM)
        ):
            self.cap = min(self.cap + 1, self.max_running)
        return was != self.overloaded
