"""A referee process with its default clock (2 s a move, 10 s bank, 10 s grace) per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.server.conftest import RefereeProcess, start_referee_process, stop_referee_process


@pytest.fixture(scope="module")
def referee(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefereeProcess]:
    ref = start_referee_process(tmp_path_factory.mktemp("replays"))
    yield ref
    stop_referee_process(ref)
