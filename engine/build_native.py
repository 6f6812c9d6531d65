"""Compile the engine's hot modules with mypyc (``make setup`` runs this after the install),
and with them the SDK's search (``kozel.sdk.playout``), the analysis's solvers
(``kozel.analysis.solver`` and ``kozel.analysis.endgame``) and the referee's seat protocol core
(``kozel.core.protocol`` and the modules it runs on).

The extension modules go to ``engine/kozel/engine/_native/``,
``clients/python/kozel/sdk/_native/``, ``engine/kozel/analysis/_native/`` and
``server/kozel/core/_native/`` (not in git), each with, last, the digest of the sources they were
built from; each package loads them only while that digest matches the sources (see
``kozel.engine.native``). They are built in one run, as four groups: the SDK's, the analysis's
and the core's calls into the engine's classes are native ones (about a third faster than
through Python), so their builds are linked to one engine build and load only on it. Without a
C compiler or the Python headers, or if anything fails, this prints one line and the engine
runs as pure Python: the exit status is 0 either way (when the groups fail, each linked one is
tried alone with the engine's, then the engine's alone).
``--strict`` makes a failed build exit 1 (for checking the build itself). The compiler's output
goes to ``build/native/build.log``.
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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kozel.engine.native import LinkedBuild

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
LINKS = (  # the builds linked to the engine's: the SDK's search, the analysis, the referee's core
    _load(ROOT / "clients" / "python" / "kozel" / "sdk" / "native.py", "_kozel_sdk_native").BUILD,
    _load(ROOT / "engine" / "kozel" / "analysis" / "native.py", "_kozel_analysis_native").BUILD,
    _load(ROOT / "server" / "kozel" / "core" / "native.py", "_kozel_core_native").BUILD,
)
ENGINE_GROUP = "kozel.engine"
LABELS = {
    "kozel.sdk": "the SDK's search",
    "kozel.analysis": "the analysis",
    "kozel.core": "the referee's core",
}


def _paths(package: Path, modules: tuple[str, ...]) -> list[str]:
    """The sources of ``package``'s ``modules``, relative to the repository."""
    return [str((package / f"{m}.py").relative_to(ROOT)) for m in modules]


def _built(package: Path) -> Path:
    """Where the build puts ``package``'s extension modules (``lib/kozel/<name>``)."""
    return BUILD / "lib" / package.relative_to(package.parents[1])


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


def _compile(names: list[str]) -> None:
    """mypyc, then the C compiler: the extension modules in ``BUILD / "lib"`` (the engine's
    and those of the :data:`LINKS` named), one group (one shared library, whose name every
    module's stub loads) per package."""
    from mypyc.build import mypycify
    from setuptools import Distribution

    os.chdir(ROOT)  # mypy reads pyproject.toml's settings, as `make lint` does
    groups: list[tuple[list[str], str | None]] = [
        (_paths(native.PACKAGE, native.MODULES), ENGINE_GROUP)
    ]
    groups += [
        (_paths(link.package, link.modules), link.name) for link in LINKS if link.name in names
    ]
    options = ["--no-warn-unused-configs", "--cache-dir", str(BUILD / "mypy-cache")]
    extensions = mypycify(
        [*options, *(path for paths, _ in groups for path in paths)],
        separate=[(paths, f"{name}._native_lib") for paths, name in groups],
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


_CHECK = (
    "import importlib, sys, kozel.engine as e\n"
    "if not e.NATIVE: sys.exit('the engine')\n"
    "for name in sys.argv[1:]:\n"
    "    if not importlib.import_module(name + '.native').loaded(): sys.exit(name)\n"
)


def _link_digests(build_id: str) -> list[str]:
    engine = native.source_digest()
    return [link.digest(engine, build_id) for link in LINKS]


def _run_compiler(links: tuple[LinkedBuild, ...]) -> bool:
    shutil.rmtree(BUILD / "lib", ignore_errors=True)
    with LOG.open("a") as log:
        done = subprocess.run(
            [sys.executable, __file__, "--inner", *(link.name for link in links)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    return done.returncode == 0


def build() -> tuple[str | None, tuple[LinkedBuild, ...]]:
    """Build into the ``_native`` folders: the engine's with every linked one, or if that
    fails to compile with each linked one alone, or alone. Why it failed or None, and the
    linked builds made."""
    why = _missing_toolchain()
    if why:
        return why, ()
    digest = native.source_digest()
    build_id = secrets.token_hex(16)
    link_digests = _link_digests(build_id)
    BUILD.mkdir(parents=True, exist_ok=True)
    LOG.write_text("")
    tries = [LINKS, *((link,) for link in LINKS), ()]
    built = next((t for t in tries if _run_compiler(t)), None)
    if built is None:
        return f"the compiler failed (see {LOG.relative_to(ROOT)})", ()
    links = [(k, d) for k, d in zip(LINKS, link_digests, strict=True) if k in built]
    if any(
        not list(_built(p).glob("*.so")) for p in [native.PACKAGE, *(k.package for k, _ in links)]
    ):
        return f"no extension modules were built (see {LOG.relative_to(ROOT)})", ()
    if native.source_digest() != digest or _link_digests(build_id) != link_digests:
        return "the sources changed during the build", ()
    _install(_built(native.PACKAGE), native.FOLDER, digest, build_id)
    for link, link_digest in links:
        _install(_built(link.package), link.folder, link_digest)
    roots = [ROOT / "engine", ROOT / "server", ROOT / "clients" / "python"]
    check = subprocess.run(
        [sys.executable, "-c", _CHECK, *(link.name for link, _ in links)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, roots)), native.PURE_ENV: ""},
        capture_output=True,
        text=True,
    )
    if check.returncode != 0:
        return f"the compiled modules do not load: {check.stderr.strip()[-300:]}", ()
    return None, built


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--strict", action="store_true", help="exit 1 if the build fails")
    parser.add_argument("--inner", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner is not None:
        _compile(args.inner)
        return 0
    folders = (native.FOLDER, *(link.folder for link in LINKS))
    for folder in folders:  # a failed build leaves no old one
        shutil.rmtree(folder, ignore_errors=True)
    for stale in ("lib", "c", "mypy-cache"):  # mypyc's incremental mode can keep an old group's C
        shutil.rmtree(BUILD / stale, ignore_errors=True)
    start = time.monotonic()
    why, built = build()
    everything = " and ".join(["the engine", *LABELS.values()])
    if why is not None:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
        print(f"engine: not compiled, {why}; {everything} run as pure Python")
        return 1 if args.strict else 0
    took = time.monotonic() - start
    parts = [f"{len(native.MODULES)} modules"]
    parts += [f"{LABELS[link.name]} ({len(link.modules)})" for link in built]
    print(f"engine: {', '.join(parts)} compiled with mypyc in {took:.0f} s")
    failed = [LABELS[link.name] for link in LINKS if link not in built]
    if failed:
        print(
            f"engine: {' and '.join(failed)} did not compile (see {LOG.relative_to(ROOT)})"
            f" and run{'' if len(failed) > 1 else 's'} as pure Python"
        )
        return 1 if args.strict else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
