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
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kozel.server.replay import read_replay, verify_replay
from kozel.v1 import game_pb2, referee_pb2
from tests.server.conftest import RefereeProcess, start_referee_process, stop_referee_process
from tests.server.rawbot import create_table, wait_table

BOT_DIR = Path(__file__).resolve().parents[2] / "clients" / "node"
STAMP = BOT_DIR / "node_modules" / ".kozel-build-stamp"
NODE_MAJOR = 20
BUILD_TIMEOUT_S = 900
MATCH_TIMEOUT_S = 120

# The first build may take minutes; pytest-timeout's default (300 s) would count it.
pytestmark = pytest.mark.timeout(BUILD_TIMEOUT_S + 3 * MATCH_TIMEOUT_S)


def _unavailable(why: str) -> None:
    msg = f"the Node.js bot cannot be tested: {why}"
    if os.environ.get("CI"):
        pytest.fail(f"{msg} (CI is set, so this is an error: install Node.js {NODE_MAJOR}+ "
                    "with npm on the CI machine)", pytrace=False)
    pytest.skip(msg)


def _toolchain() -> tuple[str, str, str]:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing = " and ".join(n for n, p in (("node", node), ("npm", npm)) if p is None)
        _unavailable(f"{missing} not found on PATH (Node.js {NODE_MAJOR}+ is needed)")
    assert node is not None and npm is not None
    version = subprocess.run([node, "--version"], capture_output=True, text=True,
                             timeout=60).stdout.strip()
    m = re.match(r"v(\d+)\.", version)
    if m is None or int(m.group(1)) < NODE_MAJOR:
        _unavailable(f"node {version or '(unknown version)'} is older than {NODE_MAJOR}")
    return node, npm, version


@pytest.fixture(scope="module")
def node_bot() -> str:
    """Install the bot's dependencies (once per lock file and node version); returns node."""
    node, npm, version = _toolchain()
    want = hashlib.sha256(b"".join(
        (BOT_DIR / f).read_bytes() for f in ("package.json", "package-lock.json"))
        + version.encode()).hexdigest()
    # xdist workers may build at the same time: one builds, the others wait and reuse it.
    lock_path = Path(tempfile.gettempdir()) / (
        "kozel-node-bot-" + hashlib.sha256(str(BOT_DIR).encode()).hexdigest()[:12] + ".lock")
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (STAMP.exists() and STAMP.read_text() == want):
            try:
                build = subprocess.run(
                    [npm, "ci", "--prefer-offline", "--no-audit", "--no-fund",
                     "--loglevel=error"],
                    cwd=BOT_DIR, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pytest.fail(f"npm ci in {BOT_DIR} took over {BUILD_TIMEOUT_S} s")
            if build.returncode != 0:
                pytest.fail(f"npm ci in {BOT_DIR} failed ({build.returncode}):\n"
                            f"{build.stdout}\n{build.stderr}")
            STAMP.write_text(want)
    return node


@pytest.fixture(scope="module")
def referee(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefereeProcess]:
    """A referee with its default clock (2 s a move, 10 s bank, 10 s grace)."""
    ref = start_referee_process(tmp_path_factory.mktemp("node-replays"))
    yield ref
    stop_referee_process(ref)


def _start_bot(node: str, ref: RefereeProcess, table_id: str, name: str,
               *flags: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [node, str(BOT_DIR / "bot.js"), "--server", ref.address, "--table", table_id,
         "--name", name, *flags],
        cwd=BOT_DIR, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(bot: subprocess.Popen[str]) -> tuple[list[dict], str]:
    """Wait for a bot process; returns its per-match JSON lines and its log."""
    try:
        out, err = bot.communicate(timeout=MATCH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        bot.kill()
        out, err = bot.communicate()
        pytest.fail(f"the bot did not finish within {MATCH_TIMEOUT_S} s:\n{err}")
    assert bot.returncode == 0, f"the bot exited with {bot.returncode}:\n{out}\n{err}"
    return [json.loads(line) for line in out.splitlines() if line.strip()], err


def _play(node: str, ref: RefereeProcess, players: int, house: list[str], names: list[str],
          *flags: str) -> tuple[referee_pb2.WaitTableResponse, list[tuple[list[dict], str]]]:
    """One classic match: house bots in the first seats, one Node bot per name after them."""
    table_id = asyncio.run(create_table(ref.address, "classic", players, house=house))
    bots = [_start_bot(node, ref, table_id, name, *flags) for name in names]
    try:
        result = asyncio.run(wait_table(ref.address, table_id, timeout=MATCH_TIMEOUT_S))
        return result, [_finish(bot) for bot in bots]
    finally:
        for bot in bots:
            if bot.poll() is None:
                bot.kill()
                bot.communicate()


def _check_clean(result: referee_pb2.WaitTableResponse, names: list[str],
                 outputs: list[tuple[list[dict], str]]) -> None:
    """No forfeits, no refused answers and no timeouts for the Node bots, a valid replay, and
    every bot saw the same result."""
    r = result.result
    assert list(r.forfeits) == [], r
    assert r.reason == game_pb2.MATCH_END_REASON_LIMIT, r
    seats = {p.name: p.seat for p in result.seating}
    for name in names:
        assert r.rejections[seats[name]] == 0, r
        assert r.timeouts[seats[name]] == 0, r
    replay = read_replay(result.replay_path)
    assert verify_replay(replay) == []
    assert sorted(s.name for s in replay.seats) == sorted(seats)
    for lines, log in outputs:
        assert len(lines) == 1, log
        assert lines[0]["matchId"] == result.match_id
        assert lines[0]["forfeits"] == 0
        assert "refused" not in log, log


def test_two_players_against_greedy(node_bot: str, referee: RefereeProcess) -> None:
    result, outputs = _play(node_bot, referee, 2, ["greedy"], ["node-bot"])
    _check_clean(result, ["node-bot"], outputs)


def test_four_players_two_node_bots_with_house_bots(node_bot: str,
                                                    referee: RefereeProcess) -> None:
    names = ["node-a", "node-b"]
    result, outputs = _play(node_bot, referee, 4, ["greedy", "random"], names)
    _check_clean(result, names, outputs)
    assert {p.name for p in result.seating} == {"greedy-0", "random-1", *names}


def test_resumes_after_a_dropped_stream(node_bot: str, referee: RefereeProcess) -> None:
    result, outputs = _play(node_bot, referee, 2, ["greedy"], ["node-drop"], "--drop-after", "3")
    _check_clean(result, ["node-drop"], outputs)
    log = outputs[0][1]
    assert "cancelling the stream after 3 answers" in log, log
    assert "(resumed)" in log, log
