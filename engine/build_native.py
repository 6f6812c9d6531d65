"""Compile the engine's hot modules with mypyc (``make setup`` runs this after the install),
and with them the SDK's search (``kozel.sdk.playout`` and ``kozel.sdk.endgame``).

The extension modules go to ``engine/kozel/engine/_native/`` and
``clients/python/kozel/sdk/_native/`` (not in git), each with, last, the digest of the sources
they were built from; ``kozel.engine`` and ``kozel.sdk`` load them only while that digest
matches the sources (see ``kozel.engine.native`` and ``kozel.sdk.native``). The two are built in
one run, as two groups: the SDK's calls into the engine's classes are native ones (about a third
faster than through Python), so its build is of one engine build and loads only on it. Without a
C compiler or the Python headers, or if anything fails, this prints one line and the engine runs
as pure Python: the exit status is 0 either way. ``--strict`` makes a failed build exit 1 (for
checking the build itself). The compiler's output goes to ``build/native/build.log``.
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


def _load(path: Path, name: str) -> ModuleType:
    """The module at ``path``, loaded alone (not the package whose build it guards)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


native = _load(ROOT / "engine" / "kozel" / "engine" / "native.py", "_kozel_engine_native")
sdk_native = _load(ROOT / "clients" / "python" / "kozel" / "sdk" / "native.py", "_kozel_sdk_native")

GROUP = "kozel.engine._native_lib"  # the shared library every compiled engine module's stub loads
SDK_GROUP = "kozel.sdk._native_lib"  # the same for the SDK's


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
    sdk_paths = [f"clients/python/kozel/sdk/{m}.py" for m in sdk_native.MODULES]
    options = ["--no-warn-unused-configs", "--cache-dir", str(BUILD / "mypy-cache")]
    extensions = mypycify(
        [*options, *paths, *sdk_paths],
        separate=[(paths, GROUP), (sdk_paths, SDK_GROUP)],
        target_dir=str(BUILD / "c"),
        opt_level="3",
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


def _install(built: Path, folder: Path, digest: str) -> None:
    """The extension modules of ``built`` into ``folder``, the digest last."""
    folder.mkdir()
    for path in sorted(built.glob("*.so")):
        shutil.copy2(path, folder / path.name)
    (folder / native.DIGEST_FILE).write_text(digest + "\n")


_CHECK = (
    "import kozel.engine as e, kozel.sdk.native as s\n"
    "raise SystemExit(not e.NATIVE and 'engine' or not s.loaded() and 'sdk')"
)


def build() -> str | None:
    """Build into the two ``_native`` folders; None on success, else why it failed."""
    why = _missing_toolchain()
    if why:
        return why
    digest = native.source_digest()
    sdk_digest = sdk_native.digest_of(digest, native.source_digest(sdk_native.PACKAGE))
    BUILD.mkdir(parents=True, exist_ok=True)
    with LOG.open("w") as log:
        done = subprocess.run(
            [sys.executable, __file__, "--inner"], stdout=log, stderr=subprocess.STDOUT
        )
    if done.returncode != 0:
        return f"the compiler failed (see {LOG.relative_to(ROOT)})"
    lib = BUILD / "lib" / "kozel"
    if not list((lib / "engine").glob("*.so")) or not list((lib / "sdk").glob("*.so")):
        return f"no extension modules were built (see {LOG.relative_to(ROOT)})"
    if (
        native.source_digest() != digest
        or sdk_native.digest_of(native.source_digest(), native.source_digest(sdk_native.PACKAGE))
        != sdk_digest
    ):
        return "the sources changed during the build"
    _install(lib / "engine", native.FOLDER, digest)
    _install(lib / "sdk", sdk_native.FOLDER, sdk_digest)
    roots = [ROOT / "engine", ROOT / "clients" / "python"]
    check = subprocess.run(
        [sys.executable, "-c", _CHECK],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, roots)), native.PURE_ENV: ""},
        capture_output=True,
        text=True,
    )
    if check.returncode != 0:
        return f"the compiled modules do not load: {check.stderr.strip()[-300:]}"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--strict", action="store_true", help="exit 1 if the build fails")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        _compile()
        return 0
    folders = (native.FOLDER, sdk_native.FOLDER)
    for folder in folders:  # a failed build leaves no old one
        shutil.rmtree(folder, ignore_errors=True)
    for stale in ("lib", "c", "mypy-cache"):  # mypyc's incremental mode can keep an old group's C
        shutil.rmtree(BUILD / stale, ignore_errors=True)
    start = time.monotonic()
    why = build()
    if why is not None:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
        print(f"engine: not compiled, {why}; the engine runs as pure Python")
        return 1 if args.strict else 0
    took = time.monotonic() - start
    print(
        f"engine: {len(native.MODULES)} modules and the SDK's {len(sdk_native.MODULES)}"
        f" compiled with mypyc in {took:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
