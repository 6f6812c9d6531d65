"""The Go, Rust and Java example bots run from a copy outside the repository with the one
setting docs/bots.md (section 4) gives: each marked block is run as written by bash in an
empty folder (``KOZEL`` set to this checkout), and ends with ``kozel play`` against greedy.

The toolchains come from the per-language test modules, which fail under CI when one is
missing. Cargo builds into a cache folder of its own (``CARGO_TARGET_DIR``, an environment
setting of the test, not of the block) so that only the first run compiles the crates."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli.test_bots_doc import assert_played, doc_block, run_as_written
from tests.clients.test_go_bot import _go
from tests.clients.test_java_bot import _toolchain as _java
from tests.clients.test_rust_bot import _cargo

pytestmark = pytest.mark.timeout(1800)  # a first build of each toolchain
CARGO_TARGET = Path.home() / ".cache" / "kozel" / "cargo-target-copy"


def test_a_copy_of_the_go_bot(tmp_path: Path) -> None:
    go = _go()
    script = doc_block("copy-go")
    path = f"{Path(go).parent}{os.pathsep}{os.environ['PATH']}"
    out = run_as_written(script, tmp_path, {"PATH": path})
    assert_played(out, 2, tmp_path / "mygobot" / "replays")


def test_a_copy_of_the_rust_bot_with_kozel_proto_dir(tmp_path: Path) -> None:
    cargo = _cargo()
    if cargo is None:
        pytest.skip("cargo is not installed (tests/clients/test_rust_bot.py says so in CI)")
    script = doc_block("copy-rust")
    assert 'KOZEL_PROTO_DIR="$KOZEL/proto"' in script
    path = f"{Path(cargo).parent}{os.pathsep}{os.environ['PATH']}"
    env = {"PATH": path, "CARGO_TARGET_DIR": str(CARGO_TARGET), "CARGO_TERM_COLOR": "never"}
    out = run_as_written(script, tmp_path, env)
    assert_played(out, 2, tmp_path / "myrustbot" / "replays")


def test_a_copy_of_the_java_bot_with_kozel_proto_dir(tmp_path: Path) -> None:
    _java()
    script = doc_block("copy-java")
    assert '-Dkozel.proto.dir="$KOZEL/proto"' in script
    out = run_as_written(script, tmp_path)
    assert_played(out, 2, tmp_path / "myjavabot" / "replays")
