"""Operations against real ``kozel serve`` processes: the config file with environment and flag
overrides, TLS and mutual TLS, the operator port with the admin token, metrics, JSON logs and
the SIGTERM drain."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from kozel.core.clock import Clock
from kozel.ladder.config import ConfigError
from kozel.ladder.store import Store, default_url
from kozel.sdk import play
from kozel.sdk.house import RandomBot
from kozel.server.replay.file import read_replay
from kozel.server.replay.verify import verify_replay
from kozel.server.settings import load_settings
from kozel.v1 import admin_pb2 as apb
from kozel.v1 import admin_pb2_grpc, referee_pb2_grpc
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from tests.server.served import Served, base_config, serve
from tests.tlsfiles import issue_pki

ADMIN = "s3cret-admin-token-0123456789abcdef0123"


def health_status(channel: grpc.Channel) -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    return stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5).status


# -- configuration -------------------------------------------------------------------------------


def test_file_then_environment_then_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "referee.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "listen": "0.0.0.0:7000",
                "clock": {"move_ms": 900},
                "storage": {"data_dir": str(tmp_path / "d"), "database_url": "sqlite:///file.db"},
                "limits": {"max_streams": 10},
                "operator": {"admin_token": "from-file-" + "f" * 32},
            }
        )
    )
    monkeypatch.setenv("KOZEL_STORAGE__DATABASE_URL", "sqlite:///env.db")
    monkeypatch.setenv("KOZEL_LIMITS__MAX_STREAMS", "20")
    monkeypatch.setenv("KOZEL_OPERATOR__ADMIN_TOKEN", "from-env-" + "e" * 32)
    monkeypatch.setenv("KOZEL_CLOCK__BANK_MS", "4000")
    config = load_settings(path, {"limits": {"max_streams": 30}}).server_config()
    assert config.listen == "0.0.0.0:7000" and config.clock.move_ms == 900  # file
    assert config.clock == Clock(move_ms=900, bank_ms=4000)  # the environment fills in
    assert config.database_url == "sqlite:///env.db"  # environment beats the file
    assert config.admin_token == "from-env-" + "e" * 32
    assert config.max_streams == 30  # flags beat both
    assert config.replay_dir == tmp_path / "d" / "replays"  # derived default


@pytest.mark.parametrize(
    ("token", "why"),
    [
        ("replace-me-with-openssl-rand-hex-32", "placeholder"),  # the old k8s example: 35 chars
        ("change-me", "placeholder"),
        ("ab", "2 characters; at least 32"),
        ("x" * 31, "31 characters"),
    ],
)
def test_a_weak_or_placeholder_admin_token_refuses_the_start(
    tmp_path: Path, token: str, why: str
) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", "serve", "--check-config"],
        capture_output=True,
        text=True,
        env={**os.environ, "KOZEL_OPERATOR__ADMIN_TOKEN": token},
        cwd=tmp_path,
        timeout=60,
    )
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "admin_token" in out and why in out and token not in out  # never echoed
    file = tmp_path / "token"
    file.write_text(token)
    res = subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", "serve", "--check-config"],
        capture_output=True,
        text=True,
        env={**os.environ, "KOZEL_OPERATOR__ADMIN_TOKEN_FILE": str(file)},
        cwd=tmp_path,
        timeout=60,
    )
    assert res.returncode != 0 and "admin_token_file" in res.stdout + res.stderr


def test_bad_configuration_names_every_bad_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "listen": "nowhere",
                "clock": {"move_ms": 1, "bank_sm": 5},
                "tls": {"cert_file": str(tmp_path / "missing.pem")},
                "colour": "blue",
            }
        )
    )
    monkeypatch.setenv("KOZEL_LOGGING__FORMAT", "xml")
    with pytest.raises(ConfigError) as err:
        load_settings(path)
    text = str(err.value)
    for key in ("listen:", "clock.move_ms:", "tls:", "colour:", "logging.format:"):
        assert key in text, text
    assert "clock.move_ms: Input should be greater than or equal to 10" in text
    assert "clock.bank_sm: Extra inputs are not permitted" in text
    assert "KOZEL_LOGGING__FORMAT" in text
    monkeypatch.delenv("KOZEL_LOGGING__FORMAT")
    ladders = tmp_path / "ladders.yaml"
    ladders.write_text(
        yaml.safe_dump({"ladders": [{"name": "x", "players": 2, "ruleset": {"preset": "nope"}}]})
    )
    with pytest.raises(ConfigError, match="ruleset"):
        load_settings(None, {"ladders_file": str(ladders)})


def test_gc_thresholds_are_configured_and_checked(tmp_path: Path) -> None:
    assert load_settings(None, {}).server_config().gc_thresholds == (10_000, 20, 10)
    got = load_settings(None, {"gc_thresholds": [5000, 5, 5]}).server_config()
    assert got.gc_thresholds == (5000, 5, 5)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"gc_thresholds": [700, -1, 10]}))
    cmd = [sys.executable, "-m", "kozel.cli.main", "serve", "--check-config", "--config"]
    no = subprocess.run([*cmd, str(bad)], capture_output=True, text=True, timeout=60)
    assert no.returncode == 2 and "gc_thresholds" in no.stdout, no.stdout + no.stderr


def test_check_config_exits_without_serving(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(yaml.safe_dump(base_config(tmp_path)))
    bad.write_text(yaml.safe_dump({"limits": {"max_streams": -1}}))
    cmd = [sys.executable, "-m", "kozel.cli.main", "serve", "--check-config", "--config"]
    ok = subprocess.run([*cmd, str(good)], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "configuration ok" in ok.stdout
    no = subprocess.run([*cmd, str(bad)], capture_output=True, text=True, timeout=60)
    assert no.returncode == 2 and "limits.max_streams" in no.stdout


# -- TLS -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A test CA, a server certificate for 127.0.0.1 and a client certificate."""
    return issue_pki(tmp_path_factory.mktemp("pki"), "127.0.0.1", "localhost")


