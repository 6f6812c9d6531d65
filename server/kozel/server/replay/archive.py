"""Where a referee keeps its replays, by match id: naming, writing, reading and sealing.

:class:`ReplayArchive` is what the runner, the lobby, the ladder, recovery, match details, the
web and the tools use; none of them spells out a file name. :class:`FolderArchive`, the
default, keeps one ``<match id>.kzr`` file (:mod:`kozel.server.replay.file`) per match in a
folder. Another backend (a shared database, for a cluster) implements the same few methods.

:class:`StoreArchive` adds the ladder store's copy (PostgreSQL): the ladder commits a match's
replay into the store in the same transaction as its result, so any referee sharing the store
(and ``kozel web``) serves it, also after the host's disk is gone.

Sealing: the first half of a duplicate pair holds the seed of its twin's decks, so its replay
is withheld until the twin has ended. The seals are kept by the archive object (in memory for
the folder archive: a referee seals only the first halves it plays itself).
"""

from __future__ import annotations

import os
import re
from abc import ABC, abstractmethod
from pathlib import Path

from kozel.ladder.store import Store
from kozel.server.replay.file import (
    ReplayError,
    ReplayTooLarge,
    decode_replay,
    read_replay,
    write_replay,
)
from kozel.server.replay.limits import ReplayLimits
from kozel.v1 import replay_pb2

MATCH_ID = re.compile(r"[0-9A-Za-z_-]{1,128}")
"""What an archive accepts as a match id (a plain name: it never names another place)."""

SUFFIX = ".kzr"
GROUP_SEARCH = 64
"""Matches after a duplicate match searched for its group's last one (a group is played
without other matches of its bots in between, but a cluster may interleave a few)."""


class ReplayIdError(ValueError):
    """A match id that is not a plain name."""


class ReplaySealed(Exception):
    """A sealed replay was asked for (a duplicate first half whose twin has not ended)."""


def check_id(match_id: str) -> str:
    """``match_id`` if it may name a replay; raises :class:`ReplayIdError` otherwise."""
    if not MATCH_ID.fullmatch(match_id):
        raise ReplayIdError(f"{match_id[:140]!r} is not a match id (letters, digits, - and _)")
    return match_id


class ReplayArchive(ABC):
    """The replays of finished and aborted matches, by match id. Blocking calls (all but the
    seal methods): run them in a worker thread from the event loop. Replays are read within
    ``limits``."""

    def __init__(self, limits: ReplayLimits | None = None) -> None:
        self._sealed: set[str] = set()
        self.limits = limits or ReplayLimits()

    # -- naming, writing, reading (the backend) ------------------------------------------------

    @abstractmethod
    def location(self, match_id: str) -> str:
        """Where the replay of ``match_id`` is (or will be) kept, as the ladder store records
        it (``replay_path``)."""

    @abstractmethod
    def write(self, replay: replay_pb2.Replay) -> int:
        """Keep a replay under its match id, durably before this returns; the bytes written.
        Raises ``OSError`` if it cannot be kept."""

    @abstractmethod
    def read_bytes(self, match_id: str, limit: int | None = None) -> bytes | None:
        """The stored replay (``.kzr`` content), None if there is none; ``OverflowError`` past
        ``limit`` bytes, ``OSError`` if it cannot be read."""

    @abstractmethod
    def read_location(self, location: str) -> replay_pb2.Replay | None:
        """The replay at a recorded location (this referee's or another host's), None if there
        is none; :class:`~kozel.server.replay.file.ReplayError` if it is no replay."""

    @abstractmethod
    def ids(self) -> list[str]:
        """The match ids of every replay kept, the most recently written first."""

    def read(self, match_id: str) -> replay_pb2.Replay | None:
        """The replay of ``match_id``, None if there is none; ``ReplayError`` if what is kept
        is no replay or past the limits, ``OSError`` if it cannot be read."""
        try:
            data = self.read_bytes(match_id, self.limits.max_bytes)
        except OverflowError:
            raise ReplayTooLarge(
                f"replay {match_id}: the file is larger than {self.limits.max_bytes} bytes "
                "(limits.replay_max_bytes)"
            ) from None
        return None if data is None else decode_replay(data, self.limits)

    # -- sealing -------------------------------------------------------------------------------

    def seal(self, match_id: str) -> None:
        """Withhold the replay of ``match_id`` until :meth:`unseal`."""
        self._sealed.add(check_id(match_id))

    def unseal(self, match_id: str) -> None:
        """Make the replay of ``match_id`` public (its twin ended, or will not be played)."""
        self._sealed.discard(match_id)

    def sealed(self, match_id: str) -> bool:
        """Whether the replay (and the full live view) of ``match_id`` stays secret."""
        return match_id in self._sealed

    def sealed_on_record(
        self, match_id: str, store: Store | None, duplicate_ladders: frozenset[str] = frozenset()
    ) -> bool | None:
        """(Blocking.) For a reader that holds no seals (a web server beside the referees):
        whether the replay of ``match_id`` would give away the cards of a match still to be
        played, judged from the records. A duplicate match (its ``duplicate_first_half``, or
        a match of a ladder in ``duplicate_ladders``) stays sealed until its group's last
        match, which reveals the seed, is finished in ``store`` with its replay here. A
        replay that cannot be read is sealed; one past the limits raises
        :class:`~kozel.server.replay.file.ReplayError`. None: no replay yet (nothing to give
        away, but nothing settled either)."""
        try:
            replay = self.read(match_id)
        except ReplayError:
            raise
        except (OSError, ValueError):
            return True  # it cannot be told: sealed
        if replay is None:
            return None
        if not replay.duplicate_first_half and replay.ladder not in duplicate_ladders:
            return False
        return store is None or not self._group_played(store, match_id, replay)

    def _group_played(self, store: Store, match_id: str, replay: replay_pb2.Replay) -> bool:
        """Whether the last match of ``match_id``'s duplicate group is on record: a later
        finished match of the same ladder and bots whose replay has the seed and is not
        itself a first half."""
        row = store.match_detail(match_id)
        if row is None:
            return False
        bots = sorted(x.bot for x in row.seats)
        later = store.matches(
            ladder=row.ladder, bot=bots[0], since=row.started_at, status="finished",
            oldest_first=True, limit=GROUP_SEARCH,
        )  # fmt: skip
        for m in later:
            if m.id == match_id:
                continue
            try:
                other = self.read(m.id)
            except (OSError, ValueError):
                continue
            if (
                other is not None
                and other.seed == replay.seed
                and not other.duplicate_first_half
                and sorted(s.name for s in other.seats) == bots
            ):
                return True
        return False

    def public_bytes(self, match_id: str, limit: int | None = None) -> bytes | None:
        """Like :meth:`read_bytes`, but raises :class:`ReplaySealed` for a sealed replay."""
        if self.sealed(match_id):
            raise ReplaySealed(match_id)
        return self.read_bytes(match_id, limit)


