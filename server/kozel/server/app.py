"""The referee's assembly: builds the grpc.aio servers (bot port, operator port) and the
metrics endpoint from a config, and drains them on SIGTERM. What stands above the referee is
handed in by the caller (``kozel serve``): the house bots it may seat, and the web pages."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import secrets
import shutil
import signal
import socket
import tempfile
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIServer

import grpc
import prometheus_client
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from kozel.server import metrics, tournaments
from kozel.server.admin_service import AdminService
from kozel.server.cluster import Cluster
from kozel.server.config import ServerConfig, TlsFiles
from kozel.server.house import HouseBots
from kozel.server.ladder_service import LadderService
from kozel.server.limits import CallCaps, CallLimits
from kozel.server.lobby import Lobby
from kozel.server.luck_worker import LuckCompute, LuckWorker
from kozel.server.match_service import MatchService
from kozel.server.peers import Proxies, trusted_addresses
from kozel.server.reflection import ReflectionCaps, enable_reflection
from kozel.server.service import RefereeService
from kozel.server.service import add_to_server as add_referee_service
from kozel.server.shared_store import SharedStore, open_store
from kozel.server.tournament_seats import TournamentParts
from kozel.v1 import (
    admin_pb2,
    admin_pb2_grpc,
    ladder_pb2,
    ladder_pb2_grpc,
    match_pb2,
    match_pb2_grpc,
    referee_pb2,
)

log = structlog.get_logger("kozel.app")

SERVICE_NAME = referee_pb2.DESCRIPTOR.services_by_name["RefereeService"].full_name
LADDER_SERVICE_NAME = ladder_pb2.DESCRIPTOR.services_by_name["LadderService"].full_name
MATCH_SERVICE_NAME = match_pb2.DESCRIPTOR.services_by_name["MatchService"].full_name
ADMIN_SERVICE_NAME = admin_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name
# A health name for liveness probes: SERVING from start to stop, also while draining (the
# overall "" and the RefereeService names turn NOT_SERVING as soon as a drain starts).
LIVENESS_NAME = "kozel.liveness"
# SERVING while rated ladder play runs here: the store answers and the referee is not draining;
# "kozel.ladder.<name>" likewise per ladder (NOT_SERVING too while a standby waits for it).
LADDERS_NAME = "kozel.ladders"
LADDER_NAME_PREFIX = "kozel.ladder."

# Serves the web pages for a referee (``kozel.web.child.start_in_referee``): given the lobby, the
# config and a plaintext gRPC address of this referee (its loopback bot port, or a Unix socket
# when the bot port has TLS), returns the web server (its ``stop()`` is awaited at stop) and its
# port. Handed in, as kozel.web stands on the referee.
StartWeb = Callable[[Lobby, ServerConfig, str], Awaitable[tuple[Any, int]]]


@dataclass(slots=True)
class Referee:
    """A running referee: its servers, ports and parts."""

    server: grpc.aio.Server
    port: int
    lobby: Lobby
    service: RefereeService
    health: health.aio.HealthServicer
    operator: grpc.aio.Server | None = None
    operator_port: int = 0
    metrics_http: tuple[WSGIServer, threading.Thread] | None = None
    metrics_port: int = 0
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    # kozel.web.serving.WebServer or kozel.web.child.WebChild, when the web pages are served
    web: Any = None
    web_port: int = 0
    web_socket_dir: Path | None = None  # the web child's plaintext Unix socket (TLS bot port)
    shared: SharedStore | None = None  # the ladder store and this referee's lease in it

    def ladder_health(self) -> dict[str, int]:
        """The ladder health names with their status now."""
        if self.shared is None:
            return {}
        serving, not_serving = (
            health_pb2.HealthCheckResponse.SERVING,
            health_pb2.HealthCheckResponse.NOT_SERVING,
        )
        up = self.shared.available and not self.lobby.draining
        out = {LADDERS_NAME: serving if up else not_serving}
        for name in self.lobby.ladders:
            ok = up and self.shared.rated_ok(name)
            out[LADDER_NAME_PREFIX + name] = serving if ok else not_serving
        return out

    async def update_ladder_health(self) -> None:
        for name, status in self.ladder_health().items():
            await self.health.set(name, status)

    def store_changed(self) -> None:
        """The store came or went, ladders were taken over, or orphans settled: publish the
        health, reload the ratings the scheduler pairs by, and start what may start."""
        asyncio.get_running_loop().create_task(self.update_ladder_health())
        for ladder in self.lobby.ladders.values():
            ladder.refresh_ratings()
        if self.shared is not None and self.shared.available:
            self.lobby.admit_waiting()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def _set_health(self, status: int) -> None:
        for name in ("", SERVICE_NAME):
            await self.health.set(name, status)
        await self.update_ladder_health()

    async def drain(self, timeout: float) -> int:
        """Health NOT_SERVING, no new matches, wait up to ``timeout`` s for running matches to
        finish. Returns how many were still running (``stop`` aborts them)."""
        metrics.DRAINING.set(1)
        self.lobby.start_drain()
        if self.shared is not None and self.shared.cluster is not None:
            await self.shared.cluster.drain()  # scheduler roles and assignments go elsewhere
        for tournament in self.lobby.tournaments.values():
            await tournament.drain()
        await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
        log.info("drain_started", running_matches=len(self.lobby.matches), timeout_s=timeout)
        left = await self.lobby.wait_idle(timeout)
        log.info("drain_finished", still_running=left)
        return left

    async def stop(self, grace: float = 1.0) -> None:
        """Stop serving: health NOT_SERVING, abort running matches (replays are written, ladder
        matches recorded as aborted), close the servers."""
        self.lobby.start_drain()
        if self.shared is not None and self.shared.cluster is not None:
            await self.shared.cluster.stop()  # no assignment may start while matches abort
        for tournament in self.lobby.tournaments.values():
            await tournament.stop()  # its games cut short are given back, to be played again
        await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
        await self.lobby.shutdown()
        for task in self.tasks:
            task.cancel()
        servers = [self.server] + ([self.operator] if self.operator is not None else [])
        await asyncio.gather(*(s.stop(grace) for s in servers))
        if self.web is not None:
            await self.web.stop()
        if self.web_socket_dir is not None:
            shutil.rmtree(self.web_socket_dir, ignore_errors=True)
        if self.shared is not None:  # last reader gone: flush, give back the lease, close
            await self.shared.stop()
        await self.health.set(LIVENESS_NAME, health_pb2.HealthCheckResponse.NOT_SERVING)
        if self.metrics_http is not None:
            self.metrics_http[0].shutdown()
            self.metrics_http[0].server_close()
        metrics.DRAINING.set(0)


def advertised(config: ServerConfig, port: int) -> str:
    """The host:port other referees redirect bots to: ``advertise_address``, else the listen
    address with the bound port (a wildcard host becomes this machine's name)."""
    if config.advertise_address:
        return config.advertise_address
    return f"{_listen_host(config.listen) or socket.getfqdn()}:{port}"


def _listen_host(listen: str) -> str:
    """The host of a listen address; "" for a wildcard (any address of this machine)."""
    host = listen.rsplit(":", 1)[0].strip("[]")
    return "" if host in ("0.0.0.0", "::") else host


def server_options(config: ServerConfig) -> list[tuple[str, int]]:
    """gRPC channel arguments: explicit limits and keepalive rules that match the SDK's."""
    return [
        ("grpc.so_reuseport", 0),  # a second server must not silently share the port
        ("grpc.max_receive_message_length", config.max_receive_message_bytes),
        ("grpc.max_send_message_length", config.max_send_message_bytes),
        # A silent connection (no TLS or HTTP/2 handshake) is closed like a stream without Hello;
        # gRPC's own default waits 120 s, which lets idle sockets pile up.
        ("grpc.server_handshake_timeout_ms", max(1, int(config.hello_timeout_s * 1000))),
        # Pings find a half-open peer (gone without a FIN) within about the sum of these.
        ("grpc.keepalive_time_ms", max(1, int(config.keepalive_time_s * 1000))),
        ("grpc.keepalive_timeout_ms", max(1, int(config.keepalive_timeout_s * 1000))),
        # The wait for a ping's answer (grpc's own default is 60 s, which made a half-open
        # connection linger 30 + 60 s).
        ("grpc.http2.ping_timeout_ms", max(1, int(config.keepalive_timeout_s * 1000))),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),  # SDK pings every 20 s
        ("grpc.http2.max_ping_strikes", 3),
    ]


