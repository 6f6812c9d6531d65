"""``kozel bench luck``: how unbiased and how useful the luck correction is (docs/luck.md).

For each pair of bots and table size, matches are played in-process (the referee's seat
protocol, :func:`kozel.env.harness.play_match`) in groups dealt from one seed with the seats
rotated, as ``kozel play`` deals them (two sides: both seatings; three players: the three
rotations); a bot against itself plays one match per seed, from seat 0 (its rotations would
be the same match again, their means 0 by construction). From the bot's seat(s), per deal
its side's card points and penalty, per match its score (1, 1/2, 0), each plain and
corrected (minus its luck, :mod:`kozel.analysis.luck`).
Reported: the plain and corrected means with 95 % intervals, the mean luck (zero within its
interval: the bias check), the effective-games multiplier with its bootstrap interval, and for
the match score what duplicate dealing gives alone and with the correction
(:mod:`kozel.tools.luck_stats`); with two sides, how many matches an SPRT needs on the
results and on the luck-corrected pairs (runs drawing the played pairs at random). Seeded:
the same seed plays the same deals (the ``ismcts`` bots think for a wall-clock budget, so
their matches vary with the load).
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from kozel.analysis.luck import LUCK_VERSION
from kozel.engine.rules import Ruleset
from kozel.sdk.bot import Bot
from kozel.tools.elo import Sprt
from kozel.tools.luck_stats import (
    Unit,
    clustered,
    duplicate,
    duplicate_deals,
    lengths,
    sprt_lengths,
    sprt_run,
)
from kozel.tools.playoff import BOT, Fixture, fixtures
from kozel.tools.replay_luck import side_luck

SEARCHING = ("ismcts", "ismcts-fast")
"""The house bots that take a think budget (``NAME@MS``)."""
DEFAULT_PAIRS = "random:greedy,greedy:greedy,greedy:ismcts-fast:40"
"""BOT:VS[:MATCHES] by comma: the pairs played (MATCHES overrides --matches)."""


@dataclass(frozen=True)
class Pair:
    bot: str
    vs: str
    matches: int | None = None


def _known_bot(spec: str, known: Sequence[str]) -> bool:
    """``NAME`` or, for a searching bot, ``NAME@MS`` (its think budget in milliseconds)."""
    name, at, ms = spec.partition("@")
    if not at:
        return name in known
    return name in SEARCHING and ms.isdigit() and 0 < int(ms) <= 60_000


def parse_pairs(text: str, known: Sequence[str]) -> list[Pair]:
    """``BOT:VS[:MATCHES],...`` (ValueError says what is wrong)."""
    out = []
    for item in text.split(","):
        parts = item.strip().split(":")
        if len(parts) not in (2, 3) or not all(_known_bot(p, known) for p in parts[:2]):
            raise ValueError(
                f"{item!r} is not BOT:VS[:MATCHES] of {', '.join(known)} "
                f"({'/'.join(SEARCHING)}@MS sets a think budget of MS milliseconds)"
            )
        n = int(parts[2]) if len(parts) == 3 else None
        if n is not None and n < 1:
            raise ValueError(f"{item!r}: MATCHES must be at least 1")
        out.append(Pair(parts[0], parts[1], n))
    return out


@dataclass(frozen=True)
class MatchUnits:
    """One match seen from the bot's seat: its deals' (plain, corrected) card points and
    penalties, its score."""

    group: int
    points: list[Unit]
    penalties: list[Unit]
    score: Unit


def _bot(spec: str) -> Bot:
    """The bot a ``NAME[@MS]`` spec names, fresh for one match."""
    from kozel.sdk.house_bots import make

    name, _, ms = spec.partition("@")
    return make(name, budget_s=int(ms) / 1000 if ms else None)


def _play(args: tuple[str, str, str, int, Fixture]) -> MatchUnits:
    """Play one fixture and measure it (in a worker process)."""
    from kozel.env.harness import play_match

    bot, vs, preset, players, fx = args
    rules = Ruleset.preset(preset)
    specs = [bot if r == BOT else vs for r in fx.seats]
    played = play_match([_bot(s) for s in specs], rules=rules, seed=fx.seed, names=specs)
    side = rules.side_of(players)[fx.seats.index(BOT)]
    luck = side_luck(rules, players, played.match.records, side)
    res = played.result
    score = 0.5 if res.draw else float(res.winner_side == side)
    return MatchUnits(fx.pair, luck.points, luck.penalties, (score, score - luck.score_luck))


def _groups(matches: list[MatchUnits], what: str) -> list[list[Unit]]:
    by: dict[int, list[Unit]] = {}
    for m in matches:
        units = by.setdefault(m.group, [])
        if what == "score":
            units.append(m.score)
        else:
            units.extend(getattr(m, what))
    return list(by.values())


def _rotations(matches: list[MatchUnits], what: str) -> list[list[list[Unit]]]:
    """Per seed group, each match's deals in order."""
    by: dict[int, list[list[Unit]]] = {}
    for m in matches:
        by.setdefault(m.group, []).append(getattr(m, what))
    return list(by.values())


