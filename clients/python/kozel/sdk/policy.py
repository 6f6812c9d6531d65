"""A bot that plays a policy trained on ``kozel.env``: observation tensor and mask in, action
index out (:mod:`kozel.sdk.encoding`).

``kozel bot --policy module:callable`` serves one over gRPC. The callable is called as
``policy(observation, mask)`` with the numpy arrays the environment gives an agent
(``float32[906]`` and ``int8[47]``) and returns an action index whose mask entry is 1; the bot
answers the legal action of that index. It is fed ``MatchStart`` and ``DealStart`` as the
environment's encoder is, so it sees exactly the numbers the environment would have produced.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kozel.sdk.bot import Bot
from kozel.sdk.encoding import Encoder
from kozel.v1 import referee_pb2 as rpb

Policy = Callable[[Any, Any], Any]
"""``policy(observation, mask) -> action index`` (numpy arrays in, an integer out)."""


class PolicyError(ValueError):
    """A policy that cannot be loaded or that answered an index the mask forbids."""


class PolicyBot(Bot):
    """Plays ``policy`` (see the module docstring). ``seen`` keeps every observation, mask
    and answer when ``record`` is set (for tests and debugging)."""

    def __init__(self, policy: Policy, *, record: bool = False) -> None:
        self.policy = policy
        self.encoder = Encoder()
        self.record = record
        self.seen: list[tuple[rpb.DecisionRequest, Any, Any, int]] = []

    def on_match_start(self, msg: rpb.MatchStart) -> None:
        self.encoder.match_start(msg)

    def on_deal_start(self, msg: rpb.DealStart) -> None:
        self.encoder.deal_start(msg)

    def choose(self, request: rpb.DecisionRequest) -> int:
        observation, mask, actions = self.encoder.encode(request)
        index = self.policy(observation, mask)
        try:
            legal = actions.legal(int(index))
        except (TypeError, ValueError) as exc:
            raise PolicyError(f"the policy answered {index!r}: {exc}") from None
        if self.record:
            self.seen.append((request, observation, mask, int(index)))
        return legal


def load_policy(spec: str) -> Policy:
    """The callable named ``module:attribute`` (a module on the path, or a ``.py`` file)."""
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        raise PolicyError(f"name a policy as module:callable or file.py:callable, not {spec!r}")
    try:
        if where.endswith(".py"):
            path = Path(where)
            module_name = f"kozel_policy_{path.stem}"
            loader = importlib.util.spec_from_file_location(module_name, path)
            if loader is None or loader.loader is None or not path.is_file():
                raise PolicyError(f"no policy file {where!r}")
            module = importlib.util.module_from_spec(loader)
            sys.modules[module_name] = module
            loader.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except ImportError as exc:
        raise PolicyError(f"cannot import {where!r}: {exc}") from exc
    policy = getattr(module, name, None)
    if not callable(policy):
        raise PolicyError(f"{where!r} has no callable {name!r}")
    return policy
