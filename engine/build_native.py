"""Compile the engine's hot modules with mypyc (``make setup`` runs this after the install).

The extension modules go to ``engine/kozel/engine/_native/`` (not in git) with, last, the
digest of the sources they were built from; ``kozel.engine`` loads them only while that digest
matches the sources (see ``kozel.engine.native``). Without a C compiler or the Python headers,
or if anything fails, this prints one line and the engine runs as pure Python: the exit status
is 0 either way. ``--strict`` makes a failed build exit 1 (for checking the build itself).
The compiler's output goes to ``build/native/build.log``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "native"
LOG = BUILD / "build.log"


def _load_native() -> ModuleType:
    """``kozel.engine.native`` of this checkout, loaded alone (not the engine it guards)."""
    spec = importlib.util.spec_from_file_location(
        "_kozel_engine_native", ROOT / "engine" / "kozel" / "engine" / "native.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


native = _load_native()

GROUP = "kozel.engine._native_lib"  # the shared library every compiled module's stub loads


def _missing_toolchain() -> str | None:
    """Why no extension can be built here, or None."""
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None:
        return f"no C compiler ({cc})"
    include = Path(sysconfig.get_path("include"))
    if not (include / "Python.h").exists():
        return f"no Python headers ({include}/Python.h)"
    try:
        import mypyc  # noqa: F401
        import setuptools  # type: ignore[import-untyped]  # noqa: F401
    except ImportError as e:
        return f"{e.name} is not installed"
    return None


def _compile() -> None:
    """mypyc, then the C compiler: the extension modules in ``BUILD / "lib"``."""
    from mypyc.build import mypycify
    from setuptools import Distribution

    os.chdir(ROOT)  # mypy reads pyproject.toml's settings, as `make lint` does
    paths = [f"engine/kozel/engine/{m}.py" for m in native.MODULES]
    options = ["--no-warn-unused-configs", "--cache-dir", str(BUILD / "mypy-cache")]
    extensions = mypycify(
        [*options, *paths], group_name=GROUP, target_dir=str(BUILD / "c"), opt_level="3"
    )
    dist = Distribution({"name": "kozel-engine-native", "ext_modules": extensions})
    dist.script_args = [
        "build_ext",
        "--build-lib",
        str(BUILD / "lib"),
        "--build-temp",
        str(BUILD / "obj"),
        "--parallel",
        "2",
    ]
    dist.parse_command_line()
    dist.run_commands()


def build() -> str | None:
    """Build into ``_native``; None on success, else why it failed."""
    why = _missing_toolchain()
    if why:
        return why
    digest = native.source_digest()
    BUILD.mkdir(parents=True, exist_ok=True)
    with LOG.open("w") as log:
        done = subprocess.run(
            [sys.executable, __file__, "--inner"], stdout=log, stderr=subprocess.STDOUT
        )
    if done.returncode != 0:
        return f"the compiler failed (see {LOG.relative_to(ROOT)})"
    built = sorted((BUILD / "lib" / "kozel" / "engine").glob("*.so"))
    if not built:
        return f"no extension modules were built (see {LOG.relative_to(ROOT)})"
    native.FOLDER.mkdir()
    for path in built:
        shutil.copy2(path, native.FOLDER / path.name)
    if native.source_digest() != digest:
        return "the sources changed during the build"
    (native.FOLDER / native.DIGEST_FILE).write_text(digest + "\n")
    check = subprocess.run(
        [sys.executable, "-c", "import kozel.engine as e; raise SystemExit(not e.NATIVE)"],
        env={**os.environ, "PYTHONPATH": str(ROOT / "engine"), native.PURE_ENV: ""},
        capture_output=True,
        text=True,
    )
    if check.returncode != 0:
        return f"the compiled engine does not load: {check.stderr.strip()[-300:]}"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--strict", action="store_true", help="exit 1 if the build fails")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        _compile()
        return 0
    shutil.rmtree(native.FOLDER, ignore_errors=True)  # a failed build leaves no old one
    shutil.rmtree(BUILD / "lib", ignore_errors=True)
    start = time.monotonic()
    why = build()
    if why is not None:
        shutil.rmtree(native.FOLDER, ignore_errors=True)
        print(f"engine: not compiled, {why}; the engine runs as pure Python")
        return 1 if args.strict else 0
    took = time.monotonic() - start
    print(f"engine: {len(native.MODULES)} modules compiled with mypyc in {took:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
