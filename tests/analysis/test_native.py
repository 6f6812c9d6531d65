"""The analysis's compiled solvers (``make setup`` builds them with the engine) run only on a
current build of the analysis's and the engine's sources, only with the compiled engine, and
give exactly what the pure-Python ones give."""

from __future__ import annotations

import hashlib
import random
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

import kozel.engine
from kozel.analysis import native
from kozel.analysis.endgame import Exhausted, Solver
from kozel.analysis.solver import OpenHand
from kozel.analysis.worlds import Worlds
from kozel.engine import Deal, Ruleset, observe
from kozel.engine import native as engine_native
from tests.engine.test_native import run_pure, run_python

SHOW = "import kozel.analysis.native as n, kozel.engine as e; print(e.NATIVE, n.loaded())"


def solver_digest() -> str:
    """Open-hand values at positions of two to four players (some with a node budget), the
    endgame solver's at empty talons, and drawn worlds, hashed."""
    h = hashlib.sha256()
    rules = Ruleset.preset("classic")
    for seed in range(12):
        players = 2 + seed % 3
        deck = list(range(36))
        random.Random(seed).shuffle(deck)
        deal = Deal.start(rules, players, deck, 0)
        dealt = list(deal.hands)
        rng = random.Random(seed)
        while not deal.over and deal.talon_left > (4 if players == 2 else 0):
            acts = deal.legal_actions(deal.to_act[0])
            deal.apply(deal.to_act[0], acts[rng.randrange(len(acts))])
        if deal.over:
            continue
        seat = deal.to_act[0]
        budget = None if players < 4 else 5000
        values = OpenHand(deal, budget).solve(deal, seat).values
        h.update(repr([(v.low, v.high) for v in values]).encode())
        world = Worlds(rules, observe(deal, seat), dealt[seat]).sample(random.Random(seed))
        h.update(repr(world.hands).encode())
        if deal.talon_left == 0 and deal.decision in ("lead", "respond") and players == 3:
            side = deal.side_of[seat]

            def share(pts: Sequence[int], tricks: Sequence[int], s: int = side) -> float:
                return pts[s] / 120

            try:
                endgame = Solver(deal, side, share, 20_000).values()
            except Exhausted:
                endgame = []
            h.update(repr([round(v, 12) for v in endgame]).encode())
    return h.hexdigest()


def test_this_process_runs_the_compiled_solvers_exactly_when_the_build_is_current() -> None:
    assert native.wanted() == native.loaded()
    assert native.loaded() <= kozel.engine.NATIVE  # never without the compiled engine


def test_the_compiled_and_the_pure_solvers_give_the_same_values() -> None:
    if not native.loaded():
        pytest.skip("no compiled analysis for these sources (make setup builds it)")
    assert run_pure(solver_digest, "kozel.analysis.native") == ["False", solver_digest()]


def test_the_guard_holds_for_changed_sources(tmp_path: Path) -> None:
    """An edit of a compiled module, or of the engine, disables the build; an edit of a module
    that is not compiled does not."""
    if not native.loaded():
        pytest.skip("no compiled analysis for these sources (make setup builds it)")
    engine = tmp_path / "kozel" / "engine"
    analysis = tmp_path / "kozel" / "analysis"
    shutil.copytree(engine_native.PACKAGE, engine, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(native.PACKAGE, analysis, ignore=shutil.ignore_patterns("__pycache__"))
    assert run_python(SHOW, pythonpath=tmp_path) == "True True"
    assert run_python(SHOW, pythonpath=tmp_path, pure=True) == "False False"
    with (analysis / "review.py").open("a") as f:
        f.write("# not compiled, edited after the build\n")
    assert run_python(SHOW, pythonpath=tmp_path) == "True True"
    with (analysis / "solver.py").open("a") as f:
        f.write("# edited after the build\n")
    assert run_python(SHOW, pythonpath=tmp_path) == "True False"
