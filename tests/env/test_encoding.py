"""The SDK's encoding (kozel.sdk.encoding): the action space is a bijection between each
request's legal actions and the mask's indices, and the observation tensor says what the
request says."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kozel.engine.cards import CARD_OF, N_CARDS
from kozel.sdk import encoding
from kozel.sdk.encoding import N_ACTIONS, OBS_SIZE, ActionMap, Encoder, EncodingError
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from tests.env.states import CONFIGS, requests


def _cards_of(index: int, slots: list[int]) -> set[int]:
    mask = index % encoding.SUBSETS + 1
    return {slots[i] for i in range(encoding.HAND_SLOTS) if mask >> i & 1}


@settings(max_examples=60, deadline=None)
@given(config=st.sampled_from(CONFIGS), seed=st.integers(0, 2**32), steps=st.integers(1, 120))
def test_every_legal_action_maps_to_one_index_and_back(
    config: tuple[str, int], seed: int, steps: int
) -> None:
    preset, players = config
    for request in requests(preset, players, seed, steps):
        actions = ActionMap.of(request)
        legal = request.legal_actions
        assert len(set(actions.indices)) == len(legal)
        mask = actions.mask()
        assert mask.shape == (N_ACTIONS,) and mask.dtype == np.int8
        assert sorted(np.flatnonzero(mask)) == sorted(actions.indices)
        slots = encoding.hand_slots(request.observation.hand)
        for i, (index, action) in enumerate(zip(actions.indices, legal, strict=True)):
            assert actions.legal(index) == i
            if action.kind == pb.ACTION_KIND_PASS:
                assert index == encoding.PASS
            elif action.kind == pb.ACTION_KIND_DECLARE:
                assert index == encoding.DECLARE
            else:  # the index names exactly the action's kind and cards
                base = {pb.ACTION_KIND_LEAD: 0, pb.ACTION_KIND_BEAT: 1, pb.ACTION_KIND_DISCARD: 2}
                assert index // encoding.SUBSETS == base[action.kind]
                assert _cards_of(index, slots) == {CARD_OF[c] for c in action.cards}
        for index in set(range(N_ACTIONS)) - set(actions.indices):
            with pytest.raises(ValueError, match="not legal now"):
                actions.legal(index)


@settings(max_examples=30, deadline=None)
@given(config=st.sampled_from(CONFIGS), seed=st.integers(0, 2**32), steps=st.integers(1, 80))
def test_the_tensor_says_what_the_request_says(
    config: tuple[str, int], seed: int, steps: int
) -> None:
    preset, players = config
    for request in requests(preset, players, seed, steps):
        obs, mask, _ = Encoder().encode(request)
        assert obs.shape == (OBS_SIZE,) and obs.dtype == np.float32
        assert obs.min() >= 0.0 and obs.max() <= 1.0
        hand = {CARD_OF[c] for c in request.observation.hand}
        assert set(np.flatnonzero(obs[:N_CARDS])) == hand
        slots = encoding.hand_slots(request.observation.hand)
        for i, card in enumerate(slots):  # slot plane i holds the card action slot i names
            plane = obs[(1 + i) * N_CARDS : (2 + i) * N_CARDS]
            assert list(np.flatnonzero(plane)) == [card]
        kind = obs[encoding.SCALARS : encoding.SCALARS + 4]
        assert kind.sum() == 1.0
        assert obs[encoding.SCALARS + 14] == pytest.approx(request.observation.talon / 36)
        assert mask.sum() == len(request.legal_actions)


def test_a_hand_the_action_space_cannot_hold_is_refused() -> None:
    request = rpb.DecisionRequest(
        observation=pb.Observation(hand=["6S", "7S", "8S", "9S", "JS"]),
        legal_actions=[pb.Action(kind=pb.ACTION_KIND_LEAD, cards=["6S"])],
    )
    with pytest.raises(EncodingError, match="5 cards"):
        ActionMap.of(request)
    request = rpb.DecisionRequest(
        observation=pb.Observation(hand=["6S"]),
        legal_actions=[pb.Action(kind=pb.ACTION_KIND_LEAD, cards=["AH"])],
    )
    with pytest.raises(EncodingError, match="AH, which is not in the hand"):
        ActionMap.of(request)


def test_index_names_read_as_actions() -> None:
    slots = [CARD_OF[c] for c in ("6S", "9S", "TD", "AH")]
    assert encoding.index_name(0b0101 - 1, slots) == "lead 6S TD"
    assert encoding.index_name(encoding.BEAT + 0b1000 - 1, slots) == "beat AH"
    assert encoding.index_name(encoding.PASS, slots) == "pass"


@settings(max_examples=20, deadline=None)
@given(config=st.sampled_from(CONFIGS), seed=st.integers(0, 2**32))
def test_an_encoder_remembering_finished_tricks_gives_the_same_tensors(
    config: tuple[str, int], seed: int
) -> None:
    """One encoder fed every seat's requests in turn (its memory of finished tricks keyed by
    seat and deal) gives what a fresh one gives."""
    preset, players = config
    memory = Encoder()
    for request in requests(preset, players, seed, 200):
        got, _, _ = memory.encode(request)
        want, _, _ = Encoder().encode(request)
        assert np.array_equal(got, want)
