"""Random play makes exactly the moves it always made: a digest of every move, log entry,
observation, deal record and score over every preset and table size, pinned to the value
the engine gave before it was last made faster. A speed-up that changes the order of a
legal list, what an observation shows, or how a random stream is consumed changes the
digest. Should a rule change alter it on purpose, the new value goes here with the change.
"""

from __future__ import annotations

import hashlib
import json
import random

from kozel.engine import Match, Ruleset, observe
from kozel.engine.players import play_random_deal
from kozel.engine.rules import PRESETS

DEALS = 30  # random deals per preset and table size (players.play_random_deal)
MATCHES = 1  # random matches per preset and table size, every observation hashed
EXPECTED = "1b6f7ff691df7890e5d718dfa345a49041e35858f65ede3f80ffe740f5db17d2"


def _configs() -> list[tuple[str, int]]:
    return [(name, n) for name, rules in PRESETS.items() for n in rules.players_allowed]


def digest() -> str:
    """The hash of random play over :func:`_configs`."""
    h = hashlib.sha256()

    def put(value: object) -> None:
        h.update(json.dumps(value, sort_keys=True, default=repr).encode())

    for name, players in _configs():
        rules = Ruleset.preset(name)
        rng = random.Random(f"{name}/{players}")
        for _ in range(DEALS):
            deal, decisions = play_random_deal(rules, players, rng)
            put([decisions, repr(deal.log), repr(deal.history), deal.penalties(), deal.known])
            put([deal.card_points(), deal.side_tricks(), deal.pot_winners, deal.bura])
        for m in range(MATCHES):
            seed = hashlib.sha256(f"{name}/{players}/{m}".encode()).digest()
            match = Match(rules, players, seed)
            while not match.over:
                deal = match.deal
                seat = deal.to_act[0]
                put(observe(deal, seat).to_dict())
                match.apply(seat, rng.choice(deal.legal_actions(seat)))
            put([repr(r) for r in match.records])
            put([repr(match.outcome()), match.chips, match.pot])
    return h.hexdigest()


def test_random_play_is_unchanged() -> None:
    assert digest() == EXPECTED
