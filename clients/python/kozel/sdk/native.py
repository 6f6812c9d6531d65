"""The SDK's compiled search: which of its modules `make setup` compiles with mypyc (the playouts
of ``ismcts``; its solvers are :mod:`kozel.analysis`'s, compiled there), and their guard
(:class:`kozel.engine.native.LinkedBuild`): they are built in one run with the engine's and call
its classes natively, so a build of them loads only when the compiled engine runs and the
recorded digest is that of the SDK's sources and the engine's as they are now.
``KOZEL_ENGINE_PURE=1`` forces pure Python here too.
"""

from __future__ import annotations

from pathlib import Path

from kozel.engine.native import LinkedBuild

PACKAGE = Path(__file__).parent
MODULES = ("playout",)
"""The modules compiled, by name in ``kozel.sdk``; the others stay Python."""
BUILD = LinkedBuild("kozel.sdk", PACKAGE, MODULES, (*MODULES, "house", "bot", "native"))
FOLDER = BUILD.folder
"""Where the build puts the extension modules (not in git)."""
wanted = BUILD.wanted
loaded = BUILD.loaded
