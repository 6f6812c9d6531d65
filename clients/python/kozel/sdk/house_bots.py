"""The house bots by name (``HOUSE_BOTS``): what ``kozel bot NAME`` runs and what ``kozel serve``
hands the referee to seat in-process (``CreateTable.house_bots``)."""

from __future__ import annotations

import random
from collections.abc import Callable

from kozel.sdk.bot import Bot
from kozel.sdk.house import GreedyBot, RandomBot


def _ismcts() -> Bot:
    from kozel.sdk.ismcts import IsmctsBot  # loaded when first seated

    return IsmctsBot()


def _ismcts_fast() -> Bot:
    from kozel.sdk.ismcts import IsmctsBot

    bot = IsmctsBot(budget_s=0.025)
    bot.candidates = 3  # at 25 ms more candidates leave too few rounds for each
    return bot


# Factories by name: each call makes a fresh bot for one match.
HOUSE_BOTS: dict[str, Callable[[], Bot]] = {
    "random": RandomBot,
    "greedy": GreedyBot,
    "ismcts": _ismcts,
    "ismcts-fast": _ismcts_fast,
}


def make(kind: str, *, budget_s: float | None = None, seed: int | None = None) -> Bot:
    """A house bot of ``kind`` for one match, with its think budget (a searching bot) and its
    random seed (the same seed plays the same match the same way, budget permitting), as
    tournaments seat them."""
    if kind == "random":
        return RandomBot(seed)
    if kind in ("ismcts", "ismcts-fast"):
        from kozel.sdk.ismcts import IsmctsBot

        bot = HOUSE_BOTS[kind]()
        assert isinstance(bot, IsmctsBot)
        if budget_s is not None:
            bot.budget_s = budget_s
        if seed is not None:
            bot.rng = random.Random(seed)
        return bot
    if kind not in HOUSE_BOTS:
        raise KeyError(f"no house bot {kind!r}; house bots: {', '.join(HOUSE_BOTS)}")
    return HOUSE_BOTS[kind]()
