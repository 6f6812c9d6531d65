"""How the luck's frozen constants (:data:`kozel.analysis.luck.WEIGHTS` and the conversions
beside it) were fitted: greedy-vs-greedy matches of the ``classic`` preset in-process, on seeds
of their own (never a benchmark's), and least squares. Run
``python -m kozel.tools.luck_fit [MATCHES [PLAYERS...]]`` to print them (version 1: 2,000
matches at each table size); pasting new figures into the
module is a new :data:`~kozel.analysis.luck.LUCK_VERSION`."""

from __future__ import annotations

import hashlib
import sys
from typing import Any

from kozel.analysis.luck import N_FEATURES, match_luck
from kozel.engine.rules import Ruleset


def fit_seed(players: int, i: int) -> bytes:
    """The calibration seeds: apart from every benchmark's (those hash other prefixes)."""
    return hashlib.sha256(b"kozel-luck-fit" + bytes([players]) + i.to_bytes(8, "big")).digest()


def _samples(players: int, matches: int) -> tuple[list[Any], list[Any], list[Any]]:
    """Feature rows with each side's centred card points and penalty by side and deal, and
    per match each side's summed features with its centred match score."""
    from kozel.env.harness import play_match

    rules = Ruleset.preset("classic")
    side_of = rules.side_of(players)
    n_sides = max(side_of) + 1
    rows: list[Any] = []
    ys: list[Any] = []
    per_match: list[Any] = []
    for i in range(matches):
        played = play_match(["greedy"] * players, rules=rules, seed=fit_seed(players, i))
        sums = [[0.0] * N_FEATURES for _ in range(n_sides)]
        for dl in match_luck(rules, players, played.match.records):
            known = [s for s, f in enumerate(dl.features) if f is not None]
            mean = sum(dl.points[s] or 0 for s in known) / len(known)
            pens = dl.penalties
            pmean = sum(pens[s] or 0 for s in known) / len(known)
            for s in known:
                f = dl.features[s]
                assert f is not None
                rows.append(f)
                ys.append(((dl.points[s] or 0) - mean, (pens[s] or 0) - pmean))
                sums[s] = [a + b for a, b in zip(sums[s], f)]
        score = _scores(played.result, n_sides)
        per_match += [(sums[s], score[s]) for s in range(n_sides)]
    return rows, ys, per_match


def _scores(result: Any, n_sides: int) -> list[float]:
    """Each side's match score (1 a win, a draw shared), centred on the sides."""
    if result.draw:
        return [0.0] * n_sides
    return [(1.0 if s == result.winner_side else 0.0) - 1 / n_sides for s in range(n_sides)]


def fit(players: int, matches: int) -> dict[str, Any]:
    """The weights (least squares, minimum norm: a constant added to every class of a kind
    changes no luck) and the match score per point of luck."""
    import numpy as np

    rows, ys, per_match = _samples(players, matches)
    x = np.array(rows)
    targets = np.array(ys)
    points, penalty = targets[:, 0], targets[:, 1]
    w = np.linalg.lstsq(x, points, rcond=None)[0]
    w = np.asarray(np.round(w, 2), dtype=float)  # the weights as frozen
    deal_luck = x @ w
    luck = np.array([float(np.dot(w, f)) for f, _ in per_match])
    score = np.array([s for _, s in per_match])
    return {
        "weights": [round(v, 2) for v in w.tolist()],
        "penalty_per_point": round(float(deal_luck @ penalty / (deal_luck @ deal_luck)), 5),
        "score_per_point": round(float(luck @ score / (luck @ luck)), 5),
        "deals": len(ys),
    }


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    for p in [int(a) for a in sys.argv[2:]] or [2, 3, 4]:
        print(p, fit(p, n), flush=True)
