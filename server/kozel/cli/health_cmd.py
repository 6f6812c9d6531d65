"""``kozel health``: ask a referee's gRPC health service whether it is serving (for Docker
HEALTHCHECK and scripts). Exit 0 when SERVING, 1 otherwise."""

from __future__ import annotations

import argparse
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("health", help="check a referee's gRPC health (exit 0 if SERVING)")
    p.add_argument("--address", default="127.0.0.1:50051", help="host:port of the referee")
    p.add_argument("--service", default="",
                   help='service to ask about; "" (default) is the referee as a whole')
    p.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for the answer")
    p.add_argument("--tls-ca", type=Path, help="CA bundle (PEM): connect with TLS")
    p.add_argument("--tls-cert", type=Path, help="client certificate (PEM), for mutual TLS")
    p.add_argument("--tls-key", type=Path, help="client private key (PEM), for mutual TLS")
    p.add_argument("--tls-server-name",
                   help="name to check the server certificate against (default: the host)")
    p.set_defaults(func=cmd_health)


def _channel(args: argparse.Namespace) -> grpc.Channel:
    if args.tls_ca is None:
        if args.tls_cert or args.tls_key or args.tls_server_name:
            raise ValueError("--tls-cert, --tls-key and --tls-server-name need --tls-ca")
        return grpc.insecure_channel(args.address)
    if (args.tls_cert is None) != (args.tls_key is None):
        raise ValueError("--tls-cert and --tls-key go together")
    creds = grpc.ssl_channel_credentials(
        root_certificates=args.tls_ca.read_bytes(),
        private_key=args.tls_key.read_bytes() if args.tls_key else None,
        certificate_chain=args.tls_cert.read_bytes() if args.tls_cert else None)
    options = ([("grpc.ssl_target_name_override", args.tls_server_name)]
               if args.tls_server_name else [])
    return grpc.secure_channel(args.address, creds, options=options)


def cmd_health(args: argparse.Namespace) -> int:
    try:
        channel = _channel(args)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}")
        return 1
    with channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            resp = stub.Check(health_pb2.HealthCheckRequest(service=args.service),
                              timeout=args.timeout)
        except grpc.RpcError as exc:
            # The health service answers NOT_FOUND for a service it does not know.
            print(f"{exc.code().name}: {exc.details()}")
            return 1
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status)
    print(status)
    return 0 if resp.status == health_pb2.HealthCheckResponse.SERVING else 1
