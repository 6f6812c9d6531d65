"""Train, evaluate and serve a small MaskablePPO policy for classic two-player Kozel
(docs/training.md). Needs the ``train`` extra: ``pip install 'kozel-arena[train]'``.

    python clients/python/examples/kozel_ppo.py train --minutes 10 --model kozel-ppo.zip
    python clients/python/examples/kozel_ppo.py evaluate --model kozel-ppo.zip --matches 400
    KOZEL_PPO_MODEL=kozel-ppo.zip kozel bot --policy clients/python/examples/kozel_ppo.py:policy ...

Training runs on one CPU core: the learner plays seat 0 or 1 at random against
``--opponent`` (a house bot: ``random`` by default), rewarded with card points; evaluation
plays whole matches through the in-process harness, the deals of each seed twice with the
seats swapped, and prints the match score with a 95 % interval.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from typing import Any

import numpy as np

MODEL_ENV = "KOZEL_PPO_MODEL"
_loaded: dict[str, Any] = {}


def _model(path: str) -> Any:
    model = _loaded.get(path)
    if model is None:
        import torch
        from sb3_contrib import MaskablePPO

        torch.set_num_threads(1)
        model = _loaded[path] = MaskablePPO.load(path, device="cpu")
    return model


def policy(observation: np.ndarray, mask: np.ndarray) -> int:
    """The trained policy, as ``kozel bot --policy`` and the harness call it."""
    model = _model(os.environ.get(MODEL_ENV, "kozel-ppo.zip"))
    action, _ = model.predict(
        {"observation": observation, "action_mask": mask},
        action_masks=mask.astype(bool),
        deterministic=True,
    )
    return int(action)


def train(minutes: float, model_path: str, seed: int, opponent: str) -> None:
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback

    from kozel.env.single import KozelSingleEnv

    torch.set_num_threads(1)  # one core

    class Deadline(BaseCallback):
        def __init__(self, seconds: float) -> None:
            super().__init__()
            self.until = time.monotonic() + seconds

        def _on_step(self) -> bool:
            return time.monotonic() < self.until

    env = KozelSingleEnv("classic", 2, seat="random", opponents=opponent, reward="points")
    model = MaskablePPO(
        "MultiInputPolicy",
        env,
        n_steps=2048,
        batch_size=256,
        learning_rate=3e-4,
        gamma=0.99,
        ent_coef=0.01,
        seed=seed,
        device="cpu",
        verbose=0,
    )
    started = time.monotonic()
    model.learn(total_timesteps=10**9, callback=Deadline(minutes * 60))
    model.save(model_path)
    print(
        json.dumps({"steps": model.num_timesteps, "seconds": round(time.monotonic() - started, 1)})
    )


def evaluate(model_path: str, matches: int, opponent: str, seed: int) -> dict[str, Any]:
    """Score of the policy against ``opponent`` (1 a win, 0.5 a draw), with a 95 % interval."""
    from kozel.env.harness import play_match
    from kozel.sdk.policy import PolicyBot

    os.environ[MODEL_ENV] = model_path
    scores = []
    for i in range(matches // 2):
        for me in (0, 1):  # the same deals with the seats swapped
            bots: list[Any] = [opponent, opponent]
            bots[me] = PolicyBot(policy)
            result = play_match(bots, seed=seed + i).result
            scores.append(0.5 if result.draw else float(result.winner_side == me))
    n = len(scores)
    mean = sum(scores) / n
    sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / (n - 1))
    half = 1.96 * sd / math.sqrt(n)
    return {"opponent": opponent, "matches": n, "score": round(mean, 3),
            "ci95": [round(mean - half, 3), round(mean + half, 3)]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["train", "evaluate"])
    parser.add_argument("--model", default="kozel-ppo.zip")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--matches", type=int, default=400)
    parser.add_argument("--opponent", default="random")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.what == "train":
        train(args.minutes, args.model, args.seed, args.opponent)
    else:
        print(json.dumps(evaluate(args.model, args.matches, args.opponent, args.seed)))


if __name__ == "__main__":
    main()
elif MODEL_ENV in os.environ:  # loaded by `kozel bot --policy`: the model before the first move
    _model(os.environ[MODEL_ENV])
