"""Loading the files under deploy/ and the checks several deploy tests share."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE_DIR = DEPLOY / "compose"
K8S_DIR = DEPLOY / "k8s"
ALERTS = COMPOSE_DIR / "alerts.yml"
DASHBOARD = COMPOSE_DIR / "grafana" / "dashboards" / "kozel.json"

_METRIC = re.compile(r"(?<![\w:])kozel_[a-z0-9_]+")
_SUFFIXES = ("_bucket", "_sum", "_count")


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def load_docs(path: Path) -> list[dict[str, Any]]:
    """Every non-empty document of a (multi-document) YAML file."""
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def k8s_files() -> list[Path]:
    """Every Kubernetes manifest under deploy/k8s (kustomization files excluded)."""
    return sorted(p for p in K8S_DIR.rglob("*.yaml") if p.name != "kustomization.yaml")


def k8s_objects() -> dict[tuple[str, str], dict[str, Any]]:
    """The objects of deploy/k8s by (kind, name)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for path in k8s_files():
        for doc in load_docs(path):
            key = (doc["kind"], doc["metadata"]["name"])
            assert key not in out, f"{key} defined twice"
            out[key] = doc
    return out


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listen_port(address: str) -> int:
    """The port of a ``host:port`` listen address."""
    return int(address.rsplit(":", 1)[1])


def metric_names(promql: str) -> set[str]:
    """The kozel_* metric names a PromQL expression reads, histogram suffixes kept."""
    return set(_METRIC.findall(promql))


def base_name(metric: str) -> str:
    """A series name without the _bucket/_sum/_count suffix of a histogram."""
    for suffix in _SUFFIXES:
        if metric.endswith(suffix):
            return metric[: -len(suffix)]
    return metric


def alert_rules() -> list[dict[str, Any]]:
    return [rule for group in load_yaml(ALERTS)["groups"] for rule in group["rules"]]


def dashboard_queries(node: Any = None) -> list[str]:
    """Every PromQL string of the Grafana dashboard: panel targets and template variables."""
    if node is None:
        node = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("expr", "query", "definition") and isinstance(value, str):
                found.append(value)
            else:
                found += dashboard_queries(value)
    elif isinstance(node, list):
        for item in node:
            found += dashboard_queries(item)
    return found


def queried_metrics() -> dict[str, set[str]]:
    """Every kozel_* metric the dashboard and the alert rules read, with where it is read."""
    used: dict[str, set[str]] = {}
    for query in dashboard_queries():
        for name in metric_names(query):
            used.setdefault(name, set()).add("dashboard")
    for rule in alert_rules():
        for name in metric_names(rule["expr"]):
            used.setdefault(name, set()).add(f"alert {rule['alert']}")
    return used


def check_config(config: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``kozel serve --config CONFIG --check-config`` as a process, with only the given
    ``KOZEL_*`` variables set."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KOZEL_")}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "kozel.cli.main",
            "serve",
            "--config",
            str(config),
            "--check-config",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**clean, **(env or {})},
    )


DOCKERFILE = DEPLOY / "docker" / "Dockerfile"


def dockerfile_stages(path: Path = DOCKERFILE) -> list[list[tuple[str, str]]]:
    """The Dockerfile as stages of (INSTRUCTION, arguments), continuation lines joined and
    comments dropped; instructions before the first FROM (global ARGs) form stage 0."""
    stages: list[list[tuple[str, str]]] = [[]]
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        instruction, _, args = (pending + line).partition(" ")
        pending = ""
        if instruction.upper() == "FROM":
            stages.append([])
        stages[-1].append((instruction.upper(), " ".join(args.split())))
    return stages


def final_stage_user() -> str:
    """The USER the image runs as (the last USER of the last stage)."""
    users = [args for ins, args in dockerfile_stages()[-1] if ins == "USER"]
    assert users, "the runtime stage sets no USER: it would run as root"
    return users[-1]


LOCK = ROOT / "requirements.lock"
RUNTIME_LOCK = ROOT / "requirements-runtime.lock"
_PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


def read_lock(path: Path) -> dict[str, tuple[str, frozenset[str]]]:
    """A uv lock file as {normalized name: (version, sha256 hashes)}. Asserts its shape: every
    requirement is ``name==version`` continued onto ``--hash`` lines, comments aside."""
    pins: dict[str, tuple[str, frozenset[str]]] = {}
    name = ""
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            name = ""  # a comment ends a requirement's hash lines
            continue
        where = f"{path.name}:{number}: {line}"
        if raw[0] != " ":
            found = _PIN.fullmatch(line.removesuffix("\\").strip())
            assert found, f"not a name==version requirement: {where}"
            name = re.sub(r"[-_.]+", "-", found.group(1)).lower()
            assert name not in pins, f"pinned twice: {where}"
            pins[name] = (found.group(2), frozenset())
            continue
        hashed = _HASH.fullmatch(line.removesuffix("\\").strip())
        assert hashed and name, f"not a hash of a requirement: {where}"
        version, hashes = pins[name]
        pins[name] = (version, hashes | {hashed.group(1)})
    return pins
