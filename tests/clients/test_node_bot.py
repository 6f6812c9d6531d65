"""The Node.js example bot (clients/node) against a real referee process.

The bot is built with ``npm ci`` into clients/node/node_modules (ignored by git; npm's own
download cache, ~/.npm, is outside the clone). A stamp in node_modules records what was
installed, so later runs skip ``npm ci`` until package-lock.json or node changes. Without
node/npm the tests fail under CI (CI set) and are skipped elsewhere.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.clients.botkit import (
    MATCH_TIMEOUT_S,
    Played,
    assert_clean,
    play_table,
    toolchain_missing,
)
from tests.server.conftest import RefereeProcess
from tests.server.rawbot import create_table

BOT_DIR = Path(__file__).resolve().parents[2] / "clients" / "node"
STAMP = BOT_DIR / "node_modules" / ".kozel-build-stamp"
NODE_MAJOR = 20
BUILD_TIMEOUT_S = 900

# The first build may take minutes; pytest-timeout's default (300 s) would count it.
pytestmark = pytest.mark.timeout(BUILD_TIMEOUT_S + 3 * MATCH_TIMEOUT_S)


def _unavailable(why: str) -> None:
    toolchain_missing(
        f"the Node.js bot cannot be tested: {why} (install Node.js {NODE_MAJOR}+ with npm)"
    )


def _toolchain() -> tuple[str, str, str]:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing = " and ".join(n for n, p in (("node", node), ("npm", npm)) if p is None)
        _unavailable(f"{missing} not found on PATH (Node.js {NODE_MAJOR}+ is needed)")
    assert node is not None and npm is not None
    version = subprocess.run(
        [node, "--version"], capture_output=True, text=True, timeout=60
    ).stdout.strip()
    m = re.match(r"v(\d+)\.", version)
    if m is None or int(m.group(1)) < NODE_MAJOR:
        _unavailable(f"node {version or '(unknown version)'} is older than {NODE_MAJOR}")
    return node, npm, version


@pytest.fixture(scope="module")
def node_bot() -> str:
    """Install the bot's dependencies (once per lock file and node version); returns node."""
    node, npm, version = _toolchain()
    want = hashlib.sha256(
        b"".join((BOT_DIR / f).read_bytes() for f in ("package.json", "package-lock.json"))
        + version.encode()
    ).hexdigest()
    # xdist workers may build at the same time: one builds, the others wait and reuse it.
    lock_path = Path(tempfile.gettempdir()) / (
        "kozel-node-bot-" + hashlib.sha256(str(BOT_DIR).encode()).hexdigest()[:12] + ".lock"
    )
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (STAMP.exists() and STAMP.read_text() == want):
            try:
                build = subprocess.run(
                    [npm, "ci", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"],
                    cwd=BOT_DIR,
                    capture_output=True,
                    text=True,
                    timeout=BUILD_TIMEOUT_S,
                )
            except subprocess.TimeoutExpired:
                pytest.fail(f"npm ci in {BOT_DIR} took over {BUILD_TIMEOUT_S} s")
            if build.returncode != 0:
                pytest.fail(
                    f"npm ci in {BOT_DIR} failed ({build.returncode}):\n"
                    f"{build.stdout}\n{build.stderr}"
                )
            STAMP.write_text(want)
    return node


def _play(
    node: str, ref: RefereeProcess, players: int, house: list[str], names: list[str], *flags: str
) -> Played:
    """One classic match: house bots in the first seats, one Node bot per name after them."""
    return play_table(
        [node, str(BOT_DIR / "bot.js")],
        ref.address,
        players,
        house,
        [["--name", name, *flags] for name in names],
    )


def _check_clean(played: Played, names: list[str]) -> None:
    """A clean match, and every Node bot printed one JSON line for it with no forfeit."""
    assert_clean(played, names)
    for out, log in played.outputs:
        lines = [json.loads(line) for line in out.splitlines() if line.strip()]
        assert len(lines) == 1, log
        assert lines[0]["matchId"] == played.result.match_id
        assert lines[0]["forfeits"] == 0
        assert "refused" not in log, log


def test_two_players_against_greedy(node_bot: str, referee: RefereeProcess) -> None:
    _check_clean(_play(node_bot, referee, 2, ["greedy"], ["node-bot"]), ["node-bot"])


def test_four_players_two_node_bots_with_house_bots(node_bot: str, referee: RefereeProcess) -> None:
    names = ["node-a", "node-b"]
    played = _play(node_bot, referee, 4, ["greedy", "random"], names)
    _check_clean(played, names)
    assert {p.name for p in played.result.seating} == {"greedy-0", "random-1", *names}


def test_resumes_after_a_dropped_stream(node_bot: str, referee: RefereeProcess) -> None:
    played = _play(node_bot, referee, 2, ["greedy"], ["node-drop"], "--drop-after", "3")
    _check_clean(played, ["node-drop"])
    log = played.outputs[0][1]
    assert "cancelling the stream after 3 answers" in log, log
    assert "(resumed)" in log, log


THROWING_BOT = """
import {{ Bot, runBot }} from '{index}';

class Throws extends Bot {{
  constructor() {{ super(); this.decisions = 0; }}
  choose(request) {{
    this.decisions += 1;
    if (this.decisions === 3) throw new Error('bug on the third decision');
    return 0;
  }}
}}

const [server, table, strict] = process.argv.slice(2);
const options = {{ server, table, name: 'throws' }};
if (strict === 'lenient') options.strict = false;
await runBot(Throws, options);
"""


def _throwing_bot(tmp_path: Path) -> Path:
    bot = tmp_path / "throws.mjs"
    bot.write_text(THROWING_BOT.format(index=(BOT_DIR / "index.js").as_uri()))
    return bot


def test_a_throwing_node_bot_is_reported_by_kozel_play(node_bot: str, tmp_path: Path) -> None:
    """Strict under kozel play: the exception ends the bot (exit 1) and the package's report
    names it with its place in the bot's file."""
    res = subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", "play"]
        + ["--bot", f"{node_bot} {_throwing_bot(tmp_path)} {{server}} {{table}}"]
        + ["--matches", "2", "--replay-dir", str(tmp_path / "replays"), "--json"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert res.returncode == 0, res.stderr
    failures = json.loads(res.stdout)["failures"]["bot"]
    raised = failures["exceptions"]
    assert raised["count"] == 2, failures
    assert raised["first"]["detail"].startswith("choose: Error: bug on the third decision")
    assert "throws.mjs:" in raised["first"]["detail"]
    assert failures["exits"]["by"] == {"exit status 1": 2}


def test_a_lenient_node_bot_plays_on_and_reports(
    node_bot: str, referee: RefereeProcess, tmp_path: Path
) -> None:
    report = tmp_path / "report.jsonl"
    table = asyncio.run(create_table(referee.address, "classic", 2, house=["greedy"]))
    res = subprocess.run(
        [node_bot, str(_throwing_bot(tmp_path)), referee.address, table, "lenient"],
        capture_output=True,
        text=True,
        timeout=MATCH_TIMEOUT_S,
        env={**os.environ, "KOZEL_REPORT": str(report)},
    )
    assert res.returncode == 0, res.stderr
    lines = [json.loads(line) for line in report.read_text().splitlines()]
    assert [(p["kind"], p["what"], p["request_id"]) for p in lines] == [("exception", "choose", 3)]
    assert "answering legal index 0" in res.stderr
