"""The core's compiled modules (``make setup`` builds them with the engine's) run only on a
current build of the core's and the engine's sources, only with the compiled engine, and send
exactly the bytes the pure-Python core sends."""

from __future__ import annotations

import hashlib
import random
import shutil
from pathlib import Path

import pytest

import kozel.engine
from kozel.core import native
from kozel.core.clock import Clock
from kozel.core.hooks import MatchHooks
from kozel.core.protocol import MatchProtocol, Send
from kozel.engine import native as engine_native
from kozel.engine.errors import ErrorCode
from kozel.engine.rules import Ruleset
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from tests.engine.test_native import run_pure, run_python

ROOT = Path(__file__).resolve().parents[2]
SHOW = "import kozel.core.native as n, kozel.engine as e; print(e.NATIVE, n.loaded())"


class Counting(MatchHooks):
    """Hooks in Python, as the referee's runner subclasses them: what they were told, in order."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def refused(self, seat: int, code: ErrorCode) -> None:
        self.calls.append(f"refused {seat} {code}")

    def timed_out(self, seat: int, strikes: int, sealed: bool) -> None:
        self.calls.append(f"timeout {seat} {strikes} {sealed}")

    def forfeited(self, seat: int, reason: pb.ForfeitReason) -> None:
        self.calls.append(f"forfeit {seat} {reason}")


class Driver:
    """One match on a fake clock, every message it sends hashed into ``h``."""

    def __init__(self, core: MatchProtocol, h: hashlib._Hash) -> None:
        self.core, self.h, self.now = core, h, 0.0

    def take(self, sends: list[Send]) -> None:
        for seat, msg in sends:
            self.h.update(bytes([seat]) + msg.SerializeToString(deterministic=True))
            if msg.WhichOneof("message") == "decision":
                self.core.written(seat, msg.decision.request_id, self.now)

    def step(self, rng: random.Random) -> bool:
        """One thing happens to a seat that is asked; False when none is."""
        core = self.core
        asked = [r for r in map(core.pending, range(core.players)) if r is not None]
        if core.ended or not asked:
            return False
        req = asked[rng.randrange(len(asked))]
        roll = rng.random()
        self.now += 0.01
        if roll < 0.03:  # late: the deadline passes
            self.now = (core.deadline or self.now) + 0.01
            self.take(core.timer(self.now))
        elif roll < 0.05:  # the stream drops and comes back
            self.take(core.disconnect(req.seat, self.now))
            self.take(core.resume(req.seat, self.now))
        else:
            reply = rpb.ActionReply(match_id=core.match_id, request_id=req.request_id)
            # out of range now and then: refused, retried, passed when the retries run out
            wrong = roll < 0.08
            reply.legal_index = len(req.legal) if wrong else rng.randrange(len(req.legal))
            self.take(core.receive(req.seat, reply, self.now))
        return True


def protocol_digest(matches: int = 12) -> str:
    """Every message the core sends in seeded matches of two to four seats, whose bots answer
    legally, out of range, late (the timer plays the default, strikes forfeit) or drop and
    resume, hashed with what the hooks were told."""
    h = hashlib.sha256()
    clock = Clock(move_ms=1000, bank_ms=500, max_strikes=2, max_retries=1)
    for m in range(matches):
        rng = random.Random(m)
        players = 2 + m % 3
        hooks = Counting()
        core = MatchProtocol(
            match_id=f"m{m}",
            rules=Ruleset.preset("classic"),
            players=players,
            seed=m,
            clock=clock,
            names=[f"bot{s}" for s in range(players)],
            wants_events=[s % 2 == 0 for s in range(players)],
            hooks=hooks,
        )
        driver = Driver(core, h)
        driver.take(core.start(0.0))
        for _ in range(5000):
            if not driver.step(rng):
                break
        assert core.ended, f"match {m} did not end"
        h.update(repr((core.timeouts, core.rejections, hooks.calls)).encode())
    return h.hexdigest()


def test_this_process_runs_the_compiled_core_exactly_when_the_build_is_current() -> None:
    assert native.wanted() == native.loaded()
    assert native.loaded() <= kozel.engine.NATIVE  # never without the compiled engine


def test_the_compiled_and_the_pure_core_send_the_same_bytes() -> None:
    if not native.loaded():
        pytest.skip("no compiled core for these sources (make setup builds it)")
    assert run_pure(protocol_digest, "kozel.core.native") == ["False", protocol_digest()]


def test_the_guard_holds_for_a_changed_core_or_engine_source(tmp_path: Path) -> None:
    if not native.loaded():
        pytest.skip("no compiled core for these sources (make setup builds it)")
    engine = tmp_path / "kozel" / "engine"
    core = tmp_path / "kozel" / "core"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(engine_native.PACKAGE, engine, ignore=ignore)
    shutil.copytree(native.PACKAGE, core, ignore=ignore)
    shutil.copytree(ROOT / "clients" / "python" / "kozel" / "v1", tmp_path / "kozel" / "v1")
    path = str(tmp_path)
    assert run_python(SHOW, pythonpath=path) == "True True"
    assert run_python(SHOW, pythonpath=path, pure=True) == "False False"
    with (core / "clock.py").open("a") as f:  # not compiled, but compiled against
        f.write("# edited after the build\n")
    assert run_python(SHOW, pythonpath=path) == "True False"
    shutil.rmtree(core)
    shutil.copytree(native.PACKAGE, core, ignore=ignore)
    assert run_python(SHOW, pythonpath=path) == "True True"
    (engine / "_native" / engine_native.BUILD_ID_FILE).write_text("another build\n")
    assert run_python(SHOW, pythonpath=path) == "True False"  # linked to another engine build


def test_a_linked_build_never_loads_on_an_engine_that_runs_pure() -> None:
    """What counts is the engine this process loaded, not what the environment or the files
    on disk say later: the engine was imported pure, so the core and the SDK's search stay
    pure too (a compiled one would look for an engine library that is not loaded)."""
    code = (
        "import os, kozel.engine as e\n"
        "del os.environ['KOZEL_ENGINE_PURE']\n"
        "import kozel.core.protocol, kozel.sdk.playout, kozel.core.native as c, "
        "kozel.sdk.native as s\n"
        "print(e.NATIVE, c.wanted(), c.loaded(), s.wanted(), s.loaded())\n"
    )
    assert run_python(code, pure=True) == "False False False False False"
