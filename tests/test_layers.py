"""The layers of the project, kept one-way by a walk over every import.

Each package of ``kozel`` may import itself and the packages listed for it below, nothing else.
Read from the bottom up: the engine (pure rules) and the generated protocol messages know
nothing of the project; the analysis (solvers, evaluators) stands on the engine alone; the
sans-I/O core and the bot SDK stand on them (the SDK's house bot on the analysis); ladder data and
policy sit below the referee; the referee below the web pages; tools and the command line,
the composition roots, on top. What a lower layer needs from a higher one (the house bots of
the SDK, the web pages) it is handed by a composition root (``kozel.cli``, a test).

Every ``import`` and ``from ... import`` of every module under ``engine/``, ``server/`` and
``clients/python/`` counts, at any depth: inside functions, under ``TYPE_CHECKING``, or as an
``importlib.import_module("kozel...")`` with a literal name. Besides the table, no circle may
join modules of the project, not even within one package; the engine and the core import no
library that does I/O, and gRPC is imported only at the referee's servicer edge.
"""

from __future__ import annotations

import ast
import graphlib
import itertools
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = (ROOT / "engine", ROOT / "server", ROOT / "clients" / "python")

_BASE = {"kozel.engine", "kozel.v1"}
_REFEREE = _BASE | {"kozel.core", "kozel.tournament", "kozel.ladder", "kozel.server"}

# package        -> what it may import besides itself
LAYERS: dict[str, frozenset[str]] = {
    "kozel.engine": frozenset(),  # the rules: pure, no I/O
    "kozel.v1": frozenset(),  # generated protocol messages
    "kozel.analysis": frozenset({"kozel.engine"}),  # solvers and evaluators: pure, no I/O
    "kozel.core": frozenset(_BASE),  # the referee's sans-I/O core
    "kozel.sdk": frozenset(_BASE | {"kozel.analysis"}),  # the Python bot SDK, a client
    # training environments and the in-process harness: the SDK's bots and encoding on the
    # referee's own seat protocol
    "kozel.env": frozenset(_BASE | {"kozel.core", "kozel.sdk"}),
    # tournaments: definitions, pairings, standings, crosstables (pure)
    "kozel.tournament": frozenset(_BASE | {"kozel.core"}),
    "kozel.ladder": frozenset(_BASE | {"kozel.core", "kozel.tournament"}),  # ladder data, policy
    "kozel.server": frozenset(_REFEREE - {"kozel.server"}),  # the referee (grpc.aio)
    # pages and the JSON API; a person's seat plays through the SDK's client
    "kozel.web": frozenset(_REFEREE | {"kozel.analysis", "kozel.sdk"}),
    "kozel.tools": frozenset(
        _REFEREE | {"kozel.analysis", "kozel.sdk", "kozel.env", "kozel.web"}
    ),  # benches
    "kozel.cli": frozenset(
        _REFEREE | {"kozel.analysis", "kozel.sdk", "kozel.env", "kozel.web", "kozel.tools"}
    ),  # `kozel`
}


@dataclass(frozen=True)
class Import:
    """One import statement's arrow: who imports what, and where it is written."""

    source: str
    target: str
    path: Path
    line: int

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def _modules() -> dict[str, Path]:
    """Every module of the project by dotted name (a package by its ``__init__``)."""
    found: dict[str, Path] = {}
    for src in SOURCES:
        for path in sorted((src / "kozel").rglob("*.py")):
            parts = list(path.relative_to(src).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The project module a dotted import name lands in (its longest known prefix)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in MODULES:
            return candidate
        parts.pop()
    return None


def _package_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _imports(module: str, path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    names: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([base] if base else []))
            # ``from a import b`` imports module ``a.b`` when there is one, else names of ``a``.
            names += [
                (f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base, node.lineno)
                for alias in node.names
            ]
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
        ):
            names.append((node.args[0].value, node.lineno))
    out = {}
    for name, line in names:
        target = _resolve(name) if name.startswith("kozel.") else None
        if target is not None and target != module:
            out[target, line] = Import(module, target, path, line)
    return list(out.values())


IMPORTS = [imp for module, path in MODULES.items() for imp in _imports(module, path)]


def test_the_walk_sees_the_project() -> None:
    """The walk finds every package and resolves the imports it must (a guard on the test)."""
    assert {_package_of(m) for m in MODULES} == set(LAYERS), "a package is missing from LAYERS"
    arrows = {(i.source, i.target) for i in IMPORTS}
    assert ("kozel.engine.deal", "kozel.engine.cards") in arrows
    assert ("kozel.server.runner", "kozel.v1.referee_pb2") in arrows
    assert ("kozel.sdk", "kozel.sdk.house") in arrows  # an __init__'s re-export


def test_the_layers_form_no_circle() -> None:
    """The table itself is one-way (else it would allow a circle between packages)."""
    graphlib.TopologicalSorter(LAYERS).prepare()  # raises CycleError naming the circle


