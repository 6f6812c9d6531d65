"""An SDK bot that goes wrong in one of several ways, for the tests of what ``kozel play`` and
``kozel conformance`` report: ``misbehaving_bot.py MODE SERVER TABLE``.

Modes: ``raises`` (choose raises from its 2nd decision on), ``illegal`` (the first answer to
every request is a card it does not hold; the retry is legal), ``crash-at-3`` and
``crash-at-15`` (the process ends with status 3 at that decision), ``cannot-start`` (an
import fails before it connects), ``slow`` (its first decision takes ``SLOW_S``), ``stdout``
(64 KiB of text on stdout at every decision)."""

from __future__ import annotations

import os
import sys
import time

MODE = sys.argv[1]
if MODE == "cannot-start":
    import kozel_no_such_module  # type: ignore[import-not-found]  # noqa: F401  (fails)

from kozel.sdk import Bot, run_bot  # noqa: E402
from kozel.v1 import game_pb2, referee_pb2  # noqa: E402

SLOW_S = 3.0
CARDS = [f"{rank}{suit}" for suit in "SCDH" for rank in "AKQJT9876"]


class Misbehaving(Bot):
    def __init__(self) -> None:
        self.decisions = 0
        self.refused: set[int] = set()

    def on_rejection(self, msg: referee_pb2.Rejection) -> None:
        self.refused.add(msg.request_id)

    def choose(self, request: referee_pb2.DecisionRequest) -> int | game_pb2.Action:
        self.decisions += 1
        n = self.decisions
        if MODE == "raises" and n >= 2:
            return n // 0
        if MODE.startswith("crash-at-") and n == int(MODE.removeprefix("crash-at-")):
            os._exit(3)
        if MODE == "slow" and n == 1:
            time.sleep(SLOW_S)
        if MODE == "stdout":
            print(f"decision {n}: " + "x" * 65536, flush=True)
        if MODE == "illegal" and request.request_id not in self.refused:
            missing = next(c for c in CARDS if c not in request.observation.hand)
            return game_pb2.Action(kind=game_pb2.ACTION_KIND_LEAD, cards=[missing])
        return 0


if __name__ == "__main__":
    run_bot(Misbehaving, sys.argv[2], name=f"misbehaving-{MODE}", join_table=sys.argv[3])
