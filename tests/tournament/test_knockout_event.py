"""A double-elimination bracket of eight places for seven bots (one bye) in which a registered
bot never connects: its games start without it and are forfeited by the referee's own rule,
it is withdrawn after two forfeits in a row and loses the rest without play, and the event goes
on to its champion."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml

from kozel.ladder import tournament_store as ts
from kozel.ladder.store import Store
from kozel.server.replay.file import read_replay
from kozel.server.tournament_archive import results_json
from kozel.v1 import game_pb2 as pb
from tests.ladder.fleet import wait
from tests.server.conftest import start_referee_process

BOTS = ["greedy-1", "ghost", "greedy-2", "random-1", "greedy-3", "random-2", "random-3"]


def _event() -> dict:
    bots = [{"name": n} if n == "ghost" else {"name": n, "house": n.split("-")[0]} for n in BOTS]
    return {
        "name": "bracket",
        "ruleset": {"preset": "classic", "options": {"fixed_deals": 1}},
        "time_control": {"move_ms": 2000, "bank_ms": 10000, "grace_ms": 300},
        "groups": 1,
        "bots": bots,
        "forfeits": {"absent_wait_s": 0.5, "withdraw_after": 2},
        "stages": [{"format": "knockout", "elimination": "double", "seeding": "order"}],
        "winners": ["standings", "total_score"],
    }


def test_double_elimination_with_a_bye_and_a_forfeit(tmp_path: Path) -> None:
    events = tmp_path / "t.yaml"
    events.write_text(yaml.safe_dump({"tournaments": [_event()]}))
    data = tmp_path / "data"
    data.mkdir()
    store = Store(f"sqlite:///{data / 'kozel.db'}")
    store.migrate()
    store.register_bot("ghost")  # registered, never connects
    ref = start_referee_process(
        tmp_path / "replays", "--tournaments", str(events), "--data-dir", str(data)
    )
    try:
        wait(lambda: (v := ts.view(store, "bracket")) is not None and v.state.done, "the end", 300)
        view = ts.view(store, "bracket")
    finally:
        ref.proc.terminate()
        ref.proc.wait(60)
    assert view is not None
    body = results_json(view)
    (stage,) = body["stages"]
    bracket = {m["id"]: m for m in stage["bracket"]}
    assert bracket["W1-1"]["a"] == "greedy-1" and bracket["W1-1"]["b"] == ""  # seed 8: a bye
    assert bracket["W1-1"]["winner"] == "greedy-1"
    played = {p["label"]: p for r in stage["rounds"] for p in r["pairings"]}
    assert "W1-1" not in played, "a bye is not played"
    first = played["W1-2"]  # seed 4 against seed 5 ... the ghost is seed 2: W1-3
    assert set(first["order"]) == {"random-1", "greedy-3"}
    ghost = played["W1-3"]
    assert set(ghost["order"]) == {"ghost", "random-3"} and ghost["winner"] == "random-3"
    for g in ghost["games"]:  # played: the ghost's seat started absent and was forfeited
        seat = g["seats"].index("ghost")
        assert g["status"] == "finished" and g["forfeited"][seat] and g["points"][seat] == 0
        replay = read_replay(tmp_path / "replays" / f"{g['match_id']}.kzr")
        assert [f.seat for f in replay.result.forfeits] == [seat]
        assert replay.result.forfeits[0].reason == pb.FORFEIT_REASON_DISCONNECTED
    assert "ghost" in body["withdrawn"]
    later = [p for p in played.values() if "ghost" in p["order"] and p is not ghost]
    assert later, "the ghost's losers' bracket match"
    assert all(g["status"] == "decided" for p in later for g in p["games"])
    losses = Counter(m["loser"] for m in stage["bracket"] if m["loser"])
    champion = stage["standings"][0]["name"]
    assert body["winners"]["standings"] == champion and losses[champion] <= 1
    out = [b for b in BOTS if b != champion]
    assert all(losses[b] == 2 for b in out if b != bracket["GF"]["loser"]), losses
    places = {r["name"]: r["place"] for r in stage["standings"]}
    assert places[champion] == 1 and places["ghost"] == max(places.values())
