"""deploy/docker: the Dockerfile's key instructions, its build context (the root
.dockerignore), and the builder's steps run here as far as they can be without Docker: the
runtime requirement list, the lock's pins, and a wheel built from exactly the files the build
context lets in."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.deploy.deployfiles import (
    DEPLOY,
    ROOT,
    check_config,
    dockerfile_stages,
    final_stage_user,
    listen_port,
    load_yaml,
)

DEFAULT_CONFIG = DEPLOY / "docker" / "referee.yaml"


def _instructions(stage: int) -> list[tuple[str, str]]:
    return dockerfile_stages()[stage]


def _exec_form(args: str) -> list[str]:
    """The JSON array of an exec-form instruction (after any --options)."""
    return json.loads(args[args.index("[") :])


def _copies() -> list[tuple[str, list[str], str]]:
    """Every COPY of the Dockerfile from the build context: (stage name, sources, dest)."""
    out = []
    for stage in dockerfile_stages()[1:]:
        name = stage[0][1].split()[-1]
        for ins, args in stage:
            if ins == "COPY" and "--from=" not in args:
                *sources, dest = [a for a in args.split() if not a.startswith("--")]
                out.append((name, sources, dest))
    return out


def _ignore_rules() -> list[tuple[bool, re.Pattern[str]]]:
    """The root .dockerignore as (excludes, pattern), in order; the last match wins, and a
    pattern matches a path or any folder above it (as Docker does)."""
    rules = []
    for raw in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        include = line.startswith("!")
        pattern = line.lstrip("!").strip("/")
        regex = ""
        for part in re.split(r"(\*\*|\*|\?)", pattern):
            regex += {"**": ".*", "*": "[^/]*", "?": "[^/]"}.get(part, re.escape(part))
        rules.append((not include, re.compile(regex + "$")))
    return rules


def _in_context(rel: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    parts = rel.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    excluded = False
    for excludes, regex in rules:
        if any(regex.match(p) for p in prefixes):
            excluded = excludes
    return not excluded


def test_two_stages_on_the_same_python_311_slim_base() -> None:
    stages = dockerfile_stages()
    args = dict(a.split("=", 1) for ins, a in stages[0] if ins == "ARG" and "=" in a)
    froms = [stage[0][1].split() for stage in stages[1:]]
    assert [f[-2:] for f in froms] == [["AS", "builder"], ["AS", "runtime"]]
    images = {f[0] for f in froms}
    assert len(images) == 1, "builder and runtime must share the interpreter the venv links to"
    image = images.pop()
    image = args.get(image.strip("${}"), image)
    assert re.fullmatch(r"python:3\.11(\.\d+)?-slim(-\w+)?", image), image


def test_the_runtime_copies_the_venv_and_runs_unprivileged() -> None:
    runtime = _instructions(-1)
    assert ("COPY", "--from=builder /opt/kozel /opt/kozel") in runtime
    user = final_stage_user()
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "a numeric non-root uid (runAsNonRoot checks it)"
    order = [ins for ins, _ in runtime]
    assert order.index("USER") < order.index("ENTRYPOINT")


def test_healthcheck_entrypoint_and_ports_follow_the_default_config() -> None:
    config = load_yaml(DEFAULT_CONFIG)
    runtime = _instructions(-1)
    (health,) = [a for ins, a in runtime if ins == "HEALTHCHECK"]
    cmd = _exec_form(health)
    assert cmd[:2] == ["kozel", "health"]
    address = cmd[cmd.index("--address") + 1]
    assert address.startswith("127.0.0.1:")
    assert listen_port(address) == listen_port(config["operator"]["listen"])
    assert not (config["operator"].get("tls") or {}).get("cert_file"), (
        "the HEALTHCHECK speaks plaintext to the operator port"
    )
    (entry,) = [a for ins, a in runtime if ins == "ENTRYPOINT"]
    entrypoint = _exec_form(entry)  # exec form: kozel is PID 1 and gets SIGTERM
    assert entrypoint[:3] == ["kozel", "serve", "--config"]
    copied = {
        dest
        for stage, sources, dest in _copies()
        if stage == "runtime"
        for src in sources
        if src == "deploy/docker/referee.yaml"
    }
    assert copied == {entrypoint[3]}
    exposed = {int(p) for ins, a in runtime if ins == "EXPOSE" for p in a.split()}
    assert exposed == {
        listen_port(config["listen"]),
        listen_port(config["operator"]["listen"]),
        listen_port(config["metrics"]["listen"]),
    }


def test_every_copied_path_exists_and_is_in_the_build_context() -> None:
    rules = _ignore_rules()
    copies = _copies()
    assert copies
    for _, sources, _ in copies:
        for src in sources:
            assert (ROOT / src).exists(), src
            assert _in_context(src, rules), f"{src} is excluded by .dockerignore"
    assert not _in_context(".venv/bin/python", rules)
    assert not _in_context("server/kozel/cli/__pycache__/main.cpython-311.pyc", rules)


def test_every_package_folder_of_the_wheel_is_copied() -> None:
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"][
        "targets"
    ]["wheel"]["packages"]
    builder = {src for stage, sources, _ in _copies() if stage == "builder" for src in sources}
    assert set(packages) <= builder


def test_the_builder_installs_the_locks_and_checks_the_result() -> None:
    """The runtime venv from requirements-runtime.lock, the build venv (hatchling) from
    requirements.lock, and pip check once the project's wheel is in (the hashes and the
    locks' content: test_locks.py)."""
    commands = [
        cmd.strip() for ins, args in _instructions(1) if ins == "RUN" for cmd in args.split("&&")
    ]
    runtime = "/opt/kozel/bin/pip install --require-hashes -r requirements-runtime.lock"
    build = "/opt/build/bin/pip install --require-hashes -r requirements.lock"
    wheel = "/opt/kozel/bin/pip install --no-deps /tmp/wheels/*.whl"
    check = "/opt/kozel/bin/pip check"
    for cmd in (runtime, build, wheel, check):
        assert cmd in commands, cmd
    assert commands.index(runtime) < commands.index(wheel) < commands.index(check)
    copied = {src for stage, sources, _ in _copies() if stage == "builder" for src in sources}
    assert {"requirements.lock", "requirements-runtime.lock"} <= copied


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """What the builder stage does, minus the network: copy what COPY copies (filtered by
    .dockerignore) and build the wheel without isolation. The copy and the wheel."""
    tmp_path = tmp_path_factory.mktemp("docker-builder")
    rules = _ignore_rules()
    src = tmp_path / "src"
    for stage, sources, _dest in _copies():
        if stage != "builder":
            continue
        for rel in sources:
            path = ROOT / rel
            files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
            for f in files:
                r = f.relative_to(ROOT).as_posix()
                if _in_context(r, rules):
                    target = src / r
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(f, target)
    wheels = tmp_path / "wheels"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(wheels),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    (wheel,) = wheels.glob("*.whl")
    return src, wheel


