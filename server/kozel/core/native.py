"""The core's compiled modules: the seat protocol's hot path, compiled with mypyc by `make setup`
in one run with the engine's (its calls into the engine's classes are native ones), and their
guard (:class:`kozel.engine.native.LinkedBuild`): a build loads only when the compiled engine
runs and the recorded digest is that of the core's sources and the engine's as they are now.
The exceptions (:mod:`kozel.core.errors`), the hooks the runner subclasses
(:mod:`kozel.core.hooks`) and the clock's settings stay Python. ``KOZEL_ENGINE_PURE=1`` forces
pure Python here too.
"""

from __future__ import annotations

from pathlib import Path

from kozel.engine.native import LinkedBuild

PACKAGE = Path(__file__).parent
MODULES = ("protocol", "requests", "banks", "steps", "penalties", "messages", "convert")
"""The modules compiled, by name in ``kozel.core``; the others stay Python."""
BUILD = LinkedBuild("kozel.core", PACKAGE, MODULES, None)  # every source of the core
FOLDER = BUILD.folder
"""Where the build puts the extension modules (not in git)."""
wanted = BUILD.wanted
loaded = BUILD.loaded