def _creds(pki: dict[str, Path], with_client_cert: bool) -> grpc.ChannelCredentials:
    if not with_client_cert:
        return grpc.ssl_channel_credentials(pki["ca"].read_bytes())
    return grpc.ssl_channel_credentials(
        pki["ca"].read_bytes(),
        private_key=pki["client_key"].read_bytes(),
        certificate_chain=pki["client_cert"].read_bytes(),
    )


async def _tls_match(address: str, creds: grpc.ChannelCredentials) -> rpb.MatchEnd:
    """A bot over TLS plays a table against a house bot."""
    async with grpc.aio.secure_channel(address, creds) as channel:
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        table = await stub.CreateTable(
            rpb.CreateTableRequest(
                ruleset=pb.Ruleset(preset="classic"), players=2, house_bots=["greedy"]
            ),
            timeout=10,
        )
    ends = await play(
        RandomBot,
        address,
        name="tls-bot",
        join_table=table.table_id,
        credentials=creds,
        reconnect=False,
    )
    return ends[0]


def test_tls_port_plays_over_tls_and_refuses_plaintext(
    tmp_path: Path, pki: dict[str, Path]
) -> None:
    config = base_config(tmp_path, tls={"cert_file": str(pki["cert"]), "key_file": str(pki["key"])})
    ref = serve(config, tmp_path)
    try:
        end = asyncio.run(_tls_match(ref.addr(), _creds(pki, False)))
        assert end.replay_id and end.result.reason != pb.MATCH_END_REASON_ABORTED
        with grpc.insecure_channel(ref.addr()) as plain, pytest.raises(grpc.RpcError) as err:
            health_status(plain)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
        # The commands that read a match reach a TLS referee with the shared TLS flags.
        tls = ["--tls-ca", str(pki["ca"])]
        shown = _kozel("ladder", *tls, "match", end.match_id, "--referee", ref.addr())
        assert shown.returncode == 0 and f"replay {end.replay_id}" in shown.stdout, shown
        watched = _kozel("watch", end.match_id, "--server", ref.addr(), *tls)
        assert "NOT_FOUND" in watched.stdout, watched  # over TLS: the referee answered
        plain_watch = _kozel("watch", end.match_id, "--server", ref.addr())
        assert "UNAVAILABLE" in plain_watch.stdout, plain_watch
    finally:
        assert ref.stop() == 0


def _kozel(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", *args], capture_output=True, text=True, timeout=60
    )