def test_a_wheel_built_from_the_build_context_holds_the_referee(built: tuple[Path, Path]) -> None:
    _, wheel = built
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        entry_points = next(zf.read(n).decode() for n in names if n.endswith("entry_points.txt"))
    for needed in (
        "kozel/engine/__init__.py",
        "kozel/cli/main.py",
        "kozel/cli/health_cmd.py",
        "kozel/server/app.py",
        "kozel/ladder/migrations/env.py",
        "kozel/v1/referee_pb2.py",
        "kozel/sdk/__init__.py",
    ):
        assert needed in names, needed
    assert not any("__pycache__" in n or "_native" in n for n in names)
    assert "kozel = kozel.cli.main:main" in entry_points


def test_the_image_runs_the_compiled_engine(built: tuple[Path, Path], tmp_path: Path) -> None:
    """The builder compiles the engine from the build context and puts the build next to the
    installed sources; the installed package then loads it (its sources' digest matches)."""
    commands = [
        cmd.strip() for ins, args in _instructions(1) if ins == "RUN" for cmd in args.split("&&")
    ]
    install = "/opt/kozel/bin/pip install --no-deps /tmp/wheels/*.whl"
    compile_ = "/opt/build/bin/python engine/build_native.py --strict"
    site = "/opt/kozel/lib/python3.11/site-packages"
    copy = f"cp -r engine/kozel/engine/_native {site}/kozel/engine/"
    copy_sdk = f"cp -r clients/python/kozel/sdk/_native {site}/kozel/sdk/"
    copy_core = f"cp -r server/kozel/core/_native {site}/kozel/core/"
    copy_analysis = f"cp -r engine/kozel/analysis/_native {site}/kozel/analysis/"
    check = next(c for c in commands if "e.NATIVE" in c)
    check_sdk = next(c for c in commands if "s.loaded()" in c)
    check_core = next(c for c in commands if "c.loaded()" in c)
    check_analysis = next(c for c in commands if "a.loaded()" in c)
    assert commands.index(install) < commands.index(compile_) < commands.index(copy)
    assert commands.index(compile_) < commands.index(copy_sdk)
    assert commands.index(copy) < commands.index(check)
    assert commands.index(copy_sdk) < commands.index(check_sdk)
    assert commands.index(compile_) < commands.index(copy_core) < commands.index(check_core)
    assert commands.index(compile_) < commands.index(copy_analysis) < commands.index(check_analysis)
    assert any("apt-get install" in c and "gcc" in c for c in commands)

    src, wheel = built
    res = subprocess.run(
        [sys.executable, str(src / "engine" / "build_native.py"), "--strict"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    target = tmp_path / "site"
    res = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target)]
        + [str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    shutil.copytree(
        src / "engine" / "kozel" / "engine" / "_native", target / "kozel/engine/_native"
    )
    shutil.copytree(
        src / "clients" / "python" / "kozel" / "sdk" / "_native", target / "kozel/sdk/_native"
    )
    shutil.copytree(src / "server" / "kozel" / "core" / "_native", target / "kozel/core/_native")
    shutil.copytree(
        src / "engine" / "kozel" / "analysis" / "_native", target / "kozel/analysis/_native"
    )
    probe = (
        "import kozel.engine as e, kozel.engine.deal as d, kozel.sdk.playout as p,"
        " kozel.core.protocol as c, kozel.analysis.solver as a;"
        "print(e.NATIVE, e.__file__, d.__file__, p.__file__, c.__file__, a.__file__)"
    )
    env = {**os.environ, "PYTHONPATH": str(target), "KOZEL_ENGINE_PURE": ""}
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0, out.stderr
    native, package, deal, playout, core, analysis = out.stdout.split()
    assert native == "True"
    assert package.startswith(str(target))
    assert deal.startswith(str(target / "kozel/engine/_native"))
    assert playout.startswith(str(target / "kozel/sdk/_native"))
    assert core.startswith(str(target / "kozel/core/_native"))
    assert analysis.startswith(str(target / "kozel/analysis/_native"))


def test_the_default_config_passes_check_config() -> None:
    res = check_config(DEFAULT_CONFIG)
    assert res.returncode == 0, res.stdout + res.stderr