class FolderArchive(ReplayArchive):
    """One ``<match id>.kzr`` file per match in ``folder`` (created on the first write)."""

    def __init__(self, folder: Path | str, limits: ReplayLimits | None = None) -> None:
        super().__init__(limits)
        self.folder = Path(folder)

    def path(self, match_id: str) -> Path:
        """The file of ``match_id``'s replay."""
        return self.folder / f"{check_id(match_id)}{SUFFIX}"

    def location(self, match_id: str) -> str:
        return str(self.path(match_id))

    def write(self, replay: replay_pb2.Replay) -> int:
        return write_replay(self.path(replay.match_id), replay)

    def read_bytes(self, match_id: str, limit: int | None = None) -> bytes | None:
        try:
            with self.path(match_id).open("rb") as f:
                data = f.read() if limit is None else f.read(limit + 1)
        except FileNotFoundError:
            return None
        if limit is not None and len(data) > limit:
            raise OverflowError(limit)
        return data

    def read_location(self, location: str) -> replay_pb2.Replay | None:
        try:
            return read_replay(location, self.limits)
        except FileNotFoundError:
            return None

    def ids(self) -> list[str]:
        found = []
        try:
            entries = list(os.scandir(self.folder))
        except FileNotFoundError:
            return []
        for entry in entries:
            match_id = entry.name.removesuffix(SUFFIX)
            if entry.name.endswith(SUFFIX) and MATCH_ID.fullmatch(match_id):
                try:
                    found.append((entry.stat().st_mtime, match_id))
                except OSError:  # removed meanwhile
                    continue
        return [match_id for _, match_id in sorted(found, reverse=True)]


class StoreArchive(FolderArchive):
    """The host's folder first, then the copy in the ladder store (a shared PostgreSQL), which
    has every ladder replay any referee committed."""

    def __init__(
        self, folder: Path | str, store: Store, limits: ReplayLimits | None = None
    ) -> None:
        super().__init__(folder, limits)
        self.store = store

    def read_bytes(self, match_id: str, limit: int | None = None) -> bytes | None:
        data = super().read_bytes(match_id, limit)
        if data is None:
            data = self.store.replay_bytes(check_id(match_id), limit)
        return data

    def read_location(self, location: str) -> replay_pb2.Replay | None:
        found = super().read_location(location)
        if found is None:  # another host's folder: its copy in the store, by the file's name
            match_id = Path(location).name.removesuffix(SUFFIX)
            if not MATCH_ID.fullmatch(match_id):
                return None
            try:
                data = self.store.replay_bytes(match_id, self.limits.max_bytes)
            except OverflowError:
                raise ReplayTooLarge(
                    f"replay {match_id}: larger than {self.limits.max_bytes} bytes "
                    "(limits.replay_max_bytes)"
                ) from None
            found = None if data is None else decode_replay(data, self.limits)
        return found
