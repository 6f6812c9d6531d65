"""A duel of two house bots in one process, without gRPC: the engine plays the match and each
bot gets the messages the referee would send (``kozel.core.messages``: MatchStart, DealStart,
DecisionRequest, DealEnd). Seeds come in pairs, each played twice with the sides swapped, so
the luck of the deal cancels. For quick comparisons of bot versions on one core; the real
measure is ``kozel play``.

    python -m tests.sdk.duel --players 2 --seeds 20 --budget 0.025
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Sequence

from kozel.core import convert, messages
from kozel.engine import Ruleset, observe
from kozel.sdk import Bot
from kozel.sdk.house import GreedyBot
from kozel.sdk.ismcts import IsmctsBot
from tests.sdk.harness import start_match, to_engine


def duel(
    bots: Sequence[Bot], seed: int, preset: str = "classic", move_ms: int = 2000
) -> tuple[int | None, list[list[int | None]], float]:
    """Play one match, seat ``i`` by ``bots[i]``; the winning side, every deal's penalties
    and the slowest answer in seconds."""
    match = start_match(bots, seed, preset, move_ms)
    deals: list[list[int | None]] = []
    slowest = 0.0
    started = -1
    rid = 0
    while not match.over:
        deal = match.deal
        if started != len(match.records):
            started = len(match.records)
            for seat, bot in enumerate(bots):
                if seat in deal.active:
                    bot.on_deal_start(messages.deal_start_of("m", match, observe(deal, seat)))
        seat = deal.to_act[0]
        legal = deal.legal_actions(seat)
        msg = messages.encoded_decision(
            "m",
            rid,
            deal.decision,
            legal,
            move_ms=move_ms,
            bank_ms=10_000,
            retries_left=2,
            observation=convert.observation_to_pb(observe(deal, seat)).SerializeToString(),
        )
        rid += 1
        t = time.monotonic()
        choice = bots[seat].choose(msg.decision)
        slowest = max(slowest, time.monotonic() - t)
        match.apply(seat, to_engine(choice, legal, deal.hands[seat]))
        if deal.over:
            end = messages.deal_end("m", match, deal, voided=False, reveal_deck=True).deal_end
            deals.append(list(match.records[-1].penalties or []))
            for bot in bots:
                bot.on_deal_end(end)
    return match.winner, deals, slowest


def run(
    make_bot: Callable[[], Bot],
    make_vs: Callable[[], Bot],
    players: int,
    seeds: Sequence[int],
    preset: str = "classic",
) -> dict[str, float]:
    """Each seed once per seat of the bot (two sides: both ways round); score and deal score."""
    rules = Ruleset.preset(preset)
    side_of = rules.side_of(players)
    score = games = 0.0
    deal_score = deal_games = 0.0
    slowest = 0.0
    for seed in seeds:
        for first in range(players if players == 3 else 2):
            bots = [make_vs() for _ in range(players)]
            mine = [s for s in range(players) if side_of[s] == side_of[first]]
            for s in mine:
                bots[s] = make_bot()
            side = side_of[first]
            winner, deals, slow = duel(bots, seed, preset)
            slowest = max(slowest, slow)
            games += 1
            score += 1.0 if winner == side else 0.5 if winner is None else 0.0
            for pen in deals:
                own = pen[side] if pen else None
                if own is not None:
                    deal_games += 1
                    low = min(p for i, p in enumerate(pen) if i != side and p is not None)
                    deal_score += 1.0 if own < low else 0.5 if own == low else 0.0
    return {
        "matches": games,
        "score": score / games,
        "se": math.sqrt(max(score / games * (1 - score / games), 1e-9) / games),
        "deals": deal_games,
        "deal_score": deal_score / max(1, deal_games),
        "slowest_s": slowest,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--players", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--budget", type=float, default=0.025)
    ap.add_argument("--preset", default="classic")
    ap.add_argument("--set", action="append", default=[], help="ATTR=JSON on the IsmctsBot")
    ap.add_argument("--vs", choices=("greedy", "ismcts"), default="greedy", help="the opponent")
    ap.add_argument(
        "--vs-set", action="append", default=[], help="ATTR=JSON on the opponent (ismcts)"
    )
    args = ap.parse_args()
    attrs = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)}
    vs_attrs = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.vs_set)}

    def make_bot() -> Bot:
        bot = IsmctsBot(budget_s=args.budget)
        for k, v in attrs.items():
            setattr(bot, k, v)
        return bot

    def make_vs() -> Bot:
        if args.vs == "greedy":
            return GreedyBot()
        bot = IsmctsBot(budget_s=args.budget)
        for k, v in vs_attrs.items():
            setattr(bot, k, v)
        return bot

    t = time.monotonic()
    out = run(
        make_bot,
        make_vs,
        args.players,
        range(args.first_seed, args.first_seed + args.seeds),
        args.preset,
    )
    out["wall_s"] = time.monotonic() - t
    print(
        json.dumps({**attrs, "vs": args.vs, **{f"vs_{k}": v for k, v in vs_attrs.items()}, **out})
    )


if __name__ == "__main__":
    main()
