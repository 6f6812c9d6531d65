"""Helpers for the shared-ladder tests: a cluster of referee processes and bots."""

from __future__ import annotations

import contextlib
import random
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from kozel.ladder.store import Store
from tests.cluster.proxy import Proxy
from tests.ladder.fleet import bots, referee, stop
from tests.server.conftest import RefereeProcess

LADDER = "shared"


def ladder_file(path: Path, **extra: object) -> Path:
    """One 2-player classic ladder, shared by the cluster's referees."""
    spec = {
        "name": LADDER,
        "players": 2,
        "ruleset": {"preset": "classic"},
        "time_control": {"move_ms": 3000, "bank_ms": 10000, "grace_ms": 3000},
        "max_concurrent_matches": 200,
        **extra,
    }
    path.write_text(yaml.safe_dump({"ladders": [spec]}))
    return path


@dataclass
class Cluster:
    """Referee processes (by name) sharing ``db``, and bot processes connected to them."""

    home: Path
    db: str
    ladders: Path
    lease_s: float = 3.0
    referees: dict[str, RefereeProcess] = field(default_factory=dict)
    bots: dict[str, subprocess.Popen[str]] = field(default_factory=dict)
    first: dict[str, str] = field(default_factory=dict)  # bot -> referee it connected to

    def start(self, name: str, port: int = 0) -> RefereeProcess:
        ref = referee(
            self.home,
            name,
            self.ladders,
            self.db,
            "--cluster",
            "--lease",
            str(self.lease_s),
            port=port,
        )
        self.referees[name] = ref
        return ref

    def add_bots(
        self,
        store: Store,
        count: int,
        rng: random.Random,
        kind: str = "random",
        address: str = "",
    ) -> None:
        """``count`` bots, each connected to ``address`` or else to a referee picked at
        random."""
        for _ in range(count):
            name = f"{kind}-{len(self.bots)}"
            token = store.register_bot(name)
            target = address or self.referees[rng.choice(sorted(self.referees))].address
            self.first[name] = target
            (proc,) = bots(target, LADDER, {name: token})
            self.bots[name] = proc


@contextlib.contextmanager
def running(
    home: Path, db: str, ladders: Path, names: Sequence[str]
) -> Iterator[tuple[Cluster, Store, Proxy]]:
    """Referees ``names`` sharing ``db`` and ``ladders``, a proxy in front of them as the bots'
    one address; everything is stopped after."""
    store = Store(db)
    store.migrate()
    c = Cluster(home, db, ladders)
    for name in names:
        c.start(name)
    proxy = Proxy([c.referees[n].address for n in names]).start()
    try:
        yield c, store, proxy
    finally:
        stop(c.bots.values())
        stop(r.proc for r in c.referees.values())
        proxy.stop()
        store.close()
