"""Real referee and bot processes sharing one store, for the "nothing lost" tests."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import grpc
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from kozel.ladder.store import Store
from kozel.server.replay.file import read_replay
from kozel.v1 import game_pb2 as pb
from tests.server.conftest import RefereeProcess, start_referee_process

CLOCK = {"move_ms": 2000, "bank_ms": 5000, "grace_ms": 500}


def ladder_file(path: Path, *names: str) -> Path:
    """A ladders file of 2-player classic ladders with these names."""
    path.write_text(
        yaml.safe_dump(
            {
                "ladders": [
                    {
                        "name": n,
                        "players": 2,
                        "ruleset": {"preset": "classic"},
                        "time_control": CLOCK,
                    }
                    for n in names
                ]
            }
        )
    )
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def referee(
    home: Path, name: str, ladders: Path, db: str, *extra: str, port: int = 0
) -> RefereeProcess:
    """A referee process with its own data and replay folders under ``home/name``."""
    return start_referee_process(
        home / name / "replays",
        "--ladders",
        str(ladders),
        "--db",
        db,
        "--referee-id",
        name,
        "--data-dir",
        str(home / name / "data"),
        "--listen",
        f"127.0.0.1:{port}",
        *extra,
    )


def bots(address: str, ladder: str, tokens: dict[str, str]) -> list[subprocess.Popen[str]]:
    """One house-bot process per token (the kind is the name's prefix), playing on and on."""
    return [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kozel.cli.main",
                "bot",
                name.split("-")[0],
                "--server",
                address,
                "--ladder",
                ladder,
                "--name",
                name,
                "--quiet",
            ],
            env={**os.environ, "KOZEL_BOT_TOKEN": token},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for name, token in tokens.items()
    ]


def stop(procs: Iterable[subprocess.Popen[str]]) -> None:
    procs = list(procs)
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()


def drain(ref: RefereeProcess, timeout: float = 60) -> int:
    """SIGTERM (drain, then a clean stop); returns the exit code."""
    ref.proc.terminate()
    return ref.proc.wait(timeout=timeout)


def health(address: str, service: str) -> str:
    """The health status name of ``service`` ("UNREACHABLE" if the referee does not answer)."""
    try:
        with grpc.insecure_channel(address) as channel:
            resp = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=5
            )
    except grpc.RpcError as exc:
        return "UNREACHABLE" if exc.code() == grpc.StatusCode.UNAVAILABLE else exc.code().name
    return health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status)


def wait(
    cond: Callable[[], object], what: str, timeout: float = 120.0, every: float = 0.2
) -> float:
    """Poll ``cond`` until true; returns the seconds it took."""
    start = time.monotonic()
    while not cond():
        assert time.monotonic() - start < timeout, f"timed out after {timeout:g} s: {what}"
        time.sleep(every)
    return time.monotonic() - start


def finished_on_disk(*replay_dirs: Path) -> dict[str, Path]:
    """Finished (not aborted) ladder matches whose replays are in these folders."""
    out = {}
    for folder in replay_dirs:
        for path in folder.glob("*.kzr"):
            replay = read_replay(path)
            if replay.ladder and replay.result.reason != pb.MATCH_END_REASON_ABORTED:
                out[replay.match_id] = path
    return out


def finished_in_store(store: Store) -> set[str]:
    return {m.id for m in store.matches(limit=100_000) if m.status == "finished"}


def check_end(store: Store, on_disk: dict[str, Path], report: dict, report_to: Path) -> None:
    """What every test ends with: each finished replay committed once, the store consistent in
    one snapshot (rating chains included), the counted replays verified."""
    committed = finished_in_store(store)
    missing = sorted(set(on_disk) - committed)
    assert not missing, f"finished matches not in the store: {missing}"
    assert store.check_consistency() == []
    rows = store.matches(limit=100_000)
    assert len({r.id for r in rows}) == len(rows)  # nothing recorded twice
    if on_disk:  # the operator's own command, on every replay counted
        verified = subprocess.run(
            [
                sys.executable,
                "-m",
                "kozel.cli.main",
                "replay",
                "verify",
                *map(str, on_disk.values()),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert verified.stdout.count("replay OK") == len(on_disk)
    counts = store.match_counts()
    report.update(
        finished_replays=len(on_disk),
        committed=len(committed),
        aborted=counts.get("aborted", 0),
        running=counts.get("running", 0),
    )
    report_to.write_text(json.dumps(report, indent=1))
    print(json.dumps(report))


def random_match_replay(
    path: Path, match_id: str, names: list[str], ladder: str, seed: int
) -> None:
    """A finished 2p classic match played by random moves, written as a replay."""
    import random
    from datetime import UTC, datetime

    from kozel.core.steps import StepMeta
    from kozel.engine import Match, Ruleset
    from kozel.server.replay.build import build_replay, result_to_pb
    from kozel.server.replay.file import write_replay

    match = Match(Ruleset.preset("classic"), 2, seed)
    rng = random.Random(seed)
    steps: list[list[StepMeta]] = [[]]
    while not match.over:
        seat = match.deal.to_act[0]
        before = len(match.records)
        match.apply(seat, rng.choice(match.deal.legal_actions(seat)))
        steps[before].append(StepMeta(0, 1))
        if len(match.records) > before and not match.over:
            steps.append([])
    now = datetime.now(UTC)
    write_replay(
        path,
        build_replay(
            match,
            match_id=match_id,
            names=names,
            time_control=pb.TimeControl(),
            steps=steps,
            result=result_to_pb(match, forfeits=[], timeouts=[0, 0], rejections=[0, 0]),
            started_at=now,
            ended_at=now,
            ladder=ladder,
        ),
    )


def pg_binaries() -> Path | None:
    """The folder of PostgreSQL's server programs, if installed."""
    for folder in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (folder / "pg_ctl").exists():
            return folder
    found = shutil.which("pg_ctl")
    return Path(found).parent if found else None