def server_credentials(tls: TlsFiles) -> grpc.ServerCredentials:
    """TLS credentials; with a client CA, clients must present a certificate it signed."""
    ca = tls.client_ca.read_bytes() if tls.client_ca is not None else None
    return grpc.ssl_server_credentials(
        [(tls.key.read_bytes(), tls.cert.read_bytes())],
        root_certificates=ca,
        require_client_auth=ca is not None,
    )


def _bind(server: grpc.aio.Server, address: str, tls: TlsFiles | None) -> int:
    port = (
        server.add_secure_port(address, server_credentials(tls))
        if tls is not None
        else server.add_insecure_port(address)
    )
    if port == 0:
        raise OSError(f"cannot listen on {address}")
    return port


def loopback(listen: str, port: int) -> str:
    """This referee's bot port as a local client dials it (a wildcard host is loopback)."""
    host = _listen_host(listen) or "127.0.0.1"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _start_metrics(address: str) -> tuple[tuple[WSGIServer, threading.Thread], int]:
    host, _, port = address.rpartition(":")
    http, thread = prometheus_client.start_http_server(int(port), addr=host)
    return (http, thread), http.server_port


async def _open_shared(
    config: ServerConfig, lobby: Lobby, changed: list[Callable[[], None]]
) -> SharedStore | None:
    """The store the ladders and tournaments share (none without either): opened, recovered
    from the replay folder, its ladders added (stopped ones stay stopped), the cluster set."""
    if not (config.ladders or config.tournaments):
        return None
    opened = await asyncio.to_thread(open_store, config, lobby.replays)
    lobby.replays = opened.replays  # with PostgreSQL, it also reads the store's copies
    rec = opened.recovery
    if rec:
        log.warning(
            "recovered",
            committed_from_replays=len(rec.committed),
            marked_aborted=len(rec.aborted),
            not_committed=len(rec.skipped),
        )
    if opened.others and not config.cluster:  # in a cluster, another scheduler is normal
        log.warning("ladder_standby", waiting_for=opened.others)

    def on_change() -> None:
        for f in changed:
            f()

    shared = SharedStore(opened, config, on_change=on_change, lobby=lobby)
    lobby.serve_shared(shared)
    for spec in config.ladders:
        lobby.add_ladder(spec, shared.store, shared.queue, shared.referee_id, shared=config.cluster)
        metrics.init_ladder(spec.name)
    shared.apply_states()
    if config.cluster:
        shared.cluster = Cluster(
            lobby, shared.store, shared.referee_id, config.cluster_poll_s, shared.status
        )
    return shared


