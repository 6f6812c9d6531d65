"""The SDK's compiled search (``make setup`` builds it with the engine: the playouts of
``ismcts``) runs only on a current build of the SDK's and the engine's sources, only with the
compiled engine, and gives exactly what the pure-Python one gives."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
from pathlib import Path

import pytest

import kozel.engine
from kozel.engine import Deal, Ruleset
from kozel.engine import native as engine_native
from kozel.sdk import native
from kozel.sdk.playout import Exploring, SplitPolicy, playout, policy_greedy, policy_seen
from tests.engine.test_native import run_pure, run_python

ROOT = Path(__file__).resolve().parents[2]
SHOW = "import kozel.sdk.native as n, kozel.engine as e; print(e.NATIVE, n.loaded())"


def search_digest() -> str:
    """The rewards of 200 seeded playouts (every policy, two to four players), hashed."""
    h = hashlib.sha256()
    rules = Ruleset.preset("classic")
    for seed in range(200):
        players = 2 + seed % 3
        deck = list(range(36))
        random.Random(seed).shuffle(deck)
        deal = Deal.start(rules, players, deck, seed % players)
        rng = random.Random(seed)
        side = deal.side_of[seed % players]
        policy = (
            None,
            Exploring(policy_greedy, 0.05),
            SplitPolicy(side, Exploring(policy_seen, 0.1), Exploring(policy_greedy, 0.05)),
            Exploring(policy_seen, 0.3),
        )[seed % 4]
        value = playout(deal, side, rng, 0.2 + 0.1 * (seed % 3), seed % 5 != 0, None, policy)
        h.update(f"{value:.12f}".encode())
    return h.hexdigest()


def test_this_process_runs_the_compiled_search_exactly_when_the_build_is_current() -> None:
    assert native.wanted() == native.loaded()
    assert native.loaded() <= kozel.engine.NATIVE  # never without the compiled engine


def test_the_compiled_and_the_pure_search_give_the_same_values() -> None:
    if not native.loaded():
        pytest.skip("no compiled search for these sources (make setup builds them)")
    assert run_pure(search_digest, "kozel.sdk.native") == ["False", search_digest()]


def _copy_packages(to: Path) -> tuple[Path, Path, str]:
    """Copies of the engine and the SDK (with their builds) under ``to``; the two packages and
    the PYTHONPATH that imports them."""
    engine = to / "kozel" / "engine"
    sdk = to / "kozel" / "sdk"
    shutil.copytree(engine_native.PACKAGE, engine, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(native.PACKAGE, sdk, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(native.PACKAGE.parent / "v1", to / "kozel" / "v1")
    return engine, sdk, os.pathsep.join([str(to), str(ROOT / "server")])


def _append(path: Path, line: str) -> None:
    with path.open("a") as f:
        f.write(line)


def test_the_guard_holds_for_a_changed_engine_source_or_build(tmp_path: Path) -> None:
    if not native.loaded():
        pytest.skip("no compiled search for these sources (make setup builds them)")
    engine, _sdk, path = _copy_packages(tmp_path)
    assert run_python(SHOW, pythonpath=path) == "True True"
    assert run_python(SHOW, pythonpath=path, pure=True) == "False False"
    _append(engine / "cards.py", "# edited after the build\n")
    assert run_python(SHOW, pythonpath=path) == "False False"  # a stale engine: neither loads
    (engine / "_native" / engine_native.DIGEST_FILE).write_text(
        engine_native.source_digest(engine) + "\n"
    )
    assert run_python(SHOW, pythonpath=path) == "True False"  # the SDK was built on other sources


def test_the_guard_holds_for_another_engine_build_of_the_same_sources(tmp_path: Path) -> None:
    """An engine rebuilt without the SDK (another build id) leaves the SDK's build unloaded:
    it is linked to the engine build it was compiled with."""
    if not native.loaded():
        pytest.skip("no compiled search for these sources (make setup builds them)")
    engine, _sdk, path = _copy_packages(tmp_path)
    (engine / "_native" / engine_native.BUILD_ID_FILE).write_text("another build\n")
    assert run_python(SHOW, pythonpath=path) == "True False"
    (engine / "_native" / engine_native.BUILD_ID_FILE).unlink()
    assert run_python(SHOW, pythonpath=path) == "True False"


def test_the_guard_holds_for_a_changed_sdk_source_and_not_for_others(tmp_path: Path) -> None:
    if not native.loaded():
        pytest.skip("no compiled search for these sources (make setup builds them)")
    _engine, sdk, path = _copy_packages(tmp_path)
    _append(sdk / "ismcts.py", "# not compiled, edited after the build\n")
    assert run_python(SHOW, pythonpath=path) == "True True"
    _append(sdk / "playout.py", "# edited after the build\n")
    assert run_python(SHOW, pythonpath=path) == "True False"