def test_mutual_tls_needs_a_client_certificate(tmp_path: Path, pki: dict[str, Path]) -> None:
    config = base_config(
        tmp_path,
        tls={
            "cert_file": str(pki["cert"]),
            "key_file": str(pki["key"]),
            "client_ca_file": str(pki["ca"]),
        },
    )
    ref = serve(config, tmp_path)
    try:
        with grpc.secure_channel(ref.addr(), _creds(pki, True)) as good:
            assert health_status(good) == health_pb2.HealthCheckResponse.SERVING
        with (
            grpc.secure_channel(ref.addr(), _creds(pki, False)) as anon,
            pytest.raises(grpc.RpcError) as err,
        ):
            health_status(anon)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
        end = asyncio.run(_tls_match(ref.addr(), _creds(pki, True)))
        assert end.result.reason != pb.MATCH_END_REASON_ABORTED
    finally:
        assert ref.stop() == 0


# -- the operator port, admin token and metrics --------------------------------------------------

LADDER = {
    "name": "duel",
    "players": 2,
    "ruleset": {"preset": "classic"},
    "time_control": {"move_ms": 2000, "bank_ms": 4000},
}


def _admin(address: str, method: str, request, token: str | None = ADMIN):
    with grpc.insecure_channel(address) as channel:
        meta = [("authorization", f"Bearer {token}")] if token is not None else []
        return getattr(admin_pb2_grpc.AdminServiceStub(channel), method)(
            request, timeout=10, metadata=meta
        )


def _ladder_state(address: str) -> apb.LadderState:
    return _admin(address, "ListLadders", apb.ListLaddersRequest()).ladders[0]


def _metric(text: str, name: str, labels: str = "") -> float:
    m = re.search(rf"^{re.escape(name)}{re.escape(labels)} (\S+)$", text, re.MULTILINE)
    assert m, f"{name}{labels} not in /metrics"
    return float(m.group(1))


def test_operator_port_admin_token_ladder_control_and_metrics(tmp_path: Path) -> None:
    config = base_config(
        tmp_path,
        operator={"listen": "127.0.0.1:0"},
        metrics={"listen": "127.0.0.1:0"},
        ladders=[LADDER],
    )
    ref = serve(
        config,
        tmp_path,
        env={"KOZEL_OPERATOR__ADMIN_TOKEN": ADMIN},
        want=("bot", "operator", "metrics"),
    )
    op = ref.addr("operator")
    bots: list[subprocess.Popen[str]] = []
    try:
        with pytest.raises(grpc.RpcError) as err:
            _admin(op, "RegisterBot", apb.RegisterBotRequest(name="x"), token=None)
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as err:
            _admin(op, "RegisterBot", apb.RegisterBotRequest(name="x"), token="wrong")
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as err:  # not on the bot port
            _admin(ref.addr(), "ListLadders", apb.ListLaddersRequest())
        assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
        with grpc.insecure_channel(op) as channel:  # health is on the operator port too
            assert health_status(channel) == health_pb2.HealthCheckResponse.SERVING

        # Register through the CLI (operator port, admin token from the environment).
        tokens = {}
        for name in ("alpha", "beta"):
            out = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "kozel.cli.main",
                    "ladder",
                    "--server",
                    op,
                    "register",
                    name,
                ],
                capture_output=True,
                text=True,
                timeout=60,
                env={**os.environ, "KOZEL_ADMIN_TOKEN": ADMIN},
            )
            assert out.returncode == 0, out.stdout + out.stderr
            tokens[name] = out.stdout.strip().splitlines()[-1]
        stopped = _admin(op, "StopLadder", apb.StopLadderRequest(ladder="duel")).ladder
        assert not stopped.running
        bots = _ladder_bots(ref, tokens, tmp_path)
        _wait(lambda: _ladder_state(op).waiting == 2, "both bots wait", bots)
        assert _ladder_state(op).running_matches == 0  # stopped: the waiting pair is not paired
        assert _admin(op, "StartLadder", apb.StartLadderRequest(ladder="duel")).ladder.running
        store = Store(default_url(tmp_path / "data"))
        _wait(lambda: store.match_counts("duel").get("finished", 0) >= 3, "three matches", bots)

        paused = _admin(
            op, "SetBotStatus", apb.SetBotStatusRequest(name="beta", status=apb.BOT_STATUS_PAUSED)
        )
        assert paused.status == apb.BOT_STATUS_PAUSED
        _wait(lambda: _ladder_state(op).running_matches == 0, "the running match ends")
        done = store.match_counts("duel")["finished"]
        time.sleep(1.0)  # a paused bot is never paired again, however long it waits
        assert store.match_counts("duel")["finished"] == done
        beta = store.bot("beta")
        assert beta is not None and beta.status == "paused"

        with urllib.request.urlopen(f"http://{ref.addr('metrics')}/metrics", timeout=10) as r:
            text = r.read().decode()
        finished = _metric(
            text, "kozel_matches_finished_total", '{ladder="duel",reason="MATCH_END_REASON_LIMIT"}'
        )
        assert finished >= 3
        decisions = _metric(text, "kozel_decisions_total", '{ladder="duel"}')
        think = _metric(text, "kozel_decision_think_seconds_count", '{ladder="duel"}')
        assert decisions > 3 * 20 and think == decisions
        assert _metric(text, "kozel_rating_updates_total", '{ladder="duel"}') >= 3
        assert _metric(text, "kozel_auth_failures_total") >= 2
        assert _metric(text, "kozel_active_streams") == 2
        assert _metric(text, "kozel_replay_bytes_written_total") > 1000
    finally:
        for bot in bots:
            bot.terminate()
            bot.wait(timeout=30)
        assert ref.stop() == 0


