"""One ladder across three referee processes on one PostgreSQL: bots connected at random are
paired across referees and redirected to their match's host."""

from __future__ import annotations

import random
from pathlib import Path

from kozel.ladder.store import Store
from tests.cluster.cluster import Cluster, ladder_file
from tests.ladder.fleet import finished_in_store, stop, wait


def test_three_referees_play_one_ladder(tmp_path: Path, pg_url: str) -> None:
    store = Store(pg_url)
    store.migrate()
    cluster = Cluster(tmp_path, pg_url, ladder_file(tmp_path / "ladders.yaml"))
    try:
        for name in ("ref-a", "ref-b", "ref-c"):
            cluster.start(name)
        cluster.add_bots(store, 12, random.Random(7))
        wait(lambda: len(finished_in_store(store)) >= 30, "30 rated matches", timeout=300)
        hosts = {m.referee_id for m in store.matches(limit=1000)}
        print(hosts)
        assert store.check_consistency() == []
    finally:
        stop(cluster.bots.values())
        for ref in cluster.referees.values():
            ref.proc.terminate()
        store.close()