def bench_pair(
    pair: Pair,
    preset: str,
    players: int,
    matches: int,
    seed: int,
    jobs: int,
    boot: int,
    sprt: Sprt | None = None,
    played_runs: int = 0,
) -> dict[str, Any]:
    """One pair at one table size: the figures of the module docstring; with two players and
    ``played_runs``, that many real SPRT runs (:func:`sprt_runs`) beside the estimate."""
    rules = Ruleset.preset(preset)
    n = pair.matches or matches
    base = hashlib.sha256(b"kozel-bench-luck" + seed.to_bytes(8, "big")).digest()
    seated = list(fixtures(players, rules.teams(players), n * players, base))
    if pair.bot == pair.vs:  # rotated seatings of one bot are the same match: seat 0's only
        seated = [fx for fx in seated if fx.seats[0] == BOT]
    todo = [(pair.bot, pair.vs, preset, players, fx) for fx in seated[:n]]
    start = time.perf_counter()
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            played = list(pool.map(_play, todo))
    else:
        played = [_play(t) for t in todo]
    out: dict[str, Any] = {
        "bot": pair.bot,
        "vs": pair.vs,
        "players": players,
        "matches": len(played),
        "seconds": round(time.perf_counter() - start, 1),
    }
    for what in ("points", "penalties"):
        out[f"deal_{what}"] = clustered(_groups(played, what), seed, boot)
        out[f"deal_{what}"]["duplicate_deals"] = duplicate_deals(
            _rotations(played, what), seed, boot
        )
    scores = _groups(played, "score")
    out["match_score"] = clustered(scores, seed, boot) | duplicate(scores, seed, boot)
    if sprt is not None:
        out["sprt"] = sprt_lengths(scores, sprt, seed)
        if played_runs and players == 2:
            out["sprt_played"] = sprt_runs(
                pair, preset, played_runs, seed, jobs, sprt, progress=_stderr
            )
    return out


def bench_luck(
    pairs: Sequence[Pair],
    players: Sequence[int],
    matches: int,
    seed: int,
    jobs: int = 1,
    boot: int = 1000,
    preset: str = "classic",
    sprt: Sprt | None = None,
    played_runs: int = 0,
) -> dict[str, Any]:
    """Every pair at every table size, keyed ``BOT-vs-VS-Np``."""
    results: dict[str, Any] = {"luck_version": LUCK_VERSION, "preset": preset, "seed": seed}
    for p in players:
        for pair in pairs:
            key = f"{pair.bot}-vs-{pair.vs}-{p}p"
            results[key] = bench_pair(pair, preset, p, matches, seed, jobs, boot, sprt, played_runs)
    return results


def _played_pairs(
    pool: ProcessPoolExecutor, pair: Pair, preset: str, base: bytes, jobs: int
) -> Iterator[list[Unit]]:
    """Pairs of fresh two-player matches (both seatings of one seed), played ``jobs`` matches
    at a time, in order."""
    seated = fixtures(2, False, 1 << 40, base)
    while True:
        batch = [next(seated) for _ in range(2 * max(1, jobs // 2))]
        played = list(pool.map(_play, [(pair.bot, pair.vs, preset, 2, fx) for fx in batch]))
        for k in range(0, len(played), 2):
            yield [played[k].score, played[k + 1].score]


def sprt_runs(
    pair: Pair,
    preset: str,
    runs: int,
    seed: int,
    jobs: int,
    sprt: Sprt,
    cap: int = 500,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """``runs`` real SPRTs at two players, each on fresh seeds: pairs are played until both
    tests, on the results and on the luck-corrected pairs, have decided (at most ``cap``
    pairs); both read the same matches, so their lengths compare run by run. ``progress``
    hears each run as it ends."""
    done = []
    start = time.perf_counter()
    with ProcessPoolExecutor(max(1, jobs)) as pool:
        for r in range(runs):
            key = b"kozel-bench-sprt" + seed.to_bytes(8, "big") + r.to_bytes(8, "big")
            base = hashlib.sha256(key).digest()
            done.append(sprt_run(_played_pairs(pool, pair, preset, base, jobs), sprt, cap))
            if progress is not None:
                (pn, pv), (cn, cv) = done[-1]
                progress(f"SPRT run {r + 1}/{runs}: results {pn} {pv}, corrected {cn} {cv}")
    shorter = sum(c[0] < p[0] for p, c in done)
    return {
        "elo0": sprt.elo0,
        "elo1": sprt.elo1,
        "runs": runs,
        "seconds": round(time.perf_counter() - start, 1),
        "results": lengths([p for p, _ in done]) | {"mean_matches": _mean(p for p, _ in done)},
        "corrected": lengths([c for _, c in done]) | {"mean_matches": _mean(c for _, c in done)},
        "corrected_shorter": shorter,
        "corrected_longer": sum(c[0] > p[0] for p, c in done),
        "each": [[p[0], p[1], c[0], c[1]] for p, c in done],
    }


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _mean(runs: Iterator[tuple[int, str]]) -> float:
    ns = [n for n, _ in runs]
    return round(sum(ns) / len(ns), 1)
