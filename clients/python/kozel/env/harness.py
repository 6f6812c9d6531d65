"""Bots against bots in one process, on the referee's own seat protocol, without gRPC.

:func:`play_match` seats ``kozel.sdk.Bot`` objects (the same classes that play over gRPC:
your own, ``RandomBot``, ``GreedyBot``, ``IsmctsBot``) at a :class:`kozel.env.table.Table` and
plays one match: each bot gets exactly the messages the referee would send its seat, in the
same order (``MatchStart``, ``DealStart``, ``Event``, ``DecisionRequest``, ``Rejection``,
``DealEnd``, ``MatchEnd``), built by the referee's own builders; its answers go through the
referee's rules (a refused answer is retried, then forfeits). There is no clock: a bot may
think as long as it likes and never times out (use ``kozel play`` for timed matches). Messages
are shared between seats that see the same thing, as the referee's in-process house bots get
them: read them, do not change them.

A bot that does not override ``on_event`` is sent no ``Event`` messages (as a remote bot that
sets ``Hello.skip_events``): building them is a large part of the referee's work per decision.

This module lives in ``kozel.env`` (above both the SDK and the referee's core in the layer
table) because it needs both: the SDK's bots, and the core's ``MatchProtocol``. The SDK stays a
client that imports nothing of the referee.
"""

from __future__ import annotations

import operator
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kozel.core.clock import Clock
from kozel.core.protocol import Send
from kozel.engine.match import Match
from kozel.engine.rules import Ruleset
from kozel.engine.shuffle import new_seed, seed_from
from kozel.env.table import Table
from kozel.sdk.bot import Bot
from kozel.sdk.house_bots import HOUSE_BOTS
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb

BotSpec = str | Bot | Callable[[], Bot]
"""A house bot by name (``random``, ``greedy``, ``ismcts``...), a bot, or a factory of one."""


@dataclass(frozen=True, slots=True)
class Played:
    """One match played in-process."""

    result: pb.MatchResult
    match: Match  # the engine's match at its end (every deal's record)
    seed: bytes
    decisions: int  # answers given (refused ones included)
    cut: bool  # stopped at ``max_deals``


def make_bot(spec: BotSpec, seed: int | None = None) -> Bot:
    """A bot for one match. A house bot's name is looked up in ``HOUSE_BOTS``; a bot with an
    ``rng`` (a ``random.Random``, as the house bots have) is reseeded with ``seed``, so a
    seeded run repeats."""
    bot: Bot
    if isinstance(spec, str):
        if spec not in HOUSE_BOTS:
            raise ValueError(f"unknown house bot {spec!r}; choose from {', '.join(HOUSE_BOTS)}")
        bot = HOUSE_BOTS[spec]()
    elif isinstance(spec, Bot):
        bot = spec
    else:
        bot = spec()  # a class or a factory
    rng = getattr(bot, "rng", None)
    if seed is not None and isinstance(rng, random.Random):
        rng.seed(seed)
    return bot


def wants_events(bot: object) -> bool:
    """Whether ``bot`` reads ``Event`` messages (overrides ``on_event``)."""
    hook = getattr(type(bot), "on_event", None)
    return hook is not None and hook is not Bot.on_event


def reply_for(request: rpb.DecisionRequest, choice: int | pb.Action) -> rpb.ActionReply:
    """A bot's answer as the reply the referee reads: an index, or an action spelled out."""
    reply = rpb.ActionReply(match_id=request.match_id, request_id=request.request_id)
    if isinstance(choice, pb.Action):
        reply.action.CopyFrom(choice)
    elif isinstance(choice, bool):
        raise TypeError("choose returned a bool, not an index")
    else:
        reply.legal_index = operator.index(choice)  # ints, numpy integers
    return reply


def play_match(
    bots: Sequence[BotSpec],
    *,
    rules: Ruleset | str = "classic",
    seed: bytes | str | int | None = None,
    names: Sequence[str] | None = None,
    match_id: str = "local",
    clock: Clock | None = None,
    max_deals: int = 0,
) -> Played:
    """Play one match, seat ``i`` by ``bots[i]``; ``seed`` (32 bytes, 64 hex digits or an
    integer, as ``CreateTable.seed`` and ``Match`` take it) fixes the deals, and the same seed
    at a referee table deals the same cards."""
    match_seed = seed_from(seed) if seed is not None else new_seed()
    bot_seed = int.from_bytes(match_seed[:8], "big")
    seated = [make_bot(spec, bot_seed + i) for i, spec in enumerate(bots)]
    table = Table(
        rules,
        len(seated),
        match_seed,
        names=names
        or [spec if isinstance(spec, str) else f"bot{i}" for i, spec in enumerate(bots)],
        match_id=match_id,
        clock=clock,
        max_deals=max_deals,
        wants_events=[wants_events(bot) for bot in seated],
    )
    deliver(table, seated, table.start())
    assert table.result is not None
    return Played(table.result, table.match, match_seed, table.decisions, table.cut)


def deliver(table: Table, bots: Sequence[Bot], sends: list[Send]) -> None:
    """Hand every message to its seat's bot in the referee's order, answering each request,
    until the match is over."""
    queue = deque(sends)
    while queue:
        seat, msg = queue.popleft()
        which = msg.WhichOneof("message")
        if which is None:
            continue
        body = getattr(msg, which)
        bot = bots[seat]
        if which == "decision":
            queue.extend(table.reply(seat, reply_for(body, bot.choose(body))))
            continue
        hook = getattr(bot, f"on_{which}", None)
        if hook is not None:
            hook(body)
        if which == "rejection" and body.retry_allowed and seat in table.asked:
            request = table.asked[seat].decision  # asked again, as the SDK's client does
            queue.extend(table.reply(seat, reply_for(request, bot.choose(request))))
