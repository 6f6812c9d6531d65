"""The house bots by name (``HOUSE_BOTS``): what ``kozel bot NAME`` runs and what ``kozel serve``
hands the referee to seat in-process (``CreateTable.house_bots``)."""

from __future__ import annotations

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
