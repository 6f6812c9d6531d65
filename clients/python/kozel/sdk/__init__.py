"""The Kozel Arena Python bot SDK: subclass :class:`Bot`, implement ``choose``, call
:func:`run_bot` (or ``await play(...)``). Resuming a dropped stream is automatic."""

from kozel.sdk import native as _native

if _native.wanted():  # ismcts's compiled playouts and solver (kozel.sdk.native)
    __path__.insert(0, str(_native.FOLDER))

from kozel.sdk.bot import AsyncBot, Bot
from kozel.sdk.client import play, run_bot
from kozel.sdk.house import GreedyBot, RandomBot
from kozel.sdk.house_bots import HOUSE_BOTS
from kozel.sdk.report import BotError, Report

__all__ = [
    "HOUSE_BOTS",
    "AsyncBot",
    "Bot",
    "BotError",
    "GreedyBot",
    "RandomBot",
    "Report",
    "play",
    "run_bot",
]
