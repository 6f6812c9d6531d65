"""The composition root of the referee: builds the grpc.aio server from a config."""

from __future__ import annotations

import asyncio
import logging
import signal
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from kozel.server.config import ServerConfig
from kozel.server.lobby import Lobby
from kozel.server.ladder_service import LadderService
from kozel.server.service import RefereeService
from kozel.v1 import ladder_pb2, ladder_pb2_grpc, referee_pb2, referee_pb2_grpc

log = logging.getLogger("kozel.app")

SERVICE_NAME = referee_pb2.DESCRIPTOR.services_by_name["RefereeService"].full_name
LADDER_SERVICE_NAME = ladder_pb2.DESCRIPTOR.services_by_name["LadderService"].full_name


@dataclass(slots=True)
class Referee:
    """A running referee: the server, its port and its parts."""

    server: grpc.aio.Server
    port: int
    lobby: Lobby
    service: RefereeService
    health: health.aio.HealthServicer

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def stop(self, grace: float = 1.0) -> None:
        """Stop serving: health NOT_SERVING, abort running matches (replays are written), close."""
        await self.health.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
        await self.health.set(SERVICE_NAME, health_pb2.HealthCheckResponse.NOT_SERVING)
        await self.lobby.shutdown()
        await self.server.stop(grace)


def server_options(config: ServerConfig) -> list[tuple[str, int]]:
    """gRPC channel arguments: explicit limits and keepalive rules that match the SDK's."""
    return [
        ("grpc.so_reuseport", 0),  # a second server must not silently share the port
        ("grpc.max_receive_message_length", config.max_receive_message_bytes),
        ("grpc.max_send_message_length", config.max_send_message_bytes),
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.keepalive_timeout_ms", 10_000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),  # SDK pings every 20 s
        ("grpc.http2.max_ping_strikes", 3),
    ]


async def start_referee(config: ServerConfig, house_bots: dict[str, type] | None = None) -> Referee:
    """Build, bind and start a referee. ``config.listen`` may use port 0 for any free port."""
    if house_bots is None:
        from kozel.sdk.house import HOUSE_BOTS

        house_bots = HOUSE_BOTS
    lobby = Lobby(config, house_bots)
    if config.ladders:
        from kozel.ladder.runtime import recover
        from kozel.ladder.store import Store, default_url

        store = Store(config.database_url or default_url(config.data_dir))
        store.migrate()
        committed, aborted = recover(store, config.replay_dir)
        if committed or aborted:
            log.warning("recovered after a stop: %d finished matches committed from their "
                        "replays, %d unfinished matches marked aborted",
                        len(committed), len(aborted))
        for spec in config.ladders:
            lobby.add_ladder(spec, store)
    service = RefereeService(config, lobby)
    server = grpc.aio.server(options=server_options(config),
                             maximum_concurrent_rpcs=config.max_streams)
    referee_pb2_grpc.add_RefereeServiceServicer_to_server(service, server)
    ladder_pb2_grpc.add_LadderServiceServicer_to_server(
        LadderService(lobby, config.replay_dir), server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, LADDER_SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME),
        server)
    port = server.add_insecure_port(config.listen)
    if port == 0:
        raise OSError(f"cannot listen on {config.listen}")
    await server.start()
    await health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    await health_servicer.set(SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
    log.info("referee listening on port %d, replays in %s", port, config.replay_dir)
    return Referee(server, port, lobby, service, health_servicer)


async def serve(config: ServerConfig, ready: asyncio.Event | None = None) -> None:
    """Run a referee until SIGINT or SIGTERM."""
    referee = await start_referee(config)
    print(f"kozel referee listening on {config.listen.rsplit(':', 1)[0]}:{referee.port}",
          flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if ready is not None:
        ready.set()
    await stop.wait()
    await referee.stop()
