"""A policy for ``kozel bot --policy`` in tests: a random legal index (seeded by
``KOZEL_TEST_POLICY_SEED``), writing what it saw and answered to ``KOZEL_TEST_POLICY_LOG`` (one
JSON line per decision: the observation's and mask's bytes in hex, and the index)."""

from __future__ import annotations

import json
import os
import random

import numpy as np

_rng = random.Random(int(os.environ.get("KOZEL_TEST_POLICY_SEED", "0")))


def policy(observation: np.ndarray, mask: np.ndarray) -> int:
    index = _rng.choice([int(i) for i in np.flatnonzero(mask)])
    line = {"obs": observation.tobytes().hex(), "mask": mask.tobytes().hex(), "action": index}
    with open(os.environ["KOZEL_TEST_POLICY_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps(line) + "\n")
    return index
