"""A referee and bots on this machine, for ``kozel match``, ``kozel demo`` and ``kozel play``:
a referee process, bot processes, and the table RPCs, all over real gRPC."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import grpc

from kozel.core.convert import dict_to_struct
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc

KOZEL = [sys.executable, "-m", "kozel.cli.main"]


def kozel_command() -> str:
    """The ``kozel`` command as a user can type it here: ``kozel`` when that is on PATH, else
    its path (``.venv/bin/kozel`` from the checkout), else this Python with ``-m``."""
    here = Path(sys.executable).parent / "kozel"
    found = shutil.which("kozel")
    if found and here.exists() and Path(found).resolve() == here.resolve():
        return "kozel"
    if not here.exists():
        return f"{sys.executable} -m kozel.cli.main"
    try:
        return str(here.relative_to(Path.cwd()))
    except ValueError:
        return str(here)


@contextlib.contextmanager
def referee_process(replay_dir: Path, *extra: str) -> Iterator[str]:
    """Start ``kozel serve`` on a free loopback port; yields its address; stops it after. It
    serves no web pages (``extra`` may ask for them): several of these run at once, and the
    web's default port is one."""
    proc = subprocess.Popen(
        [
            *KOZEL,
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--replay-dir",
            str(replay_dir),
            "--log-level",
            "WARNING",
            "--web-listen",
            "",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 30
        address = None
        while address is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("the referee exited before listening")
            if m := re.search(r"listening on \S+:(\d+)", line):
                address = f"127.0.0.1:{m.group(1)}"
        if address is None:
            raise RuntimeError("the referee did not start within 30 s")
        # Keep reading its output: a pipe nobody reads fills up (64 KiB of warnings in a long
        # kozel play run) and then blocks the referee's next log line, and with it the referee.
        threading.Thread(target=_drain, args=(proc.stdout,), daemon=True).start()
        yield address
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def _drain(stream: IO[str]) -> None:
    for _ in stream:
        pass


def spawn_bot(kind: str, address: str, table_id: str, name: str) -> subprocess.Popen[bytes]:
    """Run a house bot as its own process (``kozel bot``) at a table."""
    return subprocess.Popen(
        [
            *KOZEL,
            "bot",
            kind,
            "--server",
            address,
            "--table",
            table_id,
            "--name",
            name,
            "--matches",
            "1",
            "--quiet",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def create_table(
    address: str,
    preset: str,
    players: int,
    options: dict | None = None,
    seed: bytes = b"",
    clock: pb.TimeControl | None = None,
) -> str:
    ruleset = pb.Ruleset(preset=preset)
    if options:
        ruleset.options.CopyFrom(dict_to_struct(options))
    with grpc.insecure_channel(address) as channel:
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        return stub.CreateTable(
            rpb.CreateTableRequest(ruleset=ruleset, players=players, seed=seed, time_control=clock)
        ).table_id


def wait_table(address: str, table_id: str, timeout: float = 600) -> rpb.WaitTableResponse:
    with grpc.insecure_channel(address) as channel:
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        return stub.WaitTable(rpb.WaitTableRequest(table_id=table_id), timeout=timeout)


# Why a match ended, in words.
END_REASONS = {
    pb.MATCH_END_REASON_LIMIT: "a side reached the penalty limit",
    pb.MATCH_END_REASON_FIXED_DEALS: "the fixed number of deals was played",
    pb.MATCH_END_REASON_FORFEIT: "the other sides forfeited",
    pb.MATCH_END_REASON_ABORTED: "the referee stopped the match",
}


def sides_text(seating: list[rpb.Player]) -> str:
    """The players by side: ``a vs b``, or ``team a & c vs team b & d`` when sides have two."""
    sides: dict[int, list[str]] = {}
    for p in sorted(seating, key=lambda p: p.seat):
        sides.setdefault(p.side, []).append(p.name)
    if all(len(names) == 1 for names in sides.values()):
        return " vs ".join(names[0] for names in sides.values())
    return " vs ".join(f"team {' & '.join(names)}" for names in sides.values())


def describe_result(result: pb.MatchResult, seating: list[rpb.Player]) -> str:
    """One line: who won and why, in words."""
    why = END_REASONS.get(result.reason, "the match ended")
    if result.draw:
        why = {
            pb.MATCH_END_REASON_LIMIT: "both sides reached the penalty limit together",
            pb.MATCH_END_REASON_ABORTED: "the referee stopped the match",
        }.get(result.reason, "equal totals")
        return f"draw: {why}"
    names = [p.name for p in seating if p.side == result.winner_side]
    who = f"team {' & '.join(names)}" if len(names) > 1 else " & ".join(names)
    return f"{who} won: {why}"
