"""TLS flags shared by the commands that connect to a referee (``--tls-ca``, ``--tls-cert``,
``--tls-key``, ``--tls-server-name``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # grpc loads only when a command connects (every command builds parsers)
    import grpc


def add_tls_args(p: argparse.ArgumentParser) -> None:
    """Add the TLS flags; without ``--tls-ca`` the connection is plaintext."""
    p.add_argument("--tls-ca", type=Path, help="CA certificate (PEM) of a TLS referee port")
    p.add_argument("--tls-cert", type=Path, help="client certificate (PEM), for mutual TLS")
    p.add_argument("--tls-key", type=Path, help="client private key (PEM), for mutual TLS")
    p.add_argument(
        "--tls-server-name", help="name to check the server certificate against (default: the host)"
    )


def channel_security(
    args: argparse.Namespace,
) -> tuple[grpc.ChannelCredentials | None, list[tuple[str, str]]]:
    """Credentials (None for plaintext) and channel options from the TLS flags; a
    ``ValueError`` names an incomplete combination."""
    if args.tls_ca is None:
        if args.tls_cert or args.tls_key or args.tls_server_name:
            raise ValueError("--tls-cert, --tls-key and --tls-server-name need --tls-ca")
        return None, []
    if (args.tls_cert is None) != (args.tls_key is None):
        raise ValueError("--tls-cert and --tls-key go together")
    import grpc

    creds = grpc.ssl_channel_credentials(
        root_certificates=args.tls_ca.read_bytes(),
        private_key=args.tls_key.read_bytes() if args.tls_key else None,
        certificate_chain=args.tls_cert.read_bytes() if args.tls_cert else None,
    )
    options = (
        [("grpc.ssl_target_name_override", args.tls_server_name)] if args.tls_server_name else []
    )
    return creds, options


def open_channel(args: argparse.Namespace, address: str) -> grpc.Channel:
    """A blocking channel to ``address``, over TLS when the flags ask for it."""
    import grpc

    creds, options = channel_security(args)
    if creds is None:
        return grpc.insecure_channel(address)
    return grpc.secure_channel(address, creds, options=options)
