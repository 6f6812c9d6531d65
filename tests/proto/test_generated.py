"""The committed Python stubs are what the .proto files generate today."""

from __future__ import annotations

import filecmp
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_generated_python_is_current(tmp_path: Path) -> None:
    protos = sorted(str(p.relative_to(ROOT / "proto")) for p in (ROOT / "proto").rglob("*.proto"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-I",
            str(ROOT / "proto"),
            f"--python_out={tmp_path}",
            f"--grpc_python_out={tmp_path}",
            f"--pyi_out={tmp_path}",
            *protos,
        ],
        check=True,
        cwd=ROOT / "proto",
    )
    fresh = sorted(p.name for p in (tmp_path / "kozel" / "v1").iterdir())
    committed = ROOT / "clients" / "python" / "kozel" / "v1"
    assert fresh == sorted(
        p.name
        for p in committed.iterdir()
        if p.name != "__init__.py" and p.suffix in (".py", ".pyi")
    )
    stale = [
        n
        for n in fresh
        if not filecmp.cmp(tmp_path / "kozel" / "v1" / n, committed / n, shallow=False)
    ]
    assert not stale, f"run `make proto`: {stale} are out of date"


def test_every_message_and_field_is_commented() -> None:
    for path in (ROOT / "proto" / "kozel" / "v1").glob("*.proto"):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            s = line.strip()
            declares = s.startswith(("message ", "enum ", "rpc ", "service ")) or (
                s.endswith(";") and "=" in s and not s.startswith(("option", "syntax", "//"))
            )
            if declares:
                assert lines[i - 1].strip().startswith("//"), f"{path.name}:{i + 1}: {s}"
