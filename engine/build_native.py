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
import secrets
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


def _compile(with_sdk: bool) -> None:
    """mypyc, then the C compiler: the extension modules in ``BUILD / "lib"`` (the engine's
    and, ``with_sdk``, the SDK's)."""
    from mypyc.build import mypycify
    from setuptools import Distribution

    os.chdir(ROOT)  # mypy reads pyproject.toml's settings, as `make lint` does
    paths = [f"engine/kozel/engine/{m}.py" for m in native.MODULES]
    sdk_paths = [f"clients/python/kozel/sdk/{m}.py" for m in sdk_native.MODULES] if with_sdk else []
    groups: list[tuple[list[str], str | None]] = [(paths, GROUP)]
    if with_sdk:
        groups.append((sdk_paths, SDK_GROUP))
    options = ["--no-warn-unused-configs", "--cache-dir", str(BUILD / "mypy-cache")]
    extensions = mypycify(
        [*options, *paths, *sdk_paths],
        separate=groups,
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


def _install(built: Path, folder: Path, digest: str, build_id: str | None = None) -> None:
    """The extension modules of ``built`` into ``folder``, the digest last."""
    folder.mkdir()
    for path in sorted(built.glob("*.so")):
        shutil.copy2(path, folder / path.name)
    if build_id is not None:
        (folder / native.BUILD_ID_FILE).write_text(build_id + "\n")
    (folder / native.DIGEST_FILE).write_text(digest + "\n")


_CHECK_ENGINE = "import kozel.engine as e; raise SystemExit(not e.NATIVE)"
_CHECK = (
    "import kozel.engine as e, kozel.sdk.native as s\n"
    "raise SystemExit(not e.NATIVE and 'engine' or not s.loaded() and 'sdk')"
)


def _sdk_digest(build_id: str) -> str:
    return sdk_native.digest_of(
        native.source_digest(),
        native.source_digest(sdk_native.PACKAGE, sdk_native.SOURCES),
        build_id,
    )


def _run_compiler(with_sdk: bool) -> bool:
    shutil.rmtree(BUILD / "lib", ignore_errors=True)
    with LOG.open("a") as log:
        done = subprocess.run(
            [sys.executable, __file__, "--inner" if with_sdk else "--inner-engine"],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    return done.returncode == 0


def build() -> tuple[str | None, bool]:
    """Build into the two ``_native`` folders (the engine's alone if the SDK's fails to
    compile): why it failed or None, and whether the SDK's search was built."""
    why = _missing_toolchain()
    if why:
        return why, False
    digest = native.source_digest()
    build_id = secrets.token_hex(16)
    sdk_digest = _sdk_digest(build_id)
    BUILD.mkdir(parents=True, exist_ok=True)
    LOG.write_text("")
    with_sdk = _run_compiler(True)
    if not with_sdk and not _run_compiler(False):
        return f"the compiler failed (see {LOG.relative_to(ROOT)})", False
    lib = BUILD / "lib" / "kozel"
    if not list((lib / "engine").glob("*.so")) or (
        with_sdk and not list((lib / "sdk").glob("*.so"))
    ):
        return f"no extension modules were built (see {LOG.relative_to(ROOT)})", False
    if native.source_digest() != digest or _sdk_digest(build_id) != sdk_digest:
        return "the sources changed during the build", False
    _install(lib / "engine", native.FOLDER, digest, build_id)
    if with_sdk:
        _install(lib / "sdk", sdk_native.FOLDER, sdk_digest)
    roots = [ROOT / "engine", ROOT / "clients" / "python"]
    check = subprocess.run(
        [sys.executable, "-c", _CHECK if with_sdk else _CHECK_ENGINE],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, roots)), native.PURE_ENV: ""},
        capture_output=True,
        text=True,
    )
    if check.returncode != 0:
        return f"the compiled modules do not load: {check.stderr.strip()[-300:]}", False
    return None, with_sdk


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--strict", action="store_true", help="exit 1 if the build fails")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--inner-engine", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner or args.inner_engine:
        _compile(with_sdk=args.inner)
        return 0
    folders = (native.FOLDER, sdk_native.FOLDER)
    for folder in folders:  # a failed build leaves no old one
        shutil.rmtree(folder, ignore_errors=True)
    for stale in ("lib", "c", "mypy-cache"):  # mypyc's incremental mode can keep an old group's C
        shutil.rmtree(BUILD / stale, ignore_errors=True)
    start = time.monotonic()
    why, with_sdk = build()
    if why is not None:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
        print(f"engine: not compiled, {why}; the engine and the SDK's search run as pure Python")
        return 1 if args.strict else 0
    took = time.monotonic() - start
    if not with_sdk:
        print(
            f"engine: {len(native.MODULES)} modules compiled with mypyc in {took:.0f} s; the"
            f" SDK's search did not compile (see {LOG.relative_to(ROOT)}) and runs as pure Python"
        )
        return 1 if args.strict else 0
    print(
        f"engine: {len(native.MODULES)} modules and the SDK's {len(sdk_native.MODULES)}"
        f" compiled with mypyc in {took:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
