"""The SDK's compiled search: which of its modules `make setup` compiles with mypyc (the playouts
and the endgame solver of ``ismcts``), and their guard, the engine's
(:mod:`kozel.engine.native`) made stricter. They are built in one run with the engine's and call
its classes natively, so a build of them is linked to that engine build: it loads only when the
compiled engine runs and the recorded digest is that of the SDK's sources and the engine's as
they are now. ``KOZEL_ENGINE_PURE=1`` forces pure Python here too. This module imports nothing
of the engine at import time (``engine/build_native.py`` loads it alone).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE = Path(__file__).parent
FOLDER = PACKAGE / "_native"
"""Where the build puts the extension modules (not in git)."""
DIGEST_FILE = "SOURCES.sha256"
MODULES = ("playout", "endgame")
"""The modules compiled, by name in ``kozel.sdk``; the others stay Python."""
SOURCES = (*MODULES, "house", "bot", "native")
"""The modules whose sources the build depends on: the compiled ones and what they import (an
edit of another, ``ismcts`` say, leaves the build current)."""


def digest_of(engine_digest: str, sdk_digest: str, engine_build: str) -> str:
    """The digest a build records: of the engine's sources, of the SDK's :data:`SOURCES`, and
    of the engine build it is linked to (its ``BUILD_ID``)."""
    return hashlib.sha256(f"{engine_digest}\0{sdk_digest}\0{engine_build}".encode()).hexdigest()


def source_digest() -> str:
    """:func:`digest_of` the sources on disk and the engine build in place."""
    from kozel.engine import native as engine

    try:
        build = (engine.FOLDER / engine.BUILD_ID_FILE).read_text().strip()
    except OSError:
        build = ""
    return digest_of(engine.source_digest(), engine.source_digest(PACKAGE, SOURCES), build)


def build_is_current() -> bool:
    """True when :data:`FOLDER` holds a build of the sources as they are now, linked to the
    engine build in place."""
    try:
        recorded = (FOLDER / DIGEST_FILE).read_text().strip()
    except OSError:
        return False
    return recorded == source_digest()


def wanted() -> bool:
    """Whether the compiled modules should be loaded: the compiled engine runs (so no pure
    override) and the build is current."""
    import kozel.engine

    return kozel.engine.NATIVE and build_is_current()


def loaded() -> bool:
    """True when the imported ``kozel.sdk.playout`` is the compiled one."""
    from kozel.sdk import playout

    return Path(playout.__file__ or "").parent == FOLDER
