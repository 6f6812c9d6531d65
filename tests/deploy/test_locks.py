"""The lock files: every pin carries its artifacts' hashes, so pip installs them in
hash-checking mode (make setup, CI, the image); the image's runtime lock is the runtime
dependencies' closure with the very pins and hashes of requirements.lock; and every install
from a lock asks for --require-hashes."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.deploy.deployfiles import (
    LOCK,
    ROOT,
    RUNTIME_LOCK,
    dockerfile_stages,
    read_lock,
)

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _runtime_closure() -> set[str]:
    """The runtime dependencies of pyproject.toml and everything they need, as installed in
    this venv (which make setup filled from requirements.lock), markers evaluated here."""
    wanted = [Requirement(r) for r in PYPROJECT["project"]["dependencies"]]
    seen: set[str] = set()
    while wanted:
        req = wanted.pop()
        name = canonicalize_name(req.name)
        extras = req.extras
        key = name + "".join(sorted(f"[{e}]" for e in extras))
        if key in seen:
            continue
        seen.add(key)
        seen.add(name)
        for raw in metadata.requires(name) or []:
            dep = Requirement(raw)
            env = [{"extra": e} for e in extras] or [{"extra": ""}]
            if dep.marker is None or any(dep.marker.evaluate(e) for e in env):
                wanted.append(dep)
    return {n for n in seen if "[" not in n}


@pytest.mark.parametrize("lock", [LOCK, RUNTIME_LOCK], ids=lambda p: p.name)
def test_every_pin_has_hashes(lock) -> None:
    pins = read_lock(lock)
    assert len(pins) > 20
    unhashed = sorted(name for name, (_, hashes) in pins.items() if not hashes)
    assert unhashed == [], f"{lock.name}: pins without --hash: {unhashed}"


def test_the_parser_refuses_a_pin_without_its_hash(tmp_path) -> None:
    broken = tmp_path / "requirements.lock"
    broken.write_text("alembic==1.20.1\n    # via kozel-arena\n", encoding="utf-8")
    (name, (version, hashes)), *_ = read_lock(broken).items()
    assert (name, version, hashes) == ("alembic", "1.20.1", frozenset())
    broken.write_text("alembic>=1.20\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="not a name==version"):
        read_lock(broken)


def test_the_runtime_lock_is_the_runtime_closure_with_the_same_pins_and_hashes() -> None:
    full, runtime = read_lock(LOCK), read_lock(RUNTIME_LOCK)
    differ = {n: (pin, full.get(n)) for n, pin in runtime.items() if full.get(n) != pin}
    assert differ == {}, "requirements-runtime.lock must repeat requirements.lock's pins"
    assert set(runtime) == _runtime_closure()
    dev = {
        canonicalize_name(Requirement(r).name)
        for r in PYPROJECT["project"]["optional-dependencies"]["dev"]
    }
    assert not dev & set(runtime), "no dev tool in the image"


def test_the_locks_follow_the_pins_of_pyproject() -> None:
    full = read_lock(LOCK)
    # The `train` extra (docs/training.md's worked example: PyTorch and its CUDA wheels) is
    # left out of the lock on purpose: make setup and CI do not install it.
    declared = PYPROJECT["project"]["dependencies"] + [
        r
        for extra, group in PYPROJECT["project"]["optional-dependencies"].items()
        if extra != "train"
        for r in group
    ]
    declared += PYPROJECT["build-system"]["requires"]
    for raw in declared:
        req = Requirement(raw)
        name = canonicalize_name(req.name)
        assert name in full, f"{name} is not pinned in requirements.lock"
        assert full[name][0] in req.specifier, f"{raw} but the lock pins {full[name][0]}"


def test_every_install_from_a_lock_checks_hashes() -> None:
    """make setup (and so .ci/run, whose make test depends on it) and every pip install of the
    Dockerfile: a lock is installed with --require-hashes, and nothing is installed by name."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("$(STAMP): ", 1)[1].split("\n\n", 1)[0]
    assert "pip install --quiet --require-hashes -r requirements.lock" in recipe
    assert "requirements.lock" in recipe.splitlines()[0], "a new lock must reinstall"
    # make test depends on the locked install (through `setup`, which also builds the engine)
    assert re.search(r"^test: .*\bsetup\b", makefile, re.MULTILINE)
    assert re.search(r"^setup: \$\(STAMP\)", makefile, re.MULTILINE)
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")

    installs = [
        cmd.strip()
        for stage in dockerfile_stages()[1:]
        for ins, args in stage
        if ins == "RUN"
        for cmd in args.split("&&")
        if "pip install" in cmd
    ]
    locks = {
        cmd.split(" -r ", 1)[1].split()[0] for cmd in installs if "--require-hashes -r " in cmd
    }
    assert locks == {LOCK.name, RUNTIME_LOCK.name}
    for cmd in installs:
        assert "--require-hashes -r " in cmd or re.search(r"--no-deps \S+\.whl$", cmd), cmd