def _wait(cond, what: str, bots: Sequence[subprocess.Popen] = (), timeout: float = 180) -> None:
    """Poll ``cond``; on timeout fail with the bot processes' exit codes and output."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            # The bot helpers give each process a .log, the file its output goes to.
            states = [
                (b.args, b.poll(), Path(b.log).read_text()[-2000:])  # type: ignore[attr-defined]
                for b in bots
            ]
            raise AssertionError(f"timed out waiting until {what}; bots: {states}")
        time.sleep(0.1)


def _ladder_bots(ref: Served, tokens: dict[str, str], folder: Path) -> list[subprocess.Popen]:
    """A random house bot per token on ladder ``duel``, each its own process (output kept).

    The token goes through ``KOZEL_BOT_TOKEN``, not the command line, where ps would show it.
    """
    bots = []
    for name, token in tokens.items():
        log = folder / f"bot-{name}.log"
        with log.open("w") as out:
            bot = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "kozel.cli.main",
                    "bot",
                    "random",
                    "--server",
                    ref.addr(),
                    "--ladder",
                    "duel",
                    "--name",
                    name,
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "KOZEL_BOT_TOKEN": token},
            )
        bot.log = str(log)  # type: ignore[attr-defined]
        bots.append(bot)
    return bots


# -- logs and the drain --------------------------------------------------------------------------


class SlowBot(RandomBot):
    """Thinks for a while on every decision, so that a match lasts seconds."""

    delay = 0.03

    def choose(self, request: rpb.DecisionRequest) -> int:
        time.sleep(self.delay)
        return super().choose(request)


async def _start_slow_match(address: str) -> asyncio.Task[list[rpb.MatchEnd]]:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        table = await stub.CreateTable(
            rpb.CreateTableRequest(
                ruleset=pb.Ruleset(preset="classic"), players=2, house_bots=["greedy"]
            ),
            timeout=10,
        )
    return asyncio.get_running_loop().create_task(
        play(SlowBot, address, name="slow", join_table=table.table_id, reconnect=False)
    )


async def _drain_scenario(ref: Served) -> tuple[rpb.MatchEnd, list[int], grpc.StatusCode]:
    match = await _start_slow_match(ref.addr())
    await asyncio.sleep(1.0)  # the match is under way
    assert not match.done()
    ref.proc.send_signal(signal.SIGTERM)
    statuses: list[int] = []
    refused = grpc.StatusCode.OK
    async with grpc.aio.insecure_channel(ref.addr()) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for _ in range(20):
            statuses.append((await health.Check(health_pb2.HealthCheckRequest(), timeout=5)).status)
            if statuses[-1] == health_pb2.HealthCheckResponse.NOT_SERVING:
                break
            await asyncio.sleep(0.05)
        live = await health.Check(
            health_pb2.HealthCheckRequest(service="kozel.liveness"), timeout=5
        )
        statuses.append(live.status)  # liveness stays SERVING while draining
        try:  # a new table is refused while draining
            await referee_pb2_grpc.RefereeServiceStub(channel).CreateTable(
                rpb.CreateTableRequest(ruleset=pb.Ruleset(preset="classic"), players=2), timeout=5
            )
        except grpc.aio.AioRpcError as exc:
            refused = exc.code()
    ends = await match
    return ends[0], statuses, refused


def test_sigterm_drains_running_matches_then_exits_zero(tmp_path: Path) -> None:
    config = base_config(tmp_path, logging={"level": "INFO", "format": "json"})
    ref = serve(config, tmp_path)
    end, statuses, refused = asyncio.run(_drain_scenario(ref))
    assert statuses[-2:] == [
        health_pb2.HealthCheckResponse.NOT_SERVING,
        health_pb2.HealthCheckResponse.SERVING,
    ]
    assert refused == grpc.StatusCode.UNAVAILABLE
    assert end.result.reason != pb.MATCH_END_REASON_ABORTED  # it finished normally
    assert ref.proc.wait(timeout=60) == 0
    replay = read_replay(tmp_path / "data" / "replays" / f"{end.replay_id}.kzr")
    assert verify_replay(replay) == []

    # Every log line is JSON; lines about a match carry its id and ladder, seat lines a seat.
    assert ref.proc.stdout is not None
    lines = ref.lines + ref.proc.stdout.read().splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert len(records) >= 4 and all("event" in r and "level" in r for r in records)
    about = [r for r in records if r.get("match_id") == end.match_id]
    events = {r["event"] for r in about}
    assert {"match_started", "match_ended"} <= events, events
    assert all("ladder" in r for r in about)
    assert {"drain_started", "drain_finished", "referee_stopped"} <= {r["event"] for r in records}


def test_drain_timeout_aborts_what_is_left_and_records_it(tmp_path: Path) -> None:
    store = Store(default_url(tmp_path / "data"))
    store.migrate()
    tokens = {name: store.register_bot(name) for name in ("slow-a", "slow-b")}
    ladder = {**LADDER, "time_control": {"move_ms": 3000, "bank_ms": 0}}
    config = base_config(tmp_path, ladders=[ladder], drain_timeout_s=1)
    ref = serve(config, tmp_path)

    async def scenario() -> list[list[rpb.MatchEnd]]:
        SlowBot.delay = 0.2
        tasks = [
            asyncio.create_task(
                play(
                    SlowBot,
                    ref.addr(),
                    name=n,
                    join_ladder="duel",
                    token=t,
                    reconnect=False,
                    matches=1,
                )
            )
            for n, t in tokens.items()
        ]
        await asyncio.to_thread(
            _wait, lambda: store.match_counts("duel").get("running"), "a ladder match runs"
        )
        ref.proc.send_signal(signal.SIGTERM)
        return await asyncio.gather(*tasks)

    try:
        ends = asyncio.run(scenario())
    finally:
        SlowBot.delay = 0.03
    assert ref.proc.wait(timeout=60) == 0
    assert ends[0][0].result.reason == pb.MATCH_END_REASON_ABORTED
    assert store.match_counts("duel") == {"aborted": 1}
    assert store.check_consistency() == []
    assert all(s.matches == 0 for s in store.standings("duel"))  # no rating change


def test_the_meeting_cap_holds_on_a_running_ladder(tmp_path: Path) -> None:
    store = Store(default_url(tmp_path / "data"))
    store.migrate()
    tokens = {name: store.register_bot(name) for name in ("one", "two")}
    ladder = {**LADDER, "repeat_cap": 2, "repeat_cap_window_s": 3600}
    ref = serve(
        base_config(tmp_path, ladders=[ladder], operator={"listen": "127.0.0.1:0"}),
        tmp_path,
        env={"KOZEL_OPERATOR__ADMIN_TOKEN": ADMIN},
        want=("bot", "operator"),
    )
    bots = _ladder_bots(ref, tokens, tmp_path)
    try:
        _wait(lambda: store.match_counts("duel").get("finished", 0) >= 2, "two matches", bots)
        _wait(lambda: _ladder_state(ref.addr("operator")).waiting == 2, "both wait again", bots)
        time.sleep(1.5)  # several scheduling rounds pass
        assert store.match_counts("duel") == {"finished": 2}
        assert _ladder_state(ref.addr("operator")).running_matches == 0
    finally:
        for bot in bots:
            bot.terminate()
            bot.wait(timeout=30)
        assert ref.stop() == 0
