"""``kozel bench core``: the referee's seat protocol alone (``kozel.core.protocol``), without
gRPC or an event loop. Random matches are played through :class:`MatchProtocol` as the
referee plays them: every message it sends is serialized (as gRPC would), each decision
request parsed as a bot would and answered with a random legal index, the answer serialized
and parsed back. What it measures is the referee's own work per decision (the engine, the
seat's observation and its encoding, the clock and the request's state table), the part of
``kozel bench referee``'s cost that is not the transport.
"""

from __future__ import annotations

import random
import statistics
import time

from kozel import engine
from kozel.core import native as core_native
from kozel.core.clock import Clock
from kozel.core.protocol import MatchProtocol
from kozel.engine.rules import Ruleset
from kozel.v1 import referee_pb2 as rpb

CONFIGS = (("classic-2p", "classic", 2), ("classic-4p", "classic", 4))


def play(rules: Ruleset, players: int, matches: int, rng: random.Random) -> int:
    """Play ``matches`` matches; the number of decisions answered."""
    decisions = 0
    now = 0.0
    names = [f"bot{i}" for i in range(players)]
    for _ in range(matches):
        core = MatchProtocol(
            match_id=f"{rng.getrandbits(64):016x}",
            rules=rules,
            players=players,
            seed=rng.randbytes(32),
            clock=Clock(),
            names=names,
            wants_events=[False] * players,
        )
        sends = core.start(now)
        while not core.ended:
            asked = []
            for seat, msg in sends:
                got = rpb.PlayResponse.FromString(msg.SerializeToString())
                if got.WhichOneof("message") == "decision":
                    core.written(seat, got.decision.request_id, now)
                    asked.append((seat, got.decision))
            if not asked:
                break
            seat, request = asked[0]
            reply = rpb.PlayRequest()
            reply.action.match_id = request.match_id
            reply.action.request_id = request.request_id
            reply.action.legal_index = rng.randrange(len(request.legal_actions))
            answer = rpb.PlayRequest.FromString(reply.SerializeToString()).action
            now += 0.001
            sends = core.receive(seat, answer, now)
            decisions += 1
    return decisions


def bench_core(matches: int, seed: int, rounds: int = 5) -> dict[str, dict[str, float | bool]]:
    """CPU microseconds per decision for each configuration in :data:`CONFIGS`: the best of
    ``rounds`` rounds of ``matches`` matches (noise only ever slows a round), and the median."""
    results: dict[str, dict[str, float | bool]] = {}
    for key, preset, players in CONFIGS:
        rules = Ruleset.preset(preset)
        rng = random.Random(seed)
        play(rules, players, 2, rng)  # warm the move tables and the encoders' memos
        costs = []
        total = 0
        for _ in range(rounds):
            cpu = time.process_time()
            n = play(rules, players, matches, rng)
            costs.append((time.process_time() - cpu) / n * 1e6)
            total += n
        results[key] = {
            "cpu_us_per_decision": round(min(costs), 1),
            "median_cpu_us_per_decision": round(statistics.median(costs), 1),
            "decisions": total,
            "native": engine.NATIVE,
            "core_native": core_native.loaded(),
        }
    return results
