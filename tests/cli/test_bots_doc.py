"""docs/bots.md's first-match path, run exactly as written: the block between the
``first-match`` markers is extracted and run by bash in an empty folder, with ``KOZEL`` set to
this checkout."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "bots.md"


def first_match_commands() -> str:
    text = DOC.read_text()
    block = re.search(
        r"<!-- first-match[^>]*-->\s*```bash\n(.*?)```\s*<!-- /first-match -->", text, re.DOTALL
    )
    assert block, "docs/bots.md lost its first-match block"
    return block.group(1)


def test_first_match_path_works_as_written(tmp_path: Path) -> None:
    script = first_match_commands()
    assert 'kozel" play' in script and "--vs greedy" in script
    env = {k: v for k, v in os.environ.items() if not k.startswith("KOZEL_")}
    env["KOZEL"] = str(ROOT)
    res = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    assert (tmp_path / "mybot" / "mybot.py").exists()
    out = res.stdout
    assert "wins / draws / losses" in out
    m = re.search(r"wins / draws / losses\s*│\s*(\d+) / (\d+) / (\d+)", out)
    assert m and sum(map(int, m.groups())) == 10, out
    assert re.search(r"timeouts / forfeits \(bot\)\s*│\s*0 / 0", out), out
    assert list((tmp_path / "mybot" / "replays").glob("*.kzr"))
