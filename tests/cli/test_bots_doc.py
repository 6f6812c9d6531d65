"""docs/bots.md's first-match paths, run exactly as written: the block between the
``first-match`` markers (Python) and the one between the ``first-match-node`` markers (the
Node.js package, packed and installed from an empty folder) are extracted and run by bash in an
empty folder, with ``KOZEL`` set to this checkout."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "bots.md"


def doc_block(name: str) -> str:
    """The bash block of docs/bots.md between ``<!-- name ... -->`` and ``<!-- /name -->``."""
    text = DOC.read_text()
    block = re.search(
        rf"<!-- {re.escape(name)}[:\s][^>]*-->\s*```bash\n(.*?)```\s*<!-- /{re.escape(name)} -->",
        text,
        re.DOTALL,
    )
    assert block, f"docs/bots.md lost its {name} block"
    return block.group(1)


def run_as_written(script: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run ``script`` with bash in ``cwd`` (KOZEL set to this checkout, and ``env``); its
    stdout."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("KOZEL_")}
    environ.update(KOZEL=str(ROOT), **(env or {}))
    res = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    return res.stdout


def assert_played(out: str, matches: int, replays: Path) -> None:
    """kozel play's table: every match played, no timeout or forfeit, nothing went wrong."""
    m = re.search(r"wins / draws / losses\s*│\s*(\d+) / (\d+) / (\d+)", out)
    assert m and sum(map(int, m.groups())) == matches, out
    assert re.search(r"timeouts / forfeits \(bot\)\s*│\s*0 / 0", out), out
    assert re.search(r"bot .*: no forfeit, timeout, refusal, exception or early exit", out), out
    assert len(list(replays.glob("*.kzr"))) == matches


def test_first_match_path_works_as_written(tmp_path: Path) -> None:
    script = doc_block("first-match")
    assert 'kozel" play' in script and "--vs greedy" in script
    out = run_as_written(script, tmp_path)
    assert (tmp_path / "mybot" / "mybot.py").exists()
    assert_played(out, 10, tmp_path / "mybot" / "replays")


def test_first_match_in_node_works_as_written(tmp_path: Path) -> None:
    """From an empty folder: npm pack of clients/node, npm install of the tarball, a bot on
    Bot and runBot, ten matches; the package carries the protocol, so no setting is needed."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed")  # tests/clients/test_node_bot.py fails in CI
    script = doc_block("first-match-node")
    assert "npm pack" in script and "runBot" in script
    out = run_as_written(script, tmp_path, {"npm_config_prefer_offline": "true"})
    assert (tmp_path / "mynodebot" / "node_modules" / "kozel-bot" / "proto").is_dir()
    assert_played(out, 10, tmp_path / "mynodebot" / "replays")