@dataclass(slots=True)
class _Servers:
    """The referee's gRPC servers, built and not yet bound."""

    server: grpc.aio.Server
    operator: grpc.aio.Server | None
    service: RefereeService
    health: health.aio.HealthServicer


def _caps(config: ServerConfig, proxies: Proxies, reflection_total: int, *, bots: bool) -> CallCaps:
    """The call caps of the bot port (``bots``: Play streams too) or of the operator port."""
    return CallCaps(
        idle_total=config.max_idle_rpcs if bots else config.operator_max_idle_rpcs,
        idle_per_peer=config.max_idle_rpcs_per_peer,
        idle_max_s=config.max_idle_rpc_s,
        streams=config.max_streams if bots else 0,
        reserved=config.reserved_rpcs,
        reflection=reflection_total,
        proxies=proxies,
    )


def _grpc_server(config: ServerConfig, caps: CallCaps) -> grpc.aio.Server:
    return grpc.aio.server(
        options=server_options(config),
        interceptors=[CallLimits(caps)],
        maximum_concurrent_rpcs=caps.grpc_slots,
    )


def _build_servers(config: ServerConfig, lobby: Lobby, shared: SharedStore | None) -> _Servers:
    """The bot port's server with every service (the admin one too when there is no operator
    port), and the operator port's (admin, health, reflection) when one is configured."""
    proxies = Proxies(trusted_addresses(config.trusted_proxies), config.web_proxy_key)
    service = RefereeService(config, lobby, shared.cluster if shared is not None else None, proxies)
    if shared is not None:
        shared.streams = lambda: service.open_streams
    health_servicer = health.aio.HealthServicer()
    admin = AdminService(lobby, config.admin_token, proxies)
    reflection_caps = ReflectionCaps(
        config.max_reflection_rpcs,
        config.max_reflection_rpcs_per_peer,
        config.reflection_idle_s,
        proxies,
    )
    server = _grpc_server(config, _caps(config, proxies, reflection_caps.total, bots=True))
    add_referee_service(service, server)
    ladder_pb2_grpc.add_LadderServiceServicer_to_server(LadderService(lobby), server)
    match_pb2_grpc.add_MatchServiceServicer_to_server(MatchService(lobby, proxies), server)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = [SERVICE_NAME, LADDER_SERVICE_NAME, MATCH_SERVICE_NAME, health.SERVICE_NAME]
    operator = None
    if config.operator_listen:
        operator = _grpc_server(config, _caps(config, proxies, reflection_caps.total, bots=False))
        admin_pb2_grpc.add_AdminServiceServicer_to_server(admin, operator)
        health_pb2_grpc.add_HealthServicer_to_server(health_servicer, operator)
        enable_reflection(
            (ADMIN_SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME),
            operator,
            reflection_caps,
        )
    else:
        admin_pb2_grpc.add_AdminServiceServicer_to_server(admin, server)
        names.insert(2, ADMIN_SERVICE_NAME)
    # Method symbols too (grpc/grpc#34743).
    enable_reflection([*names, reflection.SERVICE_NAME], server, reflection_caps)
    return _Servers(server, operator, service, health_servicer)


