"""The analysis's compiled modules: the solvers and the deals of hidden cards, compiled with
mypyc by `make setup` in one run with the engine's (their calls into the engine's classes are
native ones), and their guard (:class:`kozel.engine.native.LinkedBuild`): a build loads only
when the compiled engine runs and the recorded digest is that of the analysis's sources and
the engine's as they are now. ``KOZEL_ENGINE_PURE=1`` forces pure Python here too.
"""

from __future__ import annotations

from pathlib import Path

from kozel.engine.native import LinkedBuild

PACKAGE = Path(__file__).parent
MODULES = ("solver", "endgame", "worlds")
"""The modules compiled, by name in ``kozel.analysis``; the others stay Python."""
BUILD = LinkedBuild("kozel.analysis", PACKAGE, MODULES, (*MODULES, "native"))
FOLDER = BUILD.folder
"""Where the build puts the extension modules (not in git)."""
wanted = BUILD.wanted
loaded = BUILD.loaded
