"""The bot interface: subclass :class:`Bot` and implement :meth:`Bot.choose`."""

from __future__ import annotations

import abc

from kozel.v1 import game_pb2, referee_pb2


class Bot(abc.ABC):
    """One bot playing one match. The client creates a fresh object per match (from the
    factory given to :func:`kozel.sdk.play`) and calls its methods from one match at a time:
    hooks run on the event loop and should be quick, :meth:`choose` runs in a worker thread.

    Override the ``on_*`` hooks to follow the game; they do nothing by default.
    """

    def on_match_start(self, msg: referee_pb2.MatchStart) -> None:
        """The match begins: your seat, the table, the effective ruleset, the clock."""

    def on_deal_start(self, msg: referee_pb2.DealStart) -> None:
        """A deal begins: your hand and the trump card."""

    def on_event(self, msg: referee_pb2.Event) -> None:
        """Something happened at the table (a play, a trick, a draw, a declaration, a notice)."""

    def on_rejection(self, msg: referee_pb2.Rejection) -> None:
        """An answer was refused. If ``msg.retry_allowed`` the client asks :meth:`choose`
        again for the same request (and falls back to another legal index if it repeats
        the refused answer)."""

    def on_deal_end(self, msg: referee_pb2.DealEnd) -> None:
        """A deal ended: every card is revealed, with the scores."""

    def on_match_end(self, msg: referee_pb2.MatchEnd) -> None:
        """The match ended: the result, the replay id and the revealed seed."""

    @abc.abstractmethod
    def choose(self, request: referee_pb2.DecisionRequest) -> int | game_pb2.Action:
        """Answer a decision: an index into ``request.legal_actions`` (simplest), or an
        ``Action`` spelled out. ``request.observation`` holds everything the seat may know."""


class AsyncBot(Bot):
    """A bot whose decisions come from outside the process (a person in a browser, a remote
    service): the client awaits :meth:`decide` on the event loop instead of running
    :meth:`choose` in a worker thread, so many can wait at once, and meanwhile the hooks keep
    receiving the match's messages in order. A decision still awaited when its request is
    superseded (a timeout, a newer request) or the match ends is cancelled."""

    @abc.abstractmethod
    async def decide(self, request: referee_pb2.DecisionRequest) -> int | game_pb2.Action:
        """Answer a decision, as :meth:`Bot.choose` does."""

    def choose(self, request: referee_pb2.DecisionRequest) -> int | game_pb2.Action:
        raise TypeError("an AsyncBot answers with decide(), which the client awaits")
