"""The Java example bot (clients/java) against a real referee process.

The bot is built with ``mvn -q -B package -DskipTests``. Maven's download cache (~/.m2) is
outside the clone, and so is the build folder: ``-DbuildDirectory`` points it at
``~/.cache/kozel-arena/java-bot/<hash>``, where the hash covers the pom, the bot's sources,
the .proto files and the Java version. A build whose inputs are unchanged is reused without
running Maven at all (a fresh clone of the same commit reuses it too). Without java (17+) or
mvn the tests fail under CI (CI set) and are skipped elsewhere.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import time
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

REPO = Path(__file__).resolve().parents[2]
BOT_DIR = REPO / "clients" / "java"
JAR_NAME = "kozel-java-bot.jar"
JAVA_MAJOR = 17
BUILD_TIMEOUT_S = 900
KEEP_BUILDS_DAYS = 14  # unused cached builds older than this are removed

# The first build may take minutes; pytest-timeout's default (300 s) would count it.
pytestmark = pytest.mark.timeout(BUILD_TIMEOUT_S + 3 * MATCH_TIMEOUT_S)

_MATCH_LINE = re.compile(r"^match (\S+) ended: reason=(\S+) .*forfeits=(\d+)")


def _unavailable(why: str) -> None:
    toolchain_missing(
        f"the Java bot cannot be tested: {why} (install JDK {JAVA_MAJOR}+ and "
        "Maven, e.g. apt-get install openjdk-17-jdk-headless maven)"
    )


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
        _unavailable(
            f"java is version {major or 'unknown'}, older than {JAVA_MAJOR}:\n{out.stderr.strip()}"
        )
    return java, mvn, out.stderr.strip()


def _inputs_hash(java_version: str) -> str:
    """What the jar is built from: the pom, the sources, the protos, the JDK."""
    h = hashlib.sha256(java_version.encode())
    files = [
        BOT_DIR / "pom.xml",
        *sorted((BOT_DIR / "src").rglob("*")),
        *sorted((REPO / "proto" / "kozel").rglob("*.proto")),
    ]
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
    cache = (
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        / "kozel-arena"
        / "java-bot"
    )
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
                    cwd=BOT_DIR,
                    capture_output=True,
                    text=True,
                    timeout=BUILD_TIMEOUT_S,
                )
            except subprocess.TimeoutExpired:
                pytest.fail(f"mvn package in {BOT_DIR} took over {BUILD_TIMEOUT_S} s")
            if build.returncode != 0:
                pytest.fail(
                    f"mvn package in {BOT_DIR} failed ({build.returncode}):\n"
                    f"{build.stdout[-6000:]}\n{build.stderr[-6000:]}"
                )
            done.write_text(version)
        done.touch()  # marks the build as used, for _prune
        _prune(cache, build_dir)
    jar = build_dir / JAR_NAME
    assert jar.is_file(), f"the build did not produce {jar}"
    return [java, "-jar", str(jar)]


def _check(played: Played, names: list[str]) -> None:
    """A clean match, and every Java bot printed its end: (match id, reason, forfeits)."""
    assert_clean(played, names)
    for out, log in played.outputs:
        ends = [m.groups() for line in out.splitlines() if (m := _MATCH_LINE.match(line))]
        assert ends == [(played.result.match_id, "MATCH_END_REASON_LIMIT", "0")], log
        assert "refused" not in log, log


def _play(
    cmd: list[str],
    ref: RefereeProcess,
    players: int,
    house: list[str],
    names: list[str],
    *flags: str,
) -> Played:
    return play_table(
        cmd, ref.address, players, house, [["--name", name, *flags] for name in names]
    )


def test_two_players_against_greedy(java_bot: list[str], referee: RefereeProcess) -> None:
    _check(_play(java_bot, referee, 2, ["greedy"], ["java-bot"]), ["java-bot"])


def test_four_players_two_java_bots_with_house_bots(
    java_bot: list[str], referee: RefereeProcess
) -> None:
    names = ["java-a", "java-b"]
    played = _play(java_bot, referee, 4, ["greedy", "random"], names)
    _check(played, names)
    assert {p.name for p in played.result.seating} == {"greedy-0", "random-1", *names}


def test_resumes_after_a_dropped_stream(java_bot: list[str], referee: RefereeProcess) -> None:
    played = _play(java_bot, referee, 2, ["greedy"], ["java-drop"], "--drop-after", "3")
    _check(played, ["java-drop"])
    log = played.outputs[0][1]
    assert "cancelling the stream: --drop-after 3" in log, log
    assert "(resumed)" in log, log
