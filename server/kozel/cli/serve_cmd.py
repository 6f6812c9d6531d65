"""``kozel serve``: run a referee from a config file, ``KOZEL_*`` variables and flags."""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import re
import socket
import sys
from pathlib import Path
from typing import Any

# Flag -> key path in the config file (flags override the file and the environment).
FLAGS: dict[str, tuple[str, ...]] = {
    "listen": ("listen",),
    "operator_listen": ("operator", "listen"),
    "metrics_listen": ("metrics", "listen"),
    "web_listen": ("web", "listen"),
    "replay_dir": ("storage", "replay_dir"),
    "data_dir": ("storage", "data_dir"),
    "db": ("storage", "database_url"),
    "ladders": ("ladders_file",),
    "tournaments": ("tournaments_file",),
    "referee_id": ("referee", "id"),
    "lease": ("referee", "lease_s"),
    "standby": ("referee", "standby"),
    "cluster": ("referee", "cluster"),
    "advertise_address": ("advertise_address",),
    "log_level": ("logging", "level"),
    "log_format": ("logging", "format"),
    "drain_timeout": ("drain_timeout_s",),
    "move_ms": ("clock", "move_ms"),
    "bank_ms": ("clock", "bank_ms"),
    "max_strikes": ("clock", "max_strikes"),
    "max_retries": ("clock", "max_retries"),
    "grace_ms": ("clock", "grace_ms"),
    "hello_timeout": ("limits", "hello_timeout_s"),
    "max_streams": ("limits", "max_streams"),
    "max_message_bytes": ("limits", "max_receive_message_bytes"),
}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="run a referee",
        description="Run a referee. Settings come from --config (YAML), then "
        "KOZEL_* environment variables (KOZEL_SECTION__KEY for "
        "nested keys), then these flags.",
    )
    p.add_argument("--config", type=Path, help="YAML configuration file")
    p.add_argument(
        "--check-config",
        action="store_true",
        help="validate the configuration and exit (0 ok, 2 errors)",
    )
    p.add_argument("--listen", help="bot port host:port (port 0 picks a free one)")
    p.add_argument("--operator-listen", help="operator port host:port (AdminService, health)")
    p.add_argument("--metrics-listen", help="Prometheus /metrics host:port")
    p.add_argument(
        "--web-listen",
        help="web pages and HTTP API host:port (default 127.0.0.1:8080; '' turns them off)",
    )
    p.add_argument("--replay-dir", type=Path)
    p.add_argument("--data-dir", type=Path, help="where the SQLite store is")
    p.add_argument("--db", help="database URL (PostgreSQL), instead of SQLite")
    p.add_argument("--ladders", type=Path, help="YAML file of ladders to serve")
    p.add_argument(
        "--tournaments", type=Path, help="YAML file of tournaments to serve (docs/tournaments.md)"
    )
    p.add_argument(
        "--referee-id",
        help="this referee's id in the store (default: kept in <data-dir>/referee-id)",
    )
    p.add_argument("--lease", type=float, help="seconds of the referee's lease in the store")
    p.add_argument(
        "--standby",
        action="store_true",
        default=None,
        help="wait for ladders another live referee serves, and take them over "
        "when it stops or dies (default: refuse to start)",
    )
    p.add_argument(
        "--cluster",
        action="store_true",
        default=None,
        help="share the ladders with every referee on the same store (bots are redirected "
        "to the referee hosting their match)",
    )
    p.add_argument(
        "--advertise-address",
        help="host:port other referees redirect bots to (default: the listen address)",
    )
    p.add_argument("--log-level", help="DEBUG, INFO, WARNING or ERROR")
    p.add_argument("--log-format", choices=("json", "console"))
    p.add_argument("--drain-timeout", type=float, help="seconds matches get to finish on SIGTERM")
    p.add_argument("--move-ms", type=int, help="default per-move allowance")
    p.add_argument("--bank-ms", type=int, help="default time bank per match")
    p.add_argument("--max-strikes", type=int)
    p.add_argument("--max-retries", type=int)
    p.add_argument("--grace-ms", type=int, help="reconnect grace period")
    p.add_argument("--hello-timeout", type=float, help="seconds a new stream has to send Hello")
    p.add_argument("--max-streams", type=int)
    p.add_argument("--max-message-bytes", type=int, help="largest message accepted from a bot")
    p.set_defaults(func=cmd_serve)