def test_every_import_runs_down_the_layers() -> None:
    wrong = []
    for imp in IMPORTS:
        src, dst = _package_of(imp.source), _package_of(imp.target)
        if src != dst and dst not in LAYERS[src]:
            allowed = ", ".join(sorted(LAYERS[src])) or "nothing of the project"
            wrong.append(
                f"{imp.where()}: {imp.source} imports {imp.target} "
                f"({src} may import only {allowed})"
            )
    if wrong:
        pytest.fail("imports against the layers:\n" + "\n".join(wrong), pytrace=False)


def _cycles() -> list[list[Import]]:
    """Circles among modules, one at a time: each found is cut at one arrow and the walk
    goes on, so that every circle is reported (as the import lines that close it)."""
    graph: dict[str, dict[str, Import]] = {m: {} for m in MODULES}
    for imp in IMPORTS:
        graph[imp.source].setdefault(imp.target, imp)
    found = []
    while True:
        # graphlib reads the mapping as node -> predecessors: a module after its imports.
        try:
            graphlib.TopologicalSorter({m: set(t) for m, t in graph.items()}).prepare()
        except graphlib.CycleError as exc:
            ring = list(reversed(exc.args[1]))  # each module imports the next one
            arrows = [graph[a][b] for a, b in itertools.pairwise(ring)]
            found.append(arrows)
            del graph[arrows[0].source][arrows[0].target]
            continue
        return found


def test_no_import_circle() -> None:
    rings = _cycles()
    lines = [
        " -> ".join([ring[0].source] + [f"{i.target} ({i.where()})" for i in ring])
        for ring in rings
    ]
    if rings:
        pytest.fail("modules that import each other:\n" + "\n".join(lines), pytrace=False)


# Libraries that do I/O or keep time: the engine and the core take what happens (and the time)
# as arguments and return what to do, like h11; the asyncio side does the rest.
IO_LIBRARIES = frozenset(
    {
        "asyncio", "grpc", "http", "logging", "prometheus_client", "psycopg", "selectors",
        "socket", "sqlalchemy", "structlog", "subprocess", "threading", "time", "urllib",
    }
)  # fmt: skip
PURE_PACKAGES = ("kozel.engine", "kozel.analysis", "kozel.core", "kozel.env", "kozel.tournament")

# Within the referee, gRPC (its status codes, its servicer context) belongs to the edge: the
# servicers, the server's assembly and its interceptors. The lobby, sessions, runners and hubs
# raise the kinds of ``kozel.server.errors``; ``kozel.server.status`` maps them.
GRPC_EDGE = frozenset(
    f"kozel.server.{name}"
    for name in (
        "admin_service", "app", "ladder_service", "limits", "match_service", "reflection",
        "service", "status",
    )
)  # fmt: skip


def _libraries(path: Path) -> list[tuple[str, int]]:
    """The top-level names of the absolute imports in ``path``, with their lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name.split(".")[0], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.module.split(".")[0], node.lineno))
    return found


def test_the_pure_layers_do_no_io() -> None:
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: {module} imports {name}"
        for module, path in MODULES.items()
        if _package_of(module) in PURE_PACKAGES
        for name, line in _libraries(path)
        if name in IO_LIBRARIES
    ]
    if wrong:
        pytest.fail("I/O in a pure layer:\n" + "\n".join(wrong), pytrace=False)


def test_grpc_is_met_only_at_the_referees_edge() -> None:
    assert set(MODULES) >= GRPC_EDGE, "a module of GRPC_EDGE no longer exists"
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: {module} imports grpc"
        for module, path in MODULES.items()
        if _package_of(module) in ("kozel.server", "kozel.ladder", *PURE_PACKAGES)
        and module not in GRPC_EDGE
        for name, line in _libraries(path)
        if name == "grpc"
    ]
    if wrong:
        pytest.fail("gRPC away from the servicer edge:\n" + "\n".join(wrong), pytrace=False)


def test_the_library_walk_sees_imports(tmp_path: Path) -> None:
    path = tmp_path / "probe.py"
    path.write_text(
        "import grpc.aio\nfrom asyncio import sleep\nfrom . import x\ndef f():\n    import time\n",
        encoding="utf-8",
    )
    assert sorted(_libraries(path)) == [("asyncio", 2), ("grpc", 1), ("time", 5)]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import kozel.server.runner\n", "kozel.server.runner"),
        ("from kozel.server import runner\n", "kozel.server.runner"),
        ("from kozel.server.runner import MatchRunner\n", "kozel.server.runner"),
        ("from kozel.engine import Ruleset\n", "kozel.engine"),
        ("from ..server import runner\n", "kozel.server.runner"),
        ("from . import deal\n", "kozel.engine.deal"),
        ("def f():\n    from kozel.server import runner\n", "kozel.server.runner"),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import kozel.server.runner\n",
            "kozel.server.runner",
        ),
        ("importlib.import_module('kozel.server.runner')\n", "kozel.server.runner"),
    ],
)
def test_the_walk_reads_every_form_of_import(tmp_path: Path, source: str, expected: str) -> None:
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf-8")
    got = {i.target for i in _imports("kozel.engine.probe", path)}
    assert got == {expected}
