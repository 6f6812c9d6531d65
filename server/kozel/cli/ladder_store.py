"""The ladder store a ``kozel ladder`` command names with ``--db`` or ``--data-dir``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kozel.ladder.store import Store


def open_store(args: argparse.Namespace, create: bool = False) -> Store:
    """The store named by ``--db`` or ``--data-dir``. A SQLite file that does not exist is
    created only when ``create`` (registering the first bot); otherwise the command stops
    with one line saying there is none, instead of showing an empty new store."""
    from kozel.ladder.store import Store, default_url  # SQLAlchemy: only when a store is used

    if not args.db:
        db = Path(args.data_dir) / "kozel.db"
        if not create and not db.exists():
            raise SystemExit(
                f"error: no ladder store at {db} (give the referee's --data-dir, "
                "or --db for PostgreSQL)"
            )
    store = Store(args.db or default_url(args.data_dir))
    store.migrate()
    return store
