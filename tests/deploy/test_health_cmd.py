"""``kozel health`` as a process: against a real referee (bot and operator port, unknown
service, nobody listening, NOT_SERVING while draining) and against a TLS and mutual-TLS health
server with certificates from a test CA."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from kozel.v1 import game_pb2 as pb
from tests.deploy.deployfiles import free_port
from tests.server.conftest import RefereeProcess, start_referee_process, stop_referee_process
from tests.server.rawbot import RawBot, create_table, table_hello
from tests.tlsfiles import issue_pki

KOZEL = [sys.executable, "-m", "kozel.cli.main"]


def health_cmd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KOZEL, "health", *args], capture_output=True, text=True, timeout=60)


async def health_async(*args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *KOZEL, "health", *args, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode().strip()


@pytest.fixture(scope="module")
def referee(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RefereeProcess, str]]:
    """A referee with an operator port; yields it and the operator address."""
    tmp = tmp_path_factory.mktemp("health")
    operator = f"127.0.0.1:{free_port()}"
    ref = start_referee_process(
        tmp / "replays", "--data-dir", str(tmp / "data"), "--operator-listen", operator
    )
    yield ref, operator
    stop_referee_process(ref)


def test_a_serving_referee_is_healthy_on_both_ports(referee: tuple[RefereeProcess, str]) -> None:
    ref, operator = referee
    for args in (
        ["--address", ref.address],
        ["--address", ref.address, "--service", "kozel.v1.RefereeService"],
        ["--address", operator, "--timeout", "5"],
    ):
        res = health_cmd(*args)
        assert (res.returncode, res.stdout.strip()) == (0, "SERVING"), (args, res.stderr)


def test_an_unknown_service_or_no_server_is_unhealthy(referee: tuple[RefereeProcess, str]) -> None:
    ref, _ = referee
    res = health_cmd("--address", ref.address, "--service", "no.such.Service")
    assert res.returncode == 1 and res.stdout.startswith("NOT_FOUND"), res.stdout
    res = health_cmd("--address", f"127.0.0.1:{free_port()}", "--timeout", "2")
    assert res.returncode == 1 and res.stdout.startswith(("UNAVAILABLE", "DEADLINE_EXCEEDED"))


def test_a_draining_referee_is_not_serving(tmp_path: Path) -> None:
    """A match held open by a bot that never answers keeps the referee draining after
    SIGTERM; meanwhile both ports report NOT_SERVING."""
    operator = f"127.0.0.1:{free_port()}"
    ref = start_referee_process(
        tmp_path / "replays",
        "--data-dir",
        str(tmp_path / "data"),
        "--operator-listen",
        operator,
        "--drain-timeout",
        "30",
    )

    async def never(bot: RawBot, req: object) -> None:
        return None

    async def scenario() -> list[tuple[int, str]]:
        table = await create_table(
            ref.address, "classic", 2, house=["random"], clock=pb.TimeControl(move_ms=60_000)
        )
        bot = RawBot(ref.address, "mute", hello=table_hello("mute", table), answer=never)
        run = asyncio.create_task(bot.run())
        deadline = time.monotonic() + 30
        while not bot.of("match_start"):
            assert time.monotonic() < deadline and not run.done(), "the match did not start"
            await asyncio.sleep(0.05)
        ref.proc.send_signal(signal.SIGTERM)
        answers = [await health_async("--address", ref.address)]
        while answers[-1][1] != "NOT_SERVING" and time.monotonic() < deadline:
            answers.append(await health_async("--address", ref.address))
        answers.append(await health_async("--address", operator))
        assert ref.proc.poll() is None, "the referee must still be draining"
        bot.send(None)
        ref.proc.kill()
        await asyncio.wait_for(run, 30)
        return answers

    try:
        answers = asyncio.run(scenario())
    finally:
        stop_referee_process(ref)
    assert answers[-2:] == [(1, "NOT_SERVING"), (1, "NOT_SERVING")], answers


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A test CA, a server certificate for referee.test only, and a client certificate."""
    return issue_pki(tmp_path_factory.mktemp("tls"), "referee.test")


@pytest.fixture
def mtls_health(tls_files: dict[str, Path]) -> Iterator[str]:
    """A gRPC health server on loopback that requires a client certificate."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=2), options=[("grpc.so_reuseport", 0)]
    )
    servicer = health.HealthServicer()
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    creds = grpc.ssl_server_credentials(
        [(tls_files["key"].read_bytes(), tls_files["cert"].read_bytes())],
        root_certificates=tls_files["ca"].read_bytes(),
        require_client_auth=True,
    )
    port = server.add_secure_port("127.0.0.1:0", creds)
    assert port
    server.start()
    yield f"127.0.0.1:{port}"
    server.stop(0)


def test_health_over_mutual_tls(mtls_health: str, tls_files: dict[str, Path]) -> None:
    tls = ["--tls-ca", str(tls_files["ca"])]
    client = [
        "--tls-cert",
        str(tls_files["client_cert"]),
        "--tls-key",
        str(tls_files["client_key"]),
    ]
    name = ["--tls-server-name", "referee.test"]
    ok = health_cmd("--address", mtls_health, *tls, *client, *name)
    assert (ok.returncode, ok.stdout.strip()) == (0, "SERVING"), ok.stdout + ok.stderr
    for args in (
        tls + name,  # no client certificate
        tls + client,  # 127.0.0.1 is not the certificate's name
        [],
    ):  # plaintext against a TLS port
        res = health_cmd("--address", mtls_health, "--timeout", "3", *args)
        assert res.returncode == 1 and res.stdout.strip() != "SERVING", args
    bad = health_cmd("--address", mtls_health, *client)
    assert bad.returncode == 1 and "need --tls-ca" in bad.stdout
