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

# Flag -> key path of the setting it sets. The setting (kozel.server.settings) holds its
# type, default and description; a flag's value is validated there, like the file's and the
# environment's (flags override both).
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
SWITCHES = frozenset({"standby", "cluster"})  # flags with no value: they set True


class _SettingsHelp(argparse.HelpFormatter):
    """Each flag's help is its setting's description, with its key and default (read only
    when help is shown: the settings are not imported for every command)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        path = FLAGS.get(action.dest)
        if path is None:
            return action.help
        from kozel.server.settings import describe

        return describe(path).replace("%", "%%")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="run a referee",
        description="Run a referee. Settings come from --config (YAML), then "
        "KOZEL_* environment variables (KOZEL_SECTION__KEY for "
        "nested keys), then these flags.",
        formatter_class=_SettingsHelp,
    )
    p.add_argument("--config", type=Path, help="YAML configuration file")
    p.add_argument(
        "--check-config",
        action="store_true",
        help="validate the configuration and exit (0 ok, 2 errors)",
    )
    for dest, path in FLAGS.items():
        flag = "--" + dest.replace("_", "-")
        key = ".".join(path)  # the help until the formatter replaces it
        if dest in SWITCHES:
            p.add_argument(flag, dest=dest, action="store_true", default=None, help=key)
        else:
            p.add_argument(flag, dest=dest, metavar=path[-1].upper(), help=key)
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
    # The composition root: the referee is handed the SDK's house bots, the web pages and
    # the analysis's luck of a replay.
    from kozel.sdk.house_bots import HOUSE_BOTS
    from kozel.tools.replay_luck import ladder_luck
    from kozel.tools.tournament_bots import PARTS
    from kozel.web.child import start_in_referee

    start_web = start_in_referee if config.web_listen else None
    try:
        return asyncio.run(
            serve(
                config,
                house_bots=HOUSE_BOTS,
                start_web=start_web,
                tournament_parts=PARTS,
                luck=ladder_luck,
            )
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
