"""The referee's incremental observation encoding equals the plain one."""

from __future__ import annotations

import random

import pytest

from kozel.core.convert import ObservationEncoder, observation_to_pb
from kozel.engine import Match, Ruleset
from kozel.engine.observation import SeatObserver
from kozel.v1 import game_pb2 as pb


@pytest.mark.parametrize(("preset", "players"), [("classic", 2), ("classic", 4), ("money", 5)])
def test_the_encoder_writes_what_observation_to_pb_writes(preset: str, players: int) -> None:
    for seed in range(3):
        match = Match(Ruleset.preset(preset), players, seed)
        rng = random.Random(seed)
        held: dict[int, tuple[SeatObserver, ObservationEncoder]] = {}
        steps = 0
        while not match.over:
            deal = match.deal
            for seat in range(players):
                if seat not in held or held[seat][0].deal is not deal:
                    held[seat] = SeatObserver(deal, seat), ObservationEncoder()
                observer, encoder = held[seat]
                obs = observer.observe()
                msg = pb.Observation()
                encoder.fill(msg, obs)
                assert msg == observation_to_pb(obs)
            seat = deal.to_act[0]
            match.apply(seat, rng.choice(deal.legal_actions(seat)))
            steps += 1
            if deal is not match.deal or match.over:  # the ended deal: every trick viewed anew
                for observer, encoder in held.values():
                    obs = observer.observe()
                    msg = pb.Observation()
                    encoder.fill(msg, obs)
                    assert obs.deal_over and msg == observation_to_pb(obs)
        assert steps > 20