def overrides_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The flags that were given, as nested config keys."""
    out: dict[str, Any] = {}
    for flag, path in FLAGS.items():
        value = getattr(args, flag, None)
        if value is None:
            continue
        node = out
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return out


def cmd_serve(args: argparse.Namespace) -> int:
    from kozel.ladder.config import ConfigError
    from kozel.server.logs import configure_logging
    from kozel.server.settings import load_settings

    try:
        settings = load_settings(args.config, overrides_from_args(args))
        config = settings.server_config()
    except ConfigError as exc:
        print(f"error: {exc}")
        return 2
    if args.check_config:
        ladders = ", ".join(spec.name for spec in config.ladders) or "none"
        events = ", ".join(spec.name for spec in config.tournaments)
        print(
            f"configuration ok: bot port {config.listen}"
            f"{' (TLS)' if config.tls else ''}"
            f"{f', advertised as {config.advertise_address}' if config.advertise_address else ''}"
            f", ladders: {ladders}"
            f"{f', tournaments: {events}' if events else ''}"
        )
        return 0
    configure_logging(settings.logging.level, settings.logging.format)
    logging.getLogger("alembic").setLevel(logging.WARNING)  # no schema set-up chatter
    from kozel.server.app import serve

    for address in (config.listen, config.operator_listen, config.metrics_listen):
        if address and (taken := port_taken(address)):
            print(f"error: {taken}", file=sys.stderr)
            return 1
    # The composition root: the referee is handed the SDK's house bots and the web pages.
    from kozel.sdk.house_bots import HOUSE_BOTS
    from kozel.tools.tournament_bots import PARTS
    from kozel.web.app import start_in_referee

    start_web = start_in_referee if config.web_listen else None
    try:
        return asyncio.run(
            serve(config, house_bots=HOUSE_BOTS, start_web=start_web, tournament_parts=PARTS)
        )
    except Exception as exc:  # the first minutes: one line, not a traceback
        message = start_failure(exc)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 1


def port_taken(address: str) -> str | None:
    """Why ``host:port`` cannot be listened on (checked before gRPC tries, whose own
    failure is a C-core log line and a traceback), or None."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    if not port.isdigit() or int(port) == 0:
        return None  # port 0 picks a free one; a malformed address is gRPC's to refuse
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, int(port)))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return (
                    f"cannot listen on {address}: the port is in use by another program; "
                    f"choose another (--listen, --operator-listen, --metrics-listen)"
                )
            return f"cannot listen on {address}: {exc.strerror or exc}"
    return None


def start_failure(exc: BaseException) -> str | None:
    """One line for the failures a referee meets at start (a port in use, an unreachable
    database, a file it cannot open); None for anything else (a bug: keep the traceback)."""
    from kozel.ladder.store import StoreError
    from kozel.server.identity import IdentityError

    text = str(exc)
    if isinstance(exc, IdentityError | StoreError):  # folder in use, ladder served elsewhere
        return text
    if m := re.search(r"Failed to bind to address (\S+?);", text):
        return (
            f"cannot listen on {m.group(1)}: the port is in use by another program "
            f"(or the address is not this machine's); choose another with --listen"
        )
    try:
        from sqlalchemy.exc import DBAPIError, OperationalError
    except ImportError:  # pragma: no cover - sqlalchemy is a dependency
        DBAPIError = OperationalError = ()  # type: ignore[assignment,misc]  # noqa: N806
    if isinstance(exc, OperationalError | DBAPIError):
        cause = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        return f"cannot use the database: {cause[0] if cause else type(exc).__name__}"
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror or exc}{where}"
    return None
