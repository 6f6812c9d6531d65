"""The Java example bot (clients/java) against a real referee process.

The bot is built with ``mvn -q -B package -DskipTests``. Maven's download cache (~/.m2) is
outside the clone, and so is the build folder: ``-DbuildDirectory`` points it at
``~/.cache/kozel-arena/java-bot/<hash>``, where the hash covers the pom, the bot's sources,
the .proto files and the Java version. A build whose inputs are unchanged is reused without
running Maven at all (a fresh clone of the same commit reuses it too). Without java (17+) or
mvn the tests fail under CI (CI set) and are skipped elsewhere.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kozel.server.replay import read_replay, verify_replay
from kozel.v1 import game_pb2, referee_pb2
from tests.server.conftest import RefereeProcess, start_referee_process, stop_referee_process
from tests.server.rawbot import create_table, wait_table

REPO = Path(__file__).resolve().parents[2]
BOT_DIR = REPO / "clients" / "java"
JAR_NAME = "kozel-java-bot.jar"
JAVA_MAJOR = 17
BUILD_TIMEOUT_S = 900
MATCH_TIMEOUT_S = 120
KEEP_BUILDS_DAYS = 14  # unused cached builds older than this are removed

# The first build may take minutes; pytest-timeout's default (300 s) would count it.
pytestmark = pytest.mark.timeout(BUILD_TIMEOUT_S + 3 * MATCH_TIMEOUT_S)

_MATCH_LINE = re.compile(r"^match (\S+) ended: reason=(\S+) .*forfeits=(\d+)")


def _unavailable(why: str) -> None:
    msg = f"the Java bot cannot be tested: {why}"
    if os.environ.get("CI"):
        pytest.fail(f"{msg} (CI is set, so this is an error: install JDK {JAVA_MAJOR}+ and "
                    "Maven on the CI machine, e.g. apt-get install openjdk-17-jdk-headless maven)",
                    pytrace=False)
    pytest.skip(msg)


def _toolchain() -> tuple[str, str, str]:
    """java, mvn and the Java version string; fails or skips when they are missing."""
    java, mvn = shutil.which("java"), shutil.which("mvn")
    if java is None or mvn is None:
        missing = " and ".join(n for n, p in (("java", java), ("mvn", mvn)) if p is None)
        _unavailable(f"{missing} not found on PATH (JDK {JAVA_MAJOR}+ and Maven are needed)")
    assert java is not None and mvn is not None
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    major = 0 if m is None else int(m.group(2) if m.group(1) == "1" else m.group(1))
    if major < JAVA_MAJOR:
        _unavailable(f"java is version {major or 'unknown'}, older than {JAVA_MAJOR}:\n"
                     f"{out.stderr.strip()}")
    return java, mvn, out.stderr.strip()


def _inputs_hash(java_version: str) -> str:
    """What the jar is built from: the pom, the sources, the protos, the JDK."""
    h = hashlib.sha256(java_version.encode())
    files = [BOT_DIR / "pom.xml", *sorted((BOT_DIR / "src").rglob("*")),
             *sorted((REPO / "proto" / "kozel").rglob("*.proto"))]
    for f in files:
        if f.is_file():
            h.update(str(f.relative_to(REPO)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _prune(cache: Path, keep: Path) -> None:
    cutoff = time.time() - KEEP_BUILDS_DAYS * 86400
    for old in cache.iterdir():
        done = old / ".complete"
        if old != keep and old.is_dir() and done.exists() and done.stat().st_mtime < cutoff:
            shutil.rmtree(old, ignore_errors=True)


@pytest.fixture(scope="module")
def java_bot() -> list[str]:
    """Build the bot once per set of inputs; returns the command that runs it."""
    java, mvn, version = _toolchain()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kozel-arena" \
        / "java-bot"
    cache.mkdir(parents=True, exist_ok=True)
    build_dir = cache / _inputs_hash(version)
    done = build_dir / ".complete"
    # xdist workers may build at the same time: one builds, the others wait and reuse it.
    with open(cache / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            try:
                build = subprocess.run(
                    [mvn, "-q", "-B", "package", "-DskipTests", f"-DbuildDirectory={build_dir}"],
                    cwd=BOT_DIR, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pytest.fail(f"mvn package in {BOT_DIR} took over {BUILD_TIMEOUT_S} s")
            if build.returncode != 0:
                pytest.fail(f"mvn package in {BOT_DIR} failed ({build.returncode}):\n"
                            f"{build.stdout[-6000:]}\n{build.stderr[-6000:]}")
            done.write_text(version)
        done.touch()  # marks the build as used, for _prune
        _prune(cache, build_dir)
    jar = build_dir / JAR_NAME
    assert jar.is_file(), f"the build did not produce {jar}"
    return [java, "-jar", str(jar)]


@pytest.fixture(scope="module")
def referee(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefereeProcess]:
    """A referee with its default clock (2 s a move, 10 s bank, 10 s grace)."""
    ref = start_referee_process(tmp_path_factory.mktemp("java-replays"))
    yield ref
    stop_referee_process(ref)


def _finish(bot: subprocess.Popen[str]) -> tuple[list[tuple[str, str, int]], str]:
    """Wait for a bot process; returns its MatchEnd lines (id, reason, forfeits) and its log."""
    try:
        out, err = bot.communicate(timeout=MATCH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        bot.kill()
        out, err = bot.communicate()
        pytest.fail(f"the bot did not finish within {MATCH_TIMEOUT_S} s:\n{out}\n{err}")
    assert bot.returncode == 0, f"the bot exited with {bot.returncode}:\n{out}\n{err}"
    ends = [(m.group(1), m.group(2), int(m.group(3)))
            for m in map(_MATCH_LINE.match, out.splitlines()) if m]
    return ends, err


def _play(bot_cmd: list[str], ref: RefereeProcess, players: int, house: list[str],
          names: list[str], *flags: str,
          ) -> tuple[referee_pb2.WaitTableResponse, list[tuple[list[tuple[str, str, int]], str]]]:
    """One classic match: house bots in the first seats, one Java bot per name after them."""
    table_id = asyncio.run(create_table(ref.address, "classic", players, house=house))
    bots = [subprocess.Popen([*bot_cmd, "--server", ref.address, "--table", table_id,
                              "--name", name, *flags],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for name in names]
    try:
        result = asyncio.run(wait_table(ref.address, table_id, timeout=MATCH_TIMEOUT_S))
        return result, [_finish(bot) for bot in bots]
    finally:
        for bot in bots:
            if bot.poll() is None:
                bot.kill()
                bot.communicate()


def _check_clean(result: referee_pb2.WaitTableResponse, names: list[str],
                 outputs: list[tuple[list[tuple[str, str, int]], str]]) -> None:
    """No forfeits, no refused answers and no timeouts for the Java bots, a valid replay, and
    every bot reported the match's end."""
    r = result.result
    assert list(r.forfeits) == [], r
    assert r.reason == game_pb2.MATCH_END_REASON_LIMIT, r
    seats = {p.name: p.seat for p in result.seating}
    for name in names:
        assert r.rejections[seats[name]] == 0, r
        assert r.timeouts[seats[name]] == 0, r
    replay = read_replay(Path(result.replay_path))
    assert verify_replay(replay) == []
    for ends, log in outputs:
        assert ends == [(result.match_id, "MATCH_END_REASON_LIMIT", 0)], log
        assert "refused" not in log, log


def test_two_players_against_greedy(java_bot: list[str], referee: RefereeProcess) -> None:
    result, outputs = _play(java_bot, referee, 2, ["greedy"], ["java-bot"])
    _check_clean(result, ["java-bot"], outputs)


def test_four_players_two_java_bots_with_house_bots(java_bot: list[str],
                                                    referee: RefereeProcess) -> None:
    names = ["java-a", "java-b"]
    result, outputs = _play(java_bot, referee, 4, ["greedy", "random"], names)
    _check_clean(result, names, outputs)
    assert {p.name for p in result.seating} == {"greedy-0", "random-1", *names}


def test_resumes_after_a_dropped_stream(java_bot: list[str], referee: RefereeProcess) -> None:
    result, outputs = _play(java_bot, referee, 2, ["greedy"], ["java-drop"], "--drop-after", "3")
    _check_clean(result, ["java-drop"], outputs)
    log = outputs[0][1]
    assert "cancelling the stream: --drop-after 3" in log, log
    assert "(resumed)" in log, log