@dataclass(slots=True)
class _Bound:
    """The ports bound: the bot port, the address the web child reaches this referee at (and
    the private socket folder behind it, if any), the operator and metrics ports."""

    port: int
    web_referee: str
    socket_dir: Path | None
    operator_port: int
    metrics: tuple[tuple[WSGIServer, threading.Thread], int] | tuple[None, int]


def _bind_all(config: ServerConfig, servers: _Servers, web_child: bool) -> _Bound:
    """Bind every port; on failure nothing stays bound or created."""
    socket_dir: Path | None = None
    try:
        port = _bind(servers.server, config.listen, config.tls)
        web_referee = loopback(config.listen, port)
        if web_child and config.tls is not None:
            # The web child speaks plaintext gRPC: it reaches this referee through a Unix
            # socket in a folder only this user can enter, not through the TLS port.
            socket_dir = Path(tempfile.mkdtemp(prefix="kozel-web-"))
            web_referee = f"unix:{socket_dir / 'referee.sock'}"
            _bind(servers.server, web_referee, None)
        operator = servers.operator
        operator_port = (
            _bind(operator, config.operator_listen, config.operator_tls) if operator else 0
        )
        metrics_at = _start_metrics(config.metrics_listen) if config.metrics_listen else (None, 0)
    except BaseException:
        if socket_dir is not None:
            shutil.rmtree(socket_dir, ignore_errors=True)
        raise
    return _Bound(port, web_referee, socket_dir, operator_port, metrics_at)


async def start_referee(
    config: ServerConfig,
    house_bots: HouseBots | None = None,
    *,
    start_web: StartWeb | None = None,
    tournament_parts: TournamentParts | None = None,
    luck: LuckCompute | None = None,
) -> Referee:
    """Build, bind and start a referee. Ports may be 0 for any free port. ``house_bots`` are
    the in-process players tables may ask for (none if not given); ``start_web`` serves
    ``config.web_listen`` and is needed when that is set; ``tournament_parts`` plays the
    tournaments' house bots (budgets, seeds) and command bots; ``luck`` computes a finished
    ladder match's or tournament game's luck from its replay (no luck figures without it)."""
    if config.web_listen and start_web is None:
        raise ValueError(
            f"web pages asked for on {config.web_listen}, but the referee was "
            "started without them (start_web)"
        )
    if config.web_listen and not config.web_in_process and not config.web_proxy_key:
        config = replace(config, web_proxy_key=secrets.token_urlsafe(32))
    lobby = Lobby(config, house_bots)
    changed: list[Callable[[], None]] = []  # the referee's store_changed, once it exists
    shared = await _open_shared(config, lobby, changed)
    servers = _build_servers(config, lobby, shared)
    web_child = bool(config.web_listen) and start_web is not None and not config.web_in_process
    try:
        bound = _bind_all(config, servers, web_child)
    except BaseException:
        if shared is not None:
            await shared.stop()
        raise
    if shared is not None and shared.cluster is not None:
        await asyncio.to_thread(
            shared.store.set_referee_address, shared.referee_id, advertised(config, bound.port)
        )
    referee = await _started(servers, bound, lobby, shared)
    changed.append(referee.store_changed)
    await _go_live(referee, config, bound, start_web, tournament_parts)
    if shared is not None and (config.ladders or config.tournaments) and luck is not None:
        worker = LuckWorker(
            shared.store,
            lobby.replays,
            [s.name for s in config.ladders],
            shared.referee_id,
            luck,
            tournaments=[t.name for t in config.tournaments],
            batch=config.luck_batch,
            idle_s=config.luck_idle_s,
        )
        referee.tasks.append(asyncio.get_running_loop().create_task(worker.run()))
    return referee


