"""``kozel health``: ask a referee's gRPC health service whether it is serving (for Docker
HEALTHCHECK and scripts). Exit 0 when SERVING, 1 otherwise."""

from __future__ import annotations

import argparse

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from kozel.cli.tls import add_tls_args, open_channel


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("health", help="check a referee's gRPC health (exit 0 if SERVING)")
    p.add_argument("--address", default="127.0.0.1:50051", help="host:port of the referee")
    p.add_argument(
        "--service", default="", help='service to ask about; "" (default) is the referee as a whole'
    )
    p.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for the answer")
    add_tls_args(p)
    p.set_defaults(func=cmd_health)


def cmd_health(args: argparse.Namespace) -> int:
    try:
        channel = open_channel(args, args.address)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}")
        return 1
    with channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            resp = stub.Check(
                health_pb2.HealthCheckRequest(service=args.service), timeout=args.timeout
            )
        except grpc.RpcError as exc:
            # The health service answers NOT_FOUND for a service it does not know.
            print(f"{exc.code().name}: {exc.details()}")
            return 1
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status)
    print(status)
    return 0 if resp.status == health_pb2.HealthCheckResponse.SERVING else 1
