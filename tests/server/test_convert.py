"""The referee's fast encodings (incremental observations, assembled bytes) equal the plain
conversions, byte for byte."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kozel.core import messages
from kozel.core.convert import (
    DECISION_TO_PB,
    ObservationEncoder,
    action_to_pb,
    length_delimited,
    observation_to_pb,
    trick_to_pb,
    varint_field,
)
from kozel.engine import Match, Ruleset
from kozel.engine.cards import CODES
from kozel.engine.observation import Observation, SeatObserver, full_view
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import replay_pb2


def _observations(
    preset: str, players: int, seeds: int
) -> Iterator[tuple[Observation, ObservationEncoder]]:
    """Every seat's observation at every step of random matches, each with the encoder the
    referee keeps for that seat and deal, and, when a deal ends, every seat's again."""
    for seed in range(seeds):
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
                yield observer.observe(), encoder
            seat = deal.to_act[0]
            match.apply(seat, rng.choice(deal.legal_actions(seat)))
            steps += 1
            if deal is not match.deal or match.over:  # the ended deal: every trick viewed anew
                for observer, encoder in held.values():
                    obs = observer.observe()
                    assert obs.deal_over
                    yield obs, encoder
        assert steps > 20


@pytest.mark.parametrize(("preset", "players"), [("classic", 2), ("classic", 4), ("money", 5)])
def test_the_encoder_writes_what_observation_to_pb_writes(preset: str, players: int) -> None:
    for obs, encoder in _observations(preset, players, seeds=3):
        msg = pb.Observation()
        encoder.fill(msg, obs)
        assert msg == observation_to_pb(obs)


@pytest.mark.parametrize(("preset", "players"), [("classic", 2), ("classic", 3), ("money", 4)])
def test_the_encoding_is_byte_for_byte_protobufs_own(preset: str, players: int) -> None:
    """The encoder assembles bytes itself; they must be the canonical encoding, so that every
    bot's protobuf library reads them (and reads them as they were meant)."""
    for obs, encoder in _observations(preset, players, seeds=2):
        assert encoder.encode(obs) == observation_to_pb(obs).SerializeToString()


@pytest.mark.parametrize("n", [0, 1, 127, 128, 300, 2047, 2048, 16383, 16384, 2**21 + 5])
def test_a_length_delimited_field_is_what_protobuf_writes(n: int) -> None:
    payload = b"x" * n
    expected = pb.Play(cards=[payload.decode()]).SerializeToString()
    assert length_delimited(pb.Play.CARDS_FIELD_NUMBER, payload) == expected


def test_deal_end_lists_every_trick_as_the_plain_conversion_does() -> None:
    match = Match(Ruleset.preset("classic"), 3, 7)
    rng = random.Random(7)
    ends = 0
    while not match.over:
        deal = match.deal
        seat = deal.to_act[0]
        match.apply(seat, rng.choice(deal.legal_actions(seat)))
        if deal.over:
            end = messages.deal_end("m", match, deal, voided=False, reveal_deck=True).deal_end
            view = full_view(deal)
            assert list(end.tricks) == [trick_to_pb(t) for t in view.tricks]
            assert list(end.deck) == [CODES[c] for c in match.records[-1].deck]
            ends += 1
    assert ends >= 2


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_a_varint_field_is_what_protobuf_writes(value: int) -> None:
    step = replay_pb2.ReplayStep  # uint32 seat (1), uint64 request_id (3), uint32 think_ms (4)
    small = value % 2**32
    assert varint_field(3, value, 64) == step(request_id=value).SerializeToString()
    assert varint_field(1, small) == step(seat=small).SerializeToString()
    assert varint_field(4, small) == step(think_ms=small).SerializeToString()
    for flag in (False, True):
        assert varint_field(5, flag) == step(timeout=flag).SerializeToString()


def test_a_varint_field_refuses_what_no_unsigned_field_holds() -> None:
    for bad, bits in ((-1, 64), (2**64, 64), (-1, 32), (2**32, 32)):
        with pytest.raises(ValueError, match=f"unsigned {bits}-bit"):
            varint_field(3, bad, bits)
    assert (
        varint_field(4, 2**32 - 1) == replay_pb2.ReplayStep(think_ms=2**32 - 1).SerializeToString()
    )


@pytest.mark.parametrize(("preset", "players"), [("classic", 2), ("classic", 4), ("money", 3)])
def test_an_encoded_request_is_the_message_built_field_by_field(preset: str, players: int) -> None:
    """The referee writes decision requests as the bytes it assembled: they must be protobuf's
    own encoding of the request, and read back as that message."""
    rng = random.Random(5)
    for seed in range(2):
        match = Match(Ruleset.preset(preset), players, seed)
        observers: dict[int, tuple[SeatObserver, ObservationEncoder]] = {}
        request_id = 0
        while not match.over:
            deal = match.deal
            for seat in deal.to_act:
                if seat not in observers or observers[seat][0].deal is not deal:
                    observers[seat] = SeatObserver(deal, seat), ObservationEncoder()
                observer, encoder = observers[seat]
                obs, legal = observer.observe(), deal.legal_actions(seat)
                request_id += rng.choice([1, 200, 70_000])
                bank, retries = rng.choice([-5, 0, 1, 90_000]), rng.choice([0, 2])
                got = messages.encoded_decision(
                    f"match-{seed}",
                    request_id,
                    deal.decision,
                    legal,
                    move_ms=2000,
                    bank_ms=bank,
                    retries_left=retries,
                    observation=encoder.encode(obs),
                )
                expected = rpb.PlayResponse(
                    decision=rpb.DecisionRequest(
                        match_id=f"match-{seed}",
                        request_id=request_id,
                        kind=DECISION_TO_PB[deal.decision],
                        move_ms=2000,
                        time_bank_ms=max(bank, 0),
                        observation=observation_to_pb(obs),
                        legal_actions=[action_to_pb(a) for a in legal],
                        retries_left=retries,
                    )
                )
                assert got.SerializeToString() == expected.SerializeToString()
                assert (got.match_id, got.request_id) == (f"match-{seed}", request_id)
                assert got.message == expected and got.decision == expected.decision
                assert got.WhichOneof("message") == "decision" and got.HasField("decision")
                again = messages.resent(got)
                expected.decision.resent = True
                assert again.SerializeToString() == expected.SerializeToString()
                assert messages.resent(again) is again  # marked once
            match.apply(deal.to_act[0], rng.choice(deal.legal_actions(deal.to_act[0])))
