"""The referee's luck worker: after real ladder matches (a duplicate ladder, real bots over
gRPC, ``kozel serve``), each finished match's luck is computed from its replay and stored, on
SQLite and on PostgreSQL; what the pages read of it adds up, and the referee's /metrics
count it."""

from __future__ import annotations

import asyncio
import math
import time
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from kozel.ladder import luck_store
from kozel.ladder.models import MatchLuckRow, MatchLuckSideRow
from kozel.ladder.store import Store
from kozel.sdk import play
from kozel.sdk.house import GreedyBot
from kozel.server.replay.file import read_replay
from kozel.tools.replay_luck import ladder_luck
from kozel.tournament import intervals
from kozel.web import luck as web_luck
from tests.server.served import luck_config, scrape, serve

LADDER = {
    "name": "lucky",
    "players": 2,
    "ruleset": {"preset": "classic", "options": {"fixed_deals": 3}},
    "duplicate": True,
    "time_control": {"move_ms": 3000, "bank_ms": 6000},
}


async def _play(address: str, tokens: dict[str, str], matches: int) -> None:
    await asyncio.gather(
        *(
            play(GreedyBot, address, name=n, join_ladder="lucky", token=t, matches=matches)
            for n, t in tokens.items()
        )
    )


def _stored(store: Store) -> dict[str, MatchLuckRow]:
    with Session(store.engine) as s:
        return {r.match_id: r for r in s.scalars(select(MatchLuckRow))}


def test_the_worker_stores_each_finished_matchs_luck(tmp_path: Path, store_url: str) -> None:
    store = Store(store_url)
    store.migrate()
    tokens = {name: store.register_bot(name) for name in ("ann", "bob")}
    config = luck_config(tmp_path, store_url, ladders=[LADDER])
    config["metrics"] = {"listen": "127.0.0.1:0"}
    ref = serve(config, tmp_path, want=("bot", "metrics"))
    try:
        asyncio.run(_play(ref.addr(), tokens, 4))
        deadline = time.monotonic() + 120
        while len(_stored(store)) < 4:  # (the results are committed after the matches end)
            assert time.monotonic() < deadline, f"the worker stored {len(_stored(store))}"
            time.sleep(0.2)
        finished = [m for m in store.matches(ladder="lucky") if m.status == "finished"]
        assert len(finished) == 4
        _its_metrics(ref.ports["metrics"], 4)
    finally:
        assert ref.stop() == 0
    stored = _stored(store)
    with Session(store.engine) as s:
        sides = list(s.scalars(select(MatchLuckSideRow)))
    for m in finished:
        replay = read_replay(tmp_path / "replays" / f"{m.id}.kzr")
        row, want = stored[m.id], ladder_luck(replay)
        assert row.error is None and row.version == want.version == 1
        assert len(row.deals) == len(replay.deals) == 3
        assert row.deals == [dict(d) for d in want.deals]  # from its replay, as computed there
        mine = sorted((x for x in sides if x.match_id == m.id), key=lambda x: x.side)
        assert (
            [(x.side, x.score) for x in mine] == [(0, 1.0), (1, 0.0)]
            or [(x.side, x.score) for x in mine] == [(0, 0.0), (1, 1.0)]
            or all(x.score == 0.5 for x in mine)
        )
        winner = replay.result.winner_side
        assert replay.result.draw or mine[winner].score == 1.0
        # Card points and luck are centred on the sides: they cancel out.
        assert math.isclose(sum(x.points for x in mine), 0, abs_tol=1e-6)
        assert math.isclose(sum(x.points_luck for x in mine), 0, abs_tol=1e-6)
        assert all(x.deals == 3 for x in mine)
    with Session(store.engine) as s:
        seats = luck_store.seat_figures(s, "lucky")
        scores = luck_store.corrected_scores(s, "lucky")
    assert {x.group for x in seats} == {m.dup_group for m in finished}  # two groups of two
    assert set(scores) == {"ann", "bob"}
    for bot, est in scores.items():
        assert est["matches"] == 4 and est["groups"] == 2
        assert est["low"] is not None and est["low"] <= est["value"] <= est["high"]
        # The store's sums by group give what the seats give one by one.
        its = [x for x in seats if x.bot == bot]
        groups = {g: [x.corrected for x in its if x.group == g] for g in {x.group for x in its}}
        mean = intervals.cluster_mean(list(groups.values()))
        assert mean is not None and math.isclose(est["value"], mean[0], abs_tol=1e-4)
        assert math.isclose(est["low"], mean[1], abs_tol=1e-4)
        assert math.isclose(est["plain"], sum(x.score for x in its) / 4, abs_tol=1e-4)
    # Two sides: the two bots' corrected scores add up to one, match by match.
    assert math.isclose(scores["ann"]["value"] + scores["bob"]["value"], 1.0, abs_tol=1e-3)
    _the_web_reads_them(store, finished, scores)


def _its_metrics(port: int, matches: int) -> None:
    """The worker's metrics, read from the referee's real /metrics endpoint."""
    deadline = time.monotonic() + 30
    while (got := scrape(port))["kozel_luck_pending"] != 0:  # (set at the end of a pass)
        assert time.monotonic() < deadline, got["kozel_luck_pending"]
        time.sleep(0.2)
    assert got["kozel_luck_corrected_total"] == matches
    for reason in luck_store.NO_LUCK:  # every series, at zero
        assert got[f"kozel_luck_missing_total{{reason={reason}}}"] == 0
    assert 0 < got["kozel_luck_cpu_seconds_total"] < 60
    assert 0 < time.time() - got["kozel_luck_last_pass_timestamp_seconds"] < 30


def _the_web_reads_them(store: Store, finished: list, scores: dict) -> None:
    """What the web's luck routes read, on this store (SQLite or PostgreSQL)."""
    pair = web_luck.matchup(store, "lucky", "ann", "bob")
    assert {m["match_id"] for m in pair["matches"]} == {m.id for m in finished}
    assert pair["performance"] == scores  # every match of the ladder is theirs
    assert all(x["corrected"] is not None for m in pair["matches"] for x in m["seats"])
    assert {k: v.model_dump() for k, v in web_luck.standings_luck(store, "lucky").items()} == scores
    split = web_luck.match_luck(store, finished[0].id)
    assert split["status"] == "computed" and len(split["deals"]) == 3
    assert [x["side"] for x in split["sides"]] == [0, 1]
    assert web_luck.match_luck(store, "0" * 32)["status"] == "none"
    store.close()


def test_cluster_mean_is_clustered_by_group() -> None:
    mean, low, high = intervals.cluster_mean([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]]) or (0, 0, 0)
    assert mean == 0.5
    # Group sums 1, 2, 0 against 2 x 0.5: spread 2, k = 3, n = 6.
    half = intervals.Z95 * math.sqrt(2 * 3 / 2) / 6
    assert math.isclose(low, 0.5 - half) and math.isclose(high, 0.5 + half)
    assert intervals.cluster_mean([]) is None
    one = intervals.estimate([(1, 0.3)])  # one group: no interval
    assert one is not None and one.value == 0.3 and one.low is None and one.high is None
