"""The compiled engine (``make setup`` builds it with mypyc) runs only on the sources it was
built from, can be switched off, and plays exactly as the pure-Python one does.

The rest of tests/engine runs on whichever engine this process loaded (the compiled one after
``make setup`` on a machine with a C compiler); here the other one is run in a subprocess.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import kozel.engine
from kozel.engine import native
from tests.engine.test_random_play_digest import EXPECTED, digest

ROOT = Path(__file__).resolve().parents[2]
SHOW = "import kozel.engine as e; print(e.NATIVE, e.deal.__file__.endswith('.py'))"


def run_python(code: str, *, pythonpath: Path | str | None = None, pure: bool = False) -> str:
    """The output of ``code`` run by a new interpreter (pure Python forced with ``pure``)."""
    env = {**os.environ, native.PURE_ENV: "1" if pure else ""}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_this_process_runs_the_compiled_engine_exactly_when_the_build_is_current() -> None:
    assert native.wanted() == kozel.engine.NATIVE
    assert (not (kozel.engine.deal.__file__ or "").endswith(".py")) == kozel.engine.NATIVE


def run_pure(digest: Callable[[], str], guard: str) -> list[str]:
    """What ``guard.loaded()`` says and what ``digest`` (a test module's function) returns
    in a new interpreter with pure Python forced."""
    code = (
        f"import {guard} as guard\n"
        f"from {digest.__module__} import {digest.__name__} as digest\n"
        "print(guard.loaded(), digest())\n"
    )
    return run_python(code, pure=True).split()


def test_pure_python_forced_plays_the_pinned_random_games() -> None:
    assert run_pure(digest, "kozel.engine.native") == ["False", EXPECTED]


def _copy_package(to: Path) -> Path:
    """A copy of the engine package (with its build, if any) under ``to``/kozel/engine."""
    package = to / "kozel" / "engine"
    shutil.copytree(native.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    return package


def test_the_guard_accepts_only_a_build_of_the_sources_on_disk(tmp_path: Path) -> None:
    package = _copy_package(tmp_path)
    folder = package / "_native"
    shutil.rmtree(folder, ignore_errors=True)
    assert not native.build_is_current(package)  # no build
    folder.mkdir()
    (folder / native.DIGEST_FILE).write_text(native.source_digest(package) + "\n")
    assert native.build_is_current(package)
    with (package / "deal.py").open("a") as f:
        f.write("# edited after the build\n")
    assert not native.build_is_current(package)  # a changed source
    (folder / native.DIGEST_FILE).write_text(native.source_digest(package) + "\n")
    (package / "extra.py").write_text('"""A module added after the build."""\n')
    assert not native.build_is_current(package)  # a new source


def test_the_guard_and_the_switch_hold_in_a_real_process(tmp_path: Path) -> None:
    if not native.build_is_current():
        pytest.skip("no compiled engine for these sources (make setup builds it)")
    package = _copy_package(tmp_path)
    assert run_python(SHOW, pythonpath=tmp_path) == "True False"
    assert run_python(SHOW, pythonpath=tmp_path, pure=True) == "False True"
    with (package / "deal.py").open("a") as f:
        f.write("# edited after the build\n")
    assert run_python(SHOW, pythonpath=tmp_path) == "False True"  # a stale build never loads
