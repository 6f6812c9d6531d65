"""A referee of a cluster (one PostgreSQL) is killed after its ladder matches were committed
but before its luck worker did them: another referee computes their luck, from the replays
the shared store keeps (its own folder never had them); while the first one lived, the other
left its matches alone."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from kozel.ladder.models import MatchLuckRow, MatchLuckSideRow, MatchRow
from kozel.ladder.store import Store
from kozel.sdk import play
from kozel.sdk.house import GreedyBot
from kozel.server.replay.file import decode_replay
from kozel.tools.replay_luck import ladder_luck
from tests.cluster.cluster import LADDER, ladder_file
from tests.deploy.deployfiles import free_port
from tests.ladder.fleet import referee, stop, wait
from tests.server.served import scrape

MATCHES = 3


async def _play(address: str, tokens: dict[str, str]) -> None:
    await asyncio.gather(
        *(
            play(GreedyBot, address, name=n, join_ladder=LADDER, token=t, matches=MATCHES)
            for n, t in tokens.items()
        )
    )


def _hosted(store: Store, referee_id: str) -> list[str]:
    with Session(store.engine) as s:
        return list(
            s.scalars(
                select(MatchRow.id).where(
                    MatchRow.referee_id == referee_id, MatchRow.status == "finished"
                )
            )
        )


def _luck(store: Store, ids: list[str]) -> dict[str, MatchLuckRow]:
    with Session(store.engine) as s:
        rows = s.scalars(select(MatchLuckRow).where(MatchLuckRow.match_id.in_(ids)))
        return {r.match_id: r for r in rows}


def _passes_after(port: int, at: float) -> bool:
    return scrape(port)["kozel_luck_last_pass_timestamp_seconds"] > at + 1


def test_a_killed_referees_matches_get_their_luck_elsewhere(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KOZEL_LIMITS__ADMISSION_LAG_MS", "0")
    ladders = ladder_file(
        tmp_path / "ladders.yaml", ruleset={"preset": "classic", "options": {"fixed_deals": 1}}
    )
    store = Store(pg_url)
    store.migrate()
    tokens = {name: store.register_bot(name) for name in ("ann", "bob")}
    cluster = ("--cluster", "--lease", "3")
    # ref-a's worker makes its pass at start, then sleeps an hour: it dies with its matches'
    # luck not done. ref-b's passes every 0.2 s.
    monkeypatch.setenv("KOZEL_REFEREE__LUCK_IDLE_S", "3600")
    a = referee(tmp_path, "ref-a", ladders, pg_url, *cluster)
    monkeypatch.setenv("KOZEL_REFEREE__LUCK_IDLE_S", "0.2")
    port = free_port()
    b = referee(
        tmp_path, "ref-b", ladders, pg_url, *cluster, "--metrics-listen", f"127.0.0.1:{port}"
    )
    try:
        asyncio.run(_play(a.address, tokens))  # both bots on ref-a: it hosts their matches
        wait(lambda: len(_hosted(store, "ref-a")) >= MATCHES, "ref-a's matches committed", 60)
        ids = _hosted(store, "ref-a")
        committed = time.time()
        wait(lambda: _passes_after(port, committed), "ref-b passes after the commits", 30)
        assert _luck(store, ids) == {}, "ref-b took the matches of a live referee"
        assert scrape(port)["kozel_luck_pending"] == 0
        a.proc.send_signal(signal.SIGKILL)
        a.proc.wait(30)
        wait(lambda: len(_luck(store, ids)) == len(ids), "ref-b computed the orphans' luck", 60)
        assert scrape(port)["kozel_luck_corrected_total"] == len(ids)
    finally:
        stop([a.proc, b.proc])
    assert not list((tmp_path / "ref-b" / "replays").glob("*.kzr"))  # read from the store
    stored = _luck(store, ids)
    with Session(store.engine) as s:
        sides = list(s.scalars(select(MatchLuckSideRow).where(MatchLuckSideRow.match_id.in_(ids))))
    for match_id in ids:
        data = store.replay_bytes(match_id)
        assert data is not None
        want = ladder_luck(decode_replay(data))
        assert stored[match_id].error is None
        assert stored[match_id].deals == [dict(d) for d in want.deals]
        mine = sorted((x for x in sides if x.match_id == match_id), key=lambda x: x.side)
        assert [(x.score, x.score_luck) for x in mine] == [
            (f.score, f.score_luck) for f in want.sides
        ]
    store.close()
