"""The replay archive (:mod:`kozel.server.replay.archive`): naming, writing, reading and
sealing, on a real folder."""

from __future__ import annotations

import gzip
import os
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kozel.core.steps import StepMeta
from kozel.engine import Match, Ruleset
from kozel.engine.players import random_action
from kozel.server.replay.archive import (
    FolderArchive,
    ReplayIdError,
    ReplaySealed,
    check_id,
)
from kozel.server.replay.build import build_replay, result_to_pb
from kozel.server.replay.file import ReplayError, encode_replay
from kozel.server.replay.verify import verify_replay
from kozel.v1 import game_pb2, replay_pb2


def _replay(match_id: str, seed: int = 1) -> replay_pb2.Replay:
    """A finished two-player classic match's replay."""
    rng = random.Random(seed)
    match = Match(Ruleset.preset("classic"), 2, seed)
    steps: list[list[StepMeta]] = [[]]
    while not match.over:
        deal = match.deal
        seat = deal.to_act[0]
        match.apply(seat, random_action(deal, seat, rng))
        steps[-1].append(StepMeta(request_id=len(steps[-1]) + 1, think_ms=1))
        if match.deal is not deal:
            steps.append([])
    now = datetime.now(UTC)
    result = result_to_pb(match, forfeits=[], timeouts=[0, 0], rejections=[0, 0])
    return build_replay(
        match,
        match_id=match_id,
        names=["a", "b"],
        time_control=game_pb2.TimeControl(move_ms=1000),
        steps=steps,
        result=result,
        started_at=now,
        ended_at=now,
    )


def test_a_written_replay_reads_back_by_id_and_by_location(tmp_path: Path) -> None:
    archive = FolderArchive(tmp_path / "replays")  # created on the first write
    replay = _replay("ab12cd34")
    assert archive.location("ab12cd34") == str(tmp_path / "replays" / "ab12cd34.kzr")
    size = archive.write(replay)
    data = archive.read_bytes("ab12cd34")
    assert data is not None and len(data) == size and data == encode_replay(replay)
    assert gzip.decompress(data) == replay.SerializeToString(deterministic=True)
    again = archive.read("ab12cd34")
    assert again == replay and verify_replay(again) == []
    assert archive.read_location(archive.location("ab12cd34")) == replay
    assert [p.name for p in (tmp_path / "replays").iterdir()] == ["ab12cd34.kzr"]  # no temp


def test_missing_oversized_and_broken_replays(tmp_path: Path) -> None:
    archive = FolderArchive(tmp_path)
    assert archive.read_bytes("00000000") is None and archive.read("00000000") is None
    assert archive.read_location(str(tmp_path / "gone.kzr")) is None
    assert archive.ids() == []
    size = archive.write(_replay("11111111"))
    assert archive.read_bytes("11111111", limit=size) is not None
    with pytest.raises(OverflowError):
        archive.read_bytes("11111111", limit=size - 1)
    (tmp_path / "22222222.kzr").write_bytes(b"not gzip")
    with pytest.raises(ReplayError):
        archive.read("22222222")
    assert FolderArchive(tmp_path / "nothing-here").ids() == []


@pytest.mark.parametrize("bad", ["../escape", "a/b", "", ".hidden", "x" * 200, "a b", "ö"])
def test_an_id_that_is_not_a_plain_name_names_nothing(tmp_path: Path, bad: str) -> None:
    archive = FolderArchive(tmp_path)
    with pytest.raises(ReplayIdError):
        check_id(bad)
    with pytest.raises(ReplayIdError):
        archive.read_bytes(bad)
    with pytest.raises(ReplayIdError):
        archive.location(bad)
    with pytest.raises(ReplayIdError):
        archive.seal(bad)
    assert list(tmp_path.iterdir()) == []


def test_ids_are_listed_newest_first_and_skip_other_files(tmp_path: Path) -> None:
    archive = FolderArchive(tmp_path)
    for k, match_id in enumerate(["cccc0000", "aaaa0000", "bbbb0000"]):
        archive.write(_replay(match_id, seed=k))
        os.utime(tmp_path / f"{match_id}.kzr", (1_000_000 + k, 1_000_000 + k))
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / ".tmp.kzr").write_bytes(b"")
    assert archive.ids() == ["bbbb0000", "aaaa0000", "cccc0000"]


def test_a_sealed_replay_is_withheld_until_unsealed(tmp_path: Path) -> None:
    archive = FolderArchive(tmp_path)
    archive.write(_replay("5ea1ed00"))
    archive.seal("5ea1ed00")
    assert archive.sealed("5ea1ed00") and not archive.sealed("other000")
    with pytest.raises(ReplaySealed):
        archive.public_bytes("5ea1ed00")
    assert archive.read_bytes("5ea1ed00") is not None  # the referee itself still reads it
    archive.unseal("5ea1ed00")
    assert not archive.sealed("5ea1ed00")
    assert archive.public_bytes("5ea1ed00") == archive.read_bytes("5ea1ed00")
    assert archive.public_bytes("00000000") is None


def test_a_write_that_fails_raises_and_leaves_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    archive = FolderArchive(blocker / "replays")
    with pytest.raises(OSError):
        archive.write(_replay("deadbeef"))
    assert [p.name for p in tmp_path.iterdir()] == ["file"] and blocker.read_text() == "x"
