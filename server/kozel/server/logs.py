"""Structured logs: structlog on top of the standard ``logging`` module, so grpc's and
SQLAlchemy's lines come out in the same format. JSON lines by default, console for humans.

Modules log with ``structlog.get_logger(__name__)`` and key-value pairs; lines about a match
carry ``match_id``, ``ladder`` and (when about one seat) ``seat``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

from kozel.server.text import escape

_SHARED: list[structlog.types.Processor] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]

structlog.configure(
    processors=[
        structlog.stdlib.filter_by_level,
        *_SHARED,
        structlog.processors.StackInfoRenderer(),
        structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
    ],
    logger_factory=structlog.stdlib.LoggerFactory(),
    wrapper_class=structlog.stdlib.BoundLogger,
    cache_logger_on_first_use=True,
)


def _escape_strings(
    _logger: object, _name: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Console lines: client strings (bot names, ids) may hold terminal escapes; JSON lines
    escape them already."""
    return {k: escape(v) if isinstance(v, str) else v for k, v in event.items()}


def configure_logging(level: str = "INFO", fmt: str = "json") -> None:
    """Send every log line to stderr, rendered as JSON (``fmt="json"``) or for a console."""
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=_SHARED,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                *([] if fmt == "json" else [_escape_strings]),
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
