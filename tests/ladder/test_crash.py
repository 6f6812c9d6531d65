"""SIGKILL the referee in the middle of a ladder, restart it: no finished match is lost and
the store is consistent (on SQLite and PostgreSQL)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from kozel.ladder.store import Store
from kozel.server.replay.archive import FolderArchive
from kozel.server.replay.file import read_replay
from kozel.server.replay.verify import verify_replay
from tests.server.conftest import start_referee_process, stop_referee_process

LADDER = {
    "ladders": [
        {
            "name": "crash-2p",
            "players": 2,
            "ruleset": {"preset": "classic"},
            "time_control": {"move_ms": 2000, "grace_ms": 500},
        }
    ]
}

pytestmark = pytest.mark.timeout(400)


def _bots(address: str, tokens: dict[str, str]) -> list[subprocess.Popen[str]]:
    return [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kozel.cli.main",
                "bot",
                name.split("-")[0],
                "--server",
                address,
                "--ladder",
                "crash-2p",
                "--token",
                token,
                "--name",
                name,
                "--max-matches",
                "2",
                "--quiet",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for name, token in tokens.items()
    ]


def _stop(procs: list[subprocess.Popen[str]]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(timeout=30)


def test_sigkill_mid_ladder_loses_no_finished_match(store_url: str, tmp_path: Path) -> None:
    ladders = tmp_path / "ladders.yaml"
    ladders.write_text(yaml.safe_dump(LADDER))
    replays = tmp_path / "replays"
    store = Store(store_url)
    store.migrate()
    tokens = {
        name: store.register_bot(name) for name in ("greedy-1", "greedy-2", "random-1", "random-2")
    }
    args = ("--ladders", str(ladders), "--db", store_url)
    ref = start_referee_process(replays, *args)
    bots = _bots(ref.address, tokens)
    try:
        deadline = time.monotonic() + 200
        while store.match_counts("crash-2p").get("finished", 0) < 12:
            assert time.monotonic() < deadline, store.match_counts()
            time.sleep(0.2)
        ref.proc.send_signal(signal.SIGKILL)  # mid-ladder: matches are running right now
        ref.proc.wait(timeout=30)
    finally:
        _stop(bots)
    before = {
        m.id for m in store.matches(ladder="crash-2p", limit=10_000) if m.status == "finished"
    }
    assert store.check_consistency() == []  # no half-applied result, even killed
    written = {
        p.stem for p in replays.glob("*.kzr") if read_replay(p).result.reason != 4
    }  # 4 = MATCH_END_REASON_ABORTED
    assert before <= written  # every committed match has its replay on disk

    ref = start_referee_process(replays, *args)  # restart: recovery runs at start
    stop_referee_process(ref)
    counts = store.match_counts("crash-2p")
    assert "running" not in counts, counts
    after = {m.id for m in store.matches(ladder="crash-2p", limit=10_000) if m.status == "finished"}
    assert before <= after and written <= after  # nothing finished was lost
    assert store.check_consistency() == []
    for match_id in list(after)[:5]:
        assert verify_replay(read_replay(replays / f"{match_id}.kzr")) == []
    store.close()


def test_recover_commits_a_finished_replay_and_aborts_the_rest(
    store: Store, tmp_path: Path
) -> None:
    from kozel.server.recovery import recover
    from tests.ladder.fleet import random_match_replay

    bots = [store.authenticate(store.register_bot(n)) for n in ("x", "y")]
    ids = [b.id for b in bots if b is not None]
    assert len(ids) == 2
    random_match_replay(tmp_path / "done.kzr", "done", ["x", "y"], "l", 5)
    seats = [(0, 0, ids[0]), (1, 1, ids[1])]
    store.start_match("done", "l", 2, seats, referee_id="r1")  # crash before commit
    store.start_match("cut", "l", 2, seats, referee_id="r1")  # crash mid-match
    store.start_match("theirs", "l", 2, seats, referee_id="r2")  # another referee's, live
    rec = recover(store, "r1", FolderArchive(tmp_path))
    assert (rec.committed, rec.aborted) == (["done"], ["cut"])
    assert store.match_counts("l") == {"finished": 1, "aborted": 1, "running": 1}
    # committed once, whatever happens
    assert recover(store, "r1", FolderArchive(tmp_path)).committed == []
    assert store.check_consistency() == []
    assert sum(s.matches for s in store.standings("l")) == 2
