"""The compiled engine: which modules `make setup` compiles with mypyc, and the guard that lets a
build run only on the very sources it was built from.

The build (``engine/build_native.py``) writes extension modules into the ``_native`` folder
next to this file and, last, the digest of the sources it compiled (:func:`source_digest`).
``kozel.engine`` puts that folder in front of its ``__path__`` only when the recorded digest
is the digest of the sources now on disk, so an edited source always runs as written (pure
Python) until it is built again. ``KOZEL_ENGINE_PURE=1`` forces pure Python.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from collections.abc import Iterable
from pathlib import Path

PACKAGE = Path(__file__).parent
FOLDER = PACKAGE / "_native"
"""Where the build puts the extension modules (not in git)."""
DIGEST_FILE = "SOURCES.sha256"
"""The file in :data:`FOLDER` holding the digest of the sources the build compiled."""
MODULES = ("cards", "actions", "tables", "deal", "players", "observation", "scoring", "match")
"""The modules compiled (the hot path of play and search), by name in ``kozel.engine``; the
others stay Python."""
PURE_ENV = "KOZEL_ENGINE_PURE"
BUILD_ID_FILE = "BUILD_ID"
"""A file in :data:`FOLDER` naming this build (random): builds linked to it record it."""


def source_digest(package: Path = PACKAGE, names: Iterable[str] | None = None) -> str:
    """SHA-256 over the name and bytes of every ``.py`` file of the package (or of the modules
    ``names``): a change to any of them (the compiled ones and those whose types they were
    compiled against) changes it."""
    h = hashlib.sha256()
    paths = package.glob("*.py") if names is None else (package / f"{n}.py" for n in names)
    for path in sorted(paths):
        data = path.read_bytes()
        h.update(f"{path.name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def build_is_current(package: Path = PACKAGE) -> bool:
    """True when ``package``'s ``_native`` folder holds a build of its sources as they are now."""
    return _read(package / "_native" / DIGEST_FILE) == source_digest(package)


def current_build(package: Path = PACKAGE) -> tuple[str, str] | None:
    """The source digest and build id of the build in ``package``'s ``_native`` folder when it
    should be loaded (a current build and no pure override), else None."""
    if os.environ.get(PURE_ENV, "") in ("1", "true", "yes"):
        return None
    folder = package / "_native"
    digest = source_digest(package)
    if _read(folder / DIGEST_FILE) != digest:
        return None
    return digest, _read(folder / BUILD_ID_FILE) or ""


def wanted(package: Path = PACKAGE) -> bool:
    """Whether the compiled modules should be loaded: a current build and no pure override."""
    return current_build(package) is not None


LOADED: tuple[str, str] | None = None
"""The source digest and build id of the compiled engine this process runs, as they were when
``kozel.engine`` loaded it (it sets this); None while it runs pure Python. Builds linked to it
are checked against these, not against the files on disk now, which a rebuild or an edit may
have changed since."""


def loaded() -> bool:
    """True when the imported ``kozel.engine.deal`` is the compiled one."""
    from kozel.engine import deal

    return Path(deal.__file__ or "").parent == FOLDER


class LinkedBuild:
    """The compiled modules of another package (the SDK's search, the referee's core), built in
    one run with the engine's so that their calls into the engine's classes are native ones
    (about a third faster than through Python). Such a build is linked to that engine build: it
    loads only when the compiled engine runs and the digest it recorded is that of the engine's
    sources, of the package's :attr:`sources` and of the engine build this process loaded."""

    def __init__(
        self, name: str, package: Path, modules: tuple[str, ...], sources: tuple[str, ...] | None
    ) -> None:
        self.name = name  # the package's import name, e.g. "kozel.sdk"
        self.package = package
        self.folder = package / "_native"
        self.modules = modules  # the modules compiled; the package's others stay Python
        # the modules whose sources the build depends on (None: all of the package's): the
        # compiled ones and what they import, so that an edit of another leaves the build current
        self.sources = sources

    def digest(self, engine_digest: str, engine_build: str) -> str:
        """The digest a build records, for the engine sources' digest and build id given."""
        own = source_digest(self.package, self.sources)
        return hashlib.sha256(f"{engine_digest}\0{own}\0{engine_build}".encode()).hexdigest()

    def wanted(self) -> bool:
        """Whether the compiled modules should be loaded: the compiled engine runs in this
        process (:data:`LOADED`) and this build was linked to that very build."""
        engine = LOADED
        if engine is None:
            return False
        return _read(self.folder / DIGEST_FILE) == self.digest(*engine)

    def loaded(self) -> bool:
        """True when the imported first of :attr:`modules` is the compiled one."""
        module = importlib.import_module(f"{self.name}.{self.modules[0]}")
        return Path(module.__file__ or "").parent == self.folder
