"""A reader with no seals of its own (a web server beside the referees) asks the replay archive
whether a duplicate match is sealed: judged from the records, it stays sealed until its
group's last match is on record, however many matches its bots played after the group."""

from __future__ import annotations

from pathlib import Path

from kozel.ladder.store import SeatResult, Store
from kozel.server.replay.archive import GROUP_SEARCH, FolderArchive
from tests.server.test_replay_archive import _replay

SEED = b"\x07" * 32


def test_a_duplicate_match_is_public_on_record_once_its_group_has_ended(
    store: Store, tmp_path: Path
) -> None:
    a = store.authenticate(store.register_bot("a"))
    b = store.authenticate(store.register_bot("b"))
    assert a and b
    archive = FolderArchive(tmp_path)

    def play(match_id: str, seed: bytes, first: bool) -> None:
        store.start_match(match_id, "dup", 2, [(0, 0, a.id), (1, 1, b.id)])
        store.finish_match(
            match_id,
            reason="limit",
            replay_path="",
            result={},
            seats=[
                SeatResult(0, 0, a.id, 1, 4, True, 0, False),
                SeatResult(1, 1, b.id, 2, 12, False, 0, False),
            ],
        )
        replay = _replay(match_id)
        replay.ladder, replay.seed, replay.duplicate_first_half = "dup", seed, first
        archive.write(replay)

    play("m0", SEED, first=True)
    assert archive.sealed_on_record("m0", store) is True  # its twin is still to come
    assert archive.sealed_on_record("m0", None) is True  # no store: it cannot be told
    play("m1", SEED, first=False)
    for i in range(GROUP_SEARCH):  # the same bots go on playing: the group's end is older
        play(f"x{i:03}", bytes([i]) * 32, first=False)
    assert archive.sealed_on_record("m0", store) is False
    assert archive.sealed_on_record("m1", store) is False
    assert archive.sealed_on_record("x000", store, frozenset({"dup"})) is True  # no group end
    assert archive.sealed_on_record("nothing", store) is None