async def _started(
    servers: _Servers, bound: _Bound, lobby: Lobby, shared: SharedStore | None
) -> Referee:
    await servers.server.start()
    if servers.operator is not None:
        await servers.operator.start()
    metrics_http, metrics_port = bound.metrics
    return Referee(
        servers.server,
        bound.port,
        lobby,
        servers.service,
        servers.health,
        servers.operator,
        bound.operator_port,
        metrics_http,
        metrics_port,
        shared=shared,
        web_socket_dir=bound.socket_dir,
    )


async def _go_live(
    referee: Referee,
    config: ServerConfig,
    bound: _Bound,
    start_web: StartWeb | None,
    tournament_parts: TournamentParts | None,
) -> None:
    """Serve the tournaments, start the shared store's and the tournaments' loops and the
    web, then turn healthy."""
    lobby, shared = referee.lobby, referee.shared
    if shared is not None and config.tournaments:
        try:
            await tournaments.serve(
                lobby,
                config,
                shared.store,
                shared.queue,
                shared.referee_id,
                loopback(config.listen, bound.port) if bound.socket_dir else bound.web_referee,
                tournament_parts or TournamentParts(),
                lobby.house_bots,
            )
        except BaseException:
            await referee.stop()
            raise
    if shared is not None:
        shared.start()
        for rt in lobby.tournaments.values():
            rt.start()
    referee.tasks.append(
        asyncio.get_running_loop().create_task(metrics.watch_loop_lag(on_lag=lobby.observe_lag))
    )
    metrics.watch_gc()
    if config.web_listen and start_web is not None:
        referee.web, referee.web_port = await start_web(lobby, config, bound.web_referee)
    await referee._set_health(health_pb2.HealthCheckResponse.SERVING)
    await referee.health.set(LIVENESS_NAME, health_pb2.HealthCheckResponse.SERVING)
    log.info(
        "referee_started",
        port=bound.port,
        tls=config.tls is not None,
        operator_port=bound.operator_port,
        metrics_port=referee.metrics_port,
        replay_dir=str(config.replay_dir),
        ladders=[s.name for s in config.ladders],
    )


async def serve(
    config: ServerConfig,
    ready: asyncio.Event | None = None,
    *,
    house_bots: HouseBots | None = None,
    start_web: StartWeb | None = None,
    tournament_parts: TournamentParts | None = None,
    luck: LuckCompute | None = None,
) -> int:
    """Run a referee until SIGINT or SIGTERM, then drain (a second signal stops at once).
    ``house_bots``, ``start_web``, ``tournament_parts`` and ``luck`` as for
    :func:`start_referee`."""
    referee = await start_referee(
        config, house_bots, start_web=start_web, tournament_parts=tournament_parts, luck=luck
    )
    # What startup built (modules, descriptors, settings) lives as long as the process: keep it
    # out of garbage collection, or every full collection walks it all (100+ ms pauses).
    gc.freeze()
    gc.set_threshold(*config.gc_thresholds)
    stop, force = asyncio.Event(), asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        (force if stop.is_set() else stop).set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    # Announced only once a signal means a drain: a supervisor may stop us at once.
    host = config.listen.rsplit(":", 1)[0]
    print(f"kozel referee listening on {host}:{referee.port}", flush=True)
    if referee.operator is not None:
        op_host = config.operator_listen.rsplit(":", 1)[0]
        print(f"operator port listening on {op_host}:{referee.operator_port}", flush=True)
    if referee.metrics_http is not None:
        m_host = config.metrics_listen.rsplit(":", 1)[0]
        print(f"metrics on http://{m_host}:{referee.metrics_port}/metrics", flush=True)
    if referee.web is not None:
        w_host = config.web_listen.rsplit(":", 1)[0]
        print(f"web pages on http://{w_host}:{referee.web_port}/", flush=True)
    if ready is not None:
        ready.set()
    await stop.wait()
    drain = loop.create_task(referee.drain(config.drain_timeout_s))
    forced = loop.create_task(force.wait())
    await asyncio.wait([drain, forced], return_when=asyncio.FIRST_COMPLETED)
    forced.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        if not drain.done():
            drain.cancel()
            log.warning("drain_interrupted")
        await drain
    await referee.stop()
    log.info("referee_stopped")
    return 0
