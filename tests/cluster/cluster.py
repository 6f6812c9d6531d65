"""Helpers for the shared-ladder tests: a cluster of referee processes and bots."""

from __future__ import annotations

import random
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from kozel.ladder.store import Store
from tests.ladder.fleet import bots, referee
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
