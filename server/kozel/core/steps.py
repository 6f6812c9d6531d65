"""A match's steps as the replay records them: what the referee knows of each applied action
besides the action itself, and their encoding as ``ReplayDeal.steps``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from kozel.core import convert
from kozel.engine.actions import Action
from kozel.v1 import replay_pb2


@dataclass(slots=True)
class StepMeta:
    """What the referee knows about one applied action besides the action itself."""

    request_id: int
    think_ms: int
    timeout: bool = False
    rejections: list[replay_pb2.ReplayRejection] = field(default_factory=list)


def encoded_steps(actions: Sequence[tuple[int, Action]], metas: Sequence[StepMeta]) -> bytes:
    """A deal's steps (its actions and their records) encoded as the elements of
    ``ReplayDeal.steps``, byte for byte what protobuf writes (tests compare them), put together
    from memoised encodings: a message built per step cost twice the rest of the replay."""
    out = []
    for (seat, action), meta in zip(actions, metas):
        step = _step_head(seat, action) + _step_tail(meta.request_id, meta.think_ms, meta.timeout)
        for rejection in meta.rejections:
            step += convert.length_delimited(
                _STEP.REJECTIONS_FIELD_NUMBER, rejection.SerializeToString()
            )
        out.append(convert.length_delimited(_DEAL_STEPS, step))
    return b"".join(out)


_DEAL_STEPS = replay_pb2.ReplayDeal.STEPS_FIELD_NUMBER
_STEP = replay_pb2.ReplayStep


@lru_cache(maxsize=8192)
def _step_head(seat: int, action: Action) -> bytes:
    """A ``ReplayStep``'s fields before ``request_id``: the seat and the action."""
    return _STEP(seat=seat, action=convert.action_to_pb(action)).SerializeToString()


def _step_tail(request_id: int, think_ms: int, timeout: bool) -> bytes:
    """A ``ReplayStep``'s ``request_id``, ``think_ms`` and ``timeout``."""
    return (
        convert.varint_field(_STEP.REQUEST_ID_FIELD_NUMBER, request_id, 64)
        + convert.varint_field(_STEP.THINK_MS_FIELD_NUMBER, think_ms)
        + convert.varint_field(_STEP.TIMEOUT_FIELD_NUMBER, timeout)
    )
