"""Replay files built to hurt their reader: a gzip bomb, a field this reader does not know that
holds megabytes, several gzip members that together pass the limit, a small file of 20,000
deals, and a server that sends a replay without end. Every reader (``kozel replay
show|verify|html|fetch`` as subprocesses, ``kozel web --replays``) refuses them quickly with
an error that names the file and the limit, stays under a stated memory bound, and still
reads an honest replay (a listing skips the bad files)."""

from __future__ import annotations

import gzip
import http.server
import json
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from kozel.server.replay.file import encode_replay
from kozel.v1 import replay_pb2
from tests.server.test_replay import play, replay_of
from tests.web.conftest import get, start, stop

KOZEL = [sys.executable, "-m", "kozel.cli.main"]
# A kozel command reading an honest replay peaks at about 80 MiB here; the bombs below took
# 1 to 3 GiB before they were bounded.
MEMORY_BOUND_KIB = 300 * 1024
GOOD_ID = "0123456789abcdef0123456789abcdef"


def _gzip_zeros(mib: int) -> bytes:
    """``mib`` MiB of zero bytes, gzip-compressed (about 1 KiB per MiB)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1024 * 1024)
    return b"".join(z.compress(block) for _ in range(mib)) + z.flush()


def _unknown_field(size: int) -> bytes:
    """Field 999 (length-delimited) of ``size`` bytes: unknown to every Replay reader."""
    tag = (999 << 3) | 2
    return _varint(tag) + _varint(size) + b"k" * size


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("hostile-replays")
    good = replay_of(play("classic", 2, 7))
    good.match_id = GOOD_ID
    header = replay_pb2.Replay(format_version=1, match_id="b" * 32, players=2)
    raw = header.SerializeToString()
    many = replay_pb2.Replay()
    many.CopyFrom(good)
    many.match_id = "c" * 32
    del many.deals[:]
    for i in range(20_000):
        many.deals.add(index=i, dealer=0, deck=["6C"])
    content = {
        GOOD_ID: encode_replay(good),
        "a" * 32: _gzip_zeros(1024),  # 1 GiB once decompressed, 1 MB on disk
        "b" * 32: gzip.compress(raw + _unknown_field(1024 * 1024), mtime=0),
        "c" * 32: encode_replay(many),
        # Four members of 12 MiB each: each under the limit, not together.
        "d" * 32: b"".join(gzip.compress(raw + _unknown_field(12 << 20), 1) for _ in range(4)),
    }
    out = {}
    for match_id, data in content.items():
        path = folder / f"{match_id}.kzr"
        path.write_bytes(data)
        out[match_id] = path
    return out


# Runs a command as the child of a small process and writes its own peak memory (KiB) to
# argv[1]. Linux carries the peak of the memory a process replaces by exec into its rusage, so
# a child started straight from a big test worker would report the worker's size.
_PEAK = """import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _run(*args: str, timeout: float = 120) -> tuple[int, str, float, int]:
    """Run ``kozel ARGS``: exit code, stderr, seconds taken and its peak memory (KiB)."""
    started = time.monotonic()
    with tempfile.NamedTemporaryFile("r") as peak:
        proc = subprocess.run(
            [sys.executable, "-c", _PEAK, peak.name, *KOZEL, *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=timeout,
        )
        kib = int(peak.read() or 0)
    return proc.returncode, proc.stderr, time.monotonic() - started, kib


BAD = {
    "a" * 32: "limits.replay_max_bytes",
    "b" * 32: "limits.replay_max_unknown_bytes",
    "c" * 32: "limits.replay_max_deals",
    "d" * 32: "limits.replay_max_bytes",
}


@pytest.mark.parametrize("command", ["show", "verify", "html"])
def test_the_replay_commands_refuse_bombs_within_memory(
    files: dict[str, Path], command: str, tmp_path: Path
) -> None:
    for match_id, limit in BAD.items():
        extra = ["-o", str(tmp_path / "out.html")] if command == "html" else []
        code, err, took, peak = _run("replay", command, str(files[match_id]), *extra)
        assert code == 2, (match_id, code, err)
        assert str(files[match_id]) in err and limit in err, err
        assert peak < MEMORY_BOUND_KIB, (match_id, peak)
        assert took < 30, (match_id, took)
    code, err, took, _ = _run("replay", command, str(files[GOOD_ID]), *extra)
    assert code == 0, err


def test_a_limit_can_be_raised_on_the_command_line(files: dict[str, Path]) -> None:
    path = str(files["c" * 32])
    code, err, _, _ = _run("replay", "show", path, "--limit", "replay_max_deals=30000")
    assert code == 0, err
    code, err, _, _ = _run("replay", "show", path, "--limit", "replay_max_dealz=3")
    assert code == 2 and "replay_max_dealz" in err and "replay_max_deals" in err


class _Endless(http.server.BaseHTTPRequestHandler):
    """A server that answers every replay download with bytes without end."""

    def do_GET(self) -> None:  # noqa: N802 (the http.server API)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        block = b"\x1f" * 65536
        try:
            while True:
                self.wfile.write(block)
        except OSError:
            return

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def endless() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Endless)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_fetch_stops_reading_an_endless_answer(endless: str, tmp_path: Path) -> None:
    code, err, took, peak = _run(
        "replay",
        "fetch",
        GOOD_ID,
        "--server",
        endless,
        "-o",
        str(tmp_path / "x.kzr"),
        "--limit",
        "replay_max_bytes=8000000",
    )
    assert code == 1 and "more than 8000000 bytes" in err, err
    assert peak < MEMORY_BOUND_KIB and took < 30, (peak, took)
    assert not (tmp_path / "x.kzr").exists()


def _peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_the_web_over_a_folder_of_bombs_serves_the_honest_replay(files: dict[str, Path]) -> None:
    folder = files[GOOD_ID].parent
    proc, found, _ = start(
        [*KOZEL, "web", "--replays", str(folder), "--listen", "127.0.0.1:0"],
        {"web": r"web pages on (http://\S+)"},
    )
    base = found["web"].rstrip("/")
    try:
        started = time.monotonic()
        status, _, body = get(f"{base}/api/matches")
        listed = time.monotonic() - started
        assert status == 200, body
        assert [m["match_id"] for m in json.loads(body)["matches"]] == [GOOD_ID]
        for match_id, limit in BAD.items():
            started = time.monotonic()
            status, _, body = get(f"{base}/api/matches/{match_id}/replay.json")
            assert status in (413, 422), (match_id, status, body)
            assert limit in json.loads(body)["detail"], body
            assert time.monotonic() - started < 20
        status, _, body = get(f"{base}/api/matches/{GOOD_ID}/replay.json")
        assert status == 200 and json.loads(body)["match_id"] == GOOD_ID
        assert listed < 20, listed
        assert _peak_kib(proc.pid) < MEMORY_BOUND_KIB + 100 * 1024
    finally:
        stop(proc)
