"""The first minutes with the referee, as real processes: a taken port, an unreachable
database, a bad flag or an absent referee is one line and a non-zero exit, never a traceback;
a referee starts without schema set-up chatter."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

KOZEL = [sys.executable, "-m", "kozel.cli.main"]
ROOT = Path(__file__).resolve().parents[2]


def kozel(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KOZEL, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def one_error_line(res: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in res.stderr + res.stdout
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    return lines[0]


def test_taken_port(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        res = kozel(
            "serve",
            "--listen",
            f"127.0.0.1:{port}",
            "--data-dir",
            str(tmp_path),
            "--replay-dir",
            str(tmp_path / "r"),
        )
    assert res.returncode == 1
    line = one_error_line(res)
    assert line.startswith(f"error: cannot listen on 127.0.0.1:{port}: the port is in use")


def test_unreachable_database(tmp_path: Path) -> None:
    res = kozel(
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--db",
        "postgresql+psycopg://kozel:secret@127.0.0.1:1/kozel",
        "--ladders",
        "deploy/ladders.example.yaml",
        "--replay-dir",
        str(tmp_path),
    )
    assert res.returncode == 1
    line = one_error_line(res)
    assert line.startswith("error: cannot use the database: ")
    assert "secret" not in line  # the URL's password is not repeated


def test_bad_flag() -> None:
    res = kozel("serve", "--no-such-flag")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines()[-1] == (
        "kozel: error: unrecognized arguments: --no-such-flag"
    )


def test_no_referee_for_a_bot() -> None:
    res = kozel("bot", "greedy", "--server", "127.0.0.1:1", "--table", "t", "--quiet")
    assert res.returncode == 1
    assert one_error_line(res) == "error: UNAVAILABLE: no referee reachable at 127.0.0.1:1"


def test_referee_start_is_quiet(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            *KOZEL,
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            str(tmp_path),
            "--replay-dir",
            str(tmp_path / "r"),
            "--web-listen",  # the web pages on, as by default, but on a port surely free
            "127.0.0.1:0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    seen: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if "listening on" in line:
                break
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert any("listening on" in ln for ln in seen), seen
    assert not [ln for ln in seen if "alembic" in ln], seen
    assert not [ln for ln in seen if "fork_posix" in ln], seen  # gRPC's fork handlers
    assert len(seen) <= 3, seen  # referee_started, the listening line


def test_demo_lines_say_why_and_name_teams() -> None:
    from kozel.tools.local import describe_result, sides_text
    from kozel.v1 import game_pb2 as pb
    from kozel.v1 import referee_pb2 as rpb

    four = [
        rpb.Player(seat=s, name=n, side=s % 2)
        for s, n in enumerate(["greedy-1", "random-1", "greedy-2", "random-2"])
    ]
    assert sides_text(four) == "team greedy-1 & greedy-2 vs team random-1 & random-2"
    won = pb.MatchResult(reason=pb.MATCH_END_REASON_LIMIT, winner_side=0)
    assert describe_result(won, four) == (
        "team greedy-1 & greedy-2 won: a side reached the penalty limit"
    )
    two = four[:2]
    assert sides_text(two) == "greedy-1 vs random-1"
    assert (
        describe_result(pb.MatchResult(reason=pb.MATCH_END_REASON_FORFEIT, winner_side=1), two)
        == "random-1 won: the other sides forfeited"
    )
    assert "(limit)" not in describe_result(
        pb.MatchResult(reason=pb.MATCH_END_REASON_LIMIT, draw=True), two
    )


def test_reflection_describes_methods(tmp_path: Path) -> None:
    """What ``grpcurl describe kozel.v1.RefereeService.Play`` asks (grpc/grpc#34743)."""
    import grpc
    from google.protobuf import descriptor_pb2
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    from kozel.tools.local import referee_process

    with referee_process(tmp_path) as address, grpc.insecure_channel(address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        asks = [
            reflection_pb2.ServerReflectionRequest(file_containing_symbol=name)
            for name in ("kozel.v1.RefereeService.Play", "kozel.v1.RefereeService.Nope")
        ]
        found, missing = list(stub.ServerReflectionInfo(iter(asks), timeout=60))
    files = [
        descriptor_pb2.FileDescriptorProto.FromString(b)
        for b in found.file_descriptor_response.file_descriptor_proto
    ]
    referee = next(f for f in files if f.name == "kozel/v1/referee.proto")
    service = next(s for s in referee.service if s.name == "RefereeService")
    assert "Play" in [m.name for m in service.method]
    assert missing.HasField("error_response")
