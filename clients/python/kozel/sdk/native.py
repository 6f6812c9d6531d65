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


def digest_of(engine_digest: str, sdk_digest: str) -> str:
    """The digest a build records: of the engine's sources and of the SDK's."""
    return hashlib.sha256(f"{engine_digest}\0{sdk_digest}".encode()).hexdigest()


def source_digest() -> str:
    """:func:`digest_of` the sources on disk."""
    from kozel.engine import native as engine

    return digest_of(engine.source_digest(), engine.source_digest(PACKAGE))


def build_is_current() -> bool:
    """True when :data:`FOLDER` holds a build of the sources as they are now."""
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
