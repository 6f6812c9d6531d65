"""Safe text: checks for the strings clients send (names, ids) and escaping for every output.

Every string a client sends is hostile. On input, names must be printable and bounded
(:func:`check_name`), ids plain (:func:`check_id`). On output (terminal, log), :func:`escape`
renders anything that is not printable as a Python-style escape, so control characters,
terminal escape sequences (ESC), line breaks and bidirectional overrides (U+202E) never reach
a terminal as they are. Both rest on :meth:`str.isprintable`: Unicode categories Cc, Cf, Cs,
Co, Cn and the separators other than the space are not printable.
"""

from __future__ import annotations

import re

MAX_NAME = 64  # bot names and ladder names, in characters
MAX_ID = 64  # table ids
ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def escape(text: str) -> str:
    """``text`` with every character that is not printable written as ``\\xNN``, ``\\uNNNN``
    or ``\\UNNNNNNNN`` (ESC is ``\\x1b``, a newline ``\\x0a``, U+202E ``\\u202e``)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escaped(c) for c in text)


def _escaped(c: str) -> str:
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def name_problem(value: str, what: str, limit: int = MAX_NAME) -> str | None:
    """Why ``value`` cannot be a name (1 to ``limit`` printable characters, not only spaces),
    or None when it can."""
    if not 1 <= len(value) <= limit:
        return f"{what} must be 1 to {limit} characters, not {len(value)}"
    if not value.isprintable():
        bad = next(c for c in value if not c.isprintable())
        return (
            f"{what} must be printable text: it holds {_escaped(bad)} (control characters, "
            "line breaks and bidirectional overrides are refused)"
        )
    if not value.strip():
        return f"{what} must not be blank"
    return None


def id_problem(value: str, what: str, limit: int = MAX_ID) -> str | None:
    """Why ``value`` cannot be an id (1 to ``limit`` of ``A-Z a-z 0-9 . _ -``, starting with a
    letter or digit), or None when it can."""
    if not 1 <= len(value) <= limit:
        return f"{what} must be 1 to {limit} characters, not {len(value)}"
    if not ID.fullmatch(value):
        return (
            f"{what} '{escape(value)}' may hold only letters, digits, '.', '_' and '-', "
            "starting with a letter or digit"
        )
    return None


def rich_text(text: str) -> str:
    """``text`` escaped for a terminal and for Rich markup (``[bold]`` in a name stays text)."""
    from rich.markup import escape as markup_escape

    return markup_escape(escape(text))
