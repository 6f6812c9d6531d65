"""``kozel ladder`` account commands as real processes on a SQLite store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kozel.ladder.store import Store, default_url, hash_token


def kozel(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", "ladder", "--data-dir", str(data), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_register_prints_the_token_once_and_stores_its_hash(tmp_path: Path) -> None:
    res = kozel(tmp_path, "register", "greedy-v1")
    assert res.returncode == 0, res.stderr
    token = res.stdout.strip().splitlines()[-1]
    store = Store(default_url(tmp_path))
    bot = store.authenticate(token)
    assert bot is not None and bot.name == "greedy-v1"
    # (Never read the file itself while SQLite has it open: closing any descriptor of it drops
    # the process's POSIX locks.)
    with store.engine.connect() as conn:
        stored = conn.exec_driver_sql("SELECT token_hash FROM bots").scalar_one()
    assert stored == hash_token(token) != token
    again = kozel(tmp_path, "register", "greedy-v1")
    assert again.returncode == 1 and "exists" in again.stdout
    assert kozel(tmp_path, "pause", "greedy-v1").returncode == 0
    assert store.authenticate(token) is None
    assert kozel(tmp_path, "retire", "nobody").returncode == 1
    unknown = kozel(tmp_path, "standings", "no-such-ladder")
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert unknown.stderr.strip() == (
        "error: no standings for ladder 'no-such-ladder' in this store "
        "(ladders with standings: none)"
    )
    store.ensure_rating("classic-2p", bot.id)
    listing = kozel(tmp_path, "standings", "classic-2p")
    assert listing.returncode == 0 and "Standings: classic-2p" in listing.stdout
    assert "greedy-v1" in listing.stdout  # names are never cut, also when piped
    again = kozel(tmp_path, "standings", "classic-3p")
    assert again.returncode == 1 and "(ladders with standings: classic-2p)" in again.stderr
    store.start_match("m1", "classic-2p", 2, [(0, 0, bot.id), (1, 1, bot.id)])
    matches = kozel(tmp_path, "matches", "--bot", "greedy-v1")
    assert matches.returncode == 0 and "m1" in matches.stdout and "running" in matches.stdout
    assert kozel(tmp_path, "reset-rating", "classic-2p", "greedy-v1").returncode == 0
    assert kozel(tmp_path, "reset-rating", "classic-2p", "nobody").returncode == 1


def test_a_folder_without_a_store_is_said_to_have_none(tmp_path: Path) -> None:
    for args in (("standings", "classic-2p"), ("matches",), ("match", "0123456789abcdef")):
        res = kozel(tmp_path / "nowhere", *args)
        assert res.returncode == 1
        assert res.stderr.strip() == (
            f"error: no ladder store at {tmp_path / 'nowhere'}"
            "/kozel.db (give the referee's --data-dir, or --db for "
            "PostgreSQL)"
        )
        assert not (tmp_path / "nowhere" / "kozel.db").exists()  # nothing created


def test_the_operator_lets_a_bot_play_people_or_not(tmp_path: Path) -> None:
    assert kozel(tmp_path, "register", "greedy-v1").returncode == 0
    store = Store(default_url(tmp_path))
    assert store.playing_people(["greedy-v1"]) == set()
    on = kozel(tmp_path, "plays-people", "greedy-v1", "on")
    assert on.returncode == 0 and "'greedy-v1' plays people" in on.stdout, on.stdout
    assert store.playing_people(["greedy-v1"]) == {"greedy-v1"}
    assert kozel(tmp_path, "plays-people", "greedy-v1", "off").returncode == 0
    assert store.playing_people(["greedy-v1"]) == set()
    nobody = kozel(tmp_path, "plays-people", "nobody", "on")
    assert nobody.returncode == 1 and "no bot named 'nobody'" in nobody.stdout
    remote = kozel(tmp_path, "--server", "127.0.0.1:1", "plays-people", "greedy-v1", "on")
    assert remote.returncode == 2 and "give --db" in remote.stdout
    store.close()
