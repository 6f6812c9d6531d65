"""A duplicate ladder shared by two referees: every group's first match is followed by its
twins (same seed, seats rotated, same host: two matches at two players, three at three), and
the group's replays reach the store only once its last match has ended."""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from pathlib import Path

import pytest

from kozel.ladder.duplicates import rotate
from kozel.server.replay.file import decode_replay
from tests.cluster.cluster import ladder_file, running
from tests.ladder.fleet import finished_in_store, stop, wait


@pytest.mark.parametrize(("players", "group"), [(2, 2), (3, 3)])
def test_twins_follow_their_first_match_across_referees(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch, players: int, group: int
) -> None:
    monkeypatch.setenv("KOZEL_LIMITS__ADMISSION_LAG_MS", "0")
    ladders = ladder_file(
        tmp_path / "ladders.yaml",
        ruleset={"preset": "classic", "options": {"fixed_deals": 1}},
        duplicate=True,
        players=players,
    )
    with running(tmp_path, pg_url, ladders, ("ref-a", "ref-b")) as (c, store, proxy):
        c.add_bots(store, 6, random.Random(4), address=proxy.address)
        wait(lambda: len(finished_in_store(store)) >= 24, "24 rated matches", timeout=600)
        stop(c.bots.values())
        wait(lambda: not store.running_matches(), "the last matches settled", timeout=120)
        rows = {r.id: r for r in store.matches(limit=10_000) if r.status == "finished"}
        by_seed: dict[bytes, list] = defaultdict(list)
        unpublished = []
        for match_id in rows:
            data = store.replay_bytes(match_id)
            if data is None:
                unpublished.append(match_id)
                continue
            replay = decode_replay(data)
            by_seed[replay.seed].append(replay)
        pairs = [p for p in by_seed.values() if len(p) == group]
        assert len(pairs) >= 24 // group // 3, {len(p) for p in by_seed.values()}
        assert all(len(p) <= group for p in by_seed.values())
        for played in (sorted(p, key=lambda r: r.started_at.ToDatetime()) for p in pairs):
            names = [s.name for s in sorted(played[0].seats, key=lambda s: s.seat)]
            for r, (before, twin) in enumerate(itertools.pairwise(played), start=1):
                twin_names = [s.name for s in sorted(twin.seats, key=lambda s: s.seat)]
                assert twin_names == rotate(names, r)  # the seats rotated by one more
                assert rows[played[0].match_id].referee_id == rows[twin.match_id].referee_id
                assert twin.started_at.ToDatetime() >= before.ended_at.ToDatetime()
            got = [(rows[m.match_id].dup_group, rows[m.match_id].dup_rotation) for m in played]
            assert got == [(played[0].match_id, r) for r in range(group)]
        # A first half whose twin never ended (the bots were stopped) is not published.
        for match_id in unpublished:
            assert not any(match_id == r.match_id for p in pairs for r in p)
        assert store.check_consistency() == []
