"""A referee's stable id, and the lock that keeps one referee per data folder.

The id names the referee in the shared store (its lease, the matches it hosts). It is
configured (``referee.id``) or generated once and kept in ``<data_dir>/referee-id``, so a
restarted referee finds its own matches again. Two processes on one data folder would share
that id and its SQLite file, so the folder is locked for the life of the process.
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import socket
from pathlib import Path

ID_FILE = "referee-id"
LOCK_FILE = "referee.lock"
VALID_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class IdentityError(RuntimeError):
    """The referee cannot establish who it is (bad id, folder in use)."""


def check_id(value: str) -> str:
    """A referee id: 1 to 64 letters, digits, '.', '_' or '-' (starting with a letter or digit)."""
    if not VALID_ID.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a referee id: 1 to 64 of A-Z a-z 0-9 . _ - "
            "(starting with a letter or digit)"
        )
    return value


def referee_id(data_dir: Path, configured: str = "") -> str:
    """The configured id, else the one kept in the data folder (made there the first time)."""
    if configured:
        return check_id(configured)
    path = Path(data_dir) / ID_FILE
    try:
        return check_id(path.read_text(encoding="utf-8").strip())
    except FileNotFoundError:
        pass
    except ValueError as exc:
        raise IdentityError(f"{path}: {exc}") from None
    host = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:40].strip("-") or "referee"
    new = f"{host}-{secrets.token_hex(4)}"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(new + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return new


class FolderLock:
    """An exclusive lock on a data folder, held until :meth:`release` or the process ends."""

    def __init__(self, data_dir: Path) -> None:
        path = Path(data_dir) / LOCK_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise IdentityError(
                f"another referee uses the data folder {data_dir} (it holds "
                f"{path}); give each referee a data folder of its own"
            ) from None

    def release(self) -> None:
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1
