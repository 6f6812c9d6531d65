"""The ismcts house bot: its determinizations are deals the seat cannot tell from the real one
(the same observation and legal actions, over random play at 2, 3 and 4 seats and several
presets), it answers legally within its clock, and the referee seats it in-process."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kozel.core.convert import ruleset_to_pb
from kozel.engine import Action, ActionKind, Deal, Match, Ruleset, observe
from kozel.engine.cards import CARD_OF
from kozel.engine.tables import subsets, tables_for
from kozel.sdk import HOUSE_BOTS
from kozel.sdk.house import GreedyBot
from kozel.sdk.ismcts import (
    IsmctsBot,
    _Clock,
    _match_term,
    _MatchModel,
)
from kozel.sdk.playout import (
    SEEN_EXPLORE,
    Exploring,
    SplitPolicy,
    can_beat,
    playout,
    policy_greedy,
    policy_seen,
)
from kozel.v1 import game_pb2, referee_pb2
from tests.sdk.harness import request_for


def _bot(rules: Ruleset, players: int, seat: int, budget: float = 0.01) -> IsmctsBot:
    bot = IsmctsBot(budget_s=budget, seed=seat)
    bot.on_match_start(
        referee_pb2.MatchStart(
            match_id="m", seat=seat, players=players, ruleset=ruleset_to_pb(rules)
        )
    )
    return bot


@pytest.mark.parametrize(
    ("preset", "players"),
    [
        ("classic", 2),
        ("classic", 3),
        ("classic", 4),
        ("classic-no-combos", 2),
        ("balkan", 2),
        ("money", 3),
        ("classic-35", 3),
    ],
)
def test_determinizations_reproduce_the_observation(preset: str, players: int) -> None:
    rules = Ruleset.preset(preset)
    rng = random.Random(7)
    checked = searched = 0
    for seed in range(2):
        match = Match(rules, players, seed)
        bots = [_bot(rules, players, s) for s in range(players)]
        for b in bots:
            b.max_worlds = 4  # the test checks every one
        dealt = -1
        while not match.over:
            deal = match.deal
            if len(match.records) != dealt:
                dealt = len(match.records)
                for s, b in enumerate(bots):
                    b.on_deal_start(referee_pb2.DealStart(hand=list(observe(deal, s).hand)))
            seat = deal.to_act[0]
            req, legal = request_for(deal, seat)
            if deal.decision in ("lead", "respond") and len(legal) > 1:
                clock = _Unlimited()
                worlds = bots[seat]._worlds(req, clock, 3)  # noqa: SLF001 - the method under test
                if worlds:
                    bots[seat]._more(worlds)  # noqa: SLF001 - one drawn as the search does
                searched += 1
                real = observe(deal, seat)
                for w in worlds:
                    seen = observe(w, seat)
                    assert (seen.hand, seen.tricks, seen.trick, seen.talon, seen.seats) == (
                        real.hand,
                        real.tricks,
                        real.trick,
                        real.talon,
                        real.seats,
                    )
                    assert w.legal_actions(seat) == legal
                    checked += 1
            match.apply(seat, legal[rng.randrange(len(legal))])
    assert searched and checked >= searched  # determinized nearly every decision


def test_presets_it_cannot_determinize_are_played_as_greedy() -> None:
    rules = Ruleset.preset("courtyard")  # random_middle trump, mid-trick interrupts
    match = Match(rules, 4, 1)
    bot = _bot(rules, 4, match.deal.to_act[0])
    req, legal = request_for(match.deal, match.deal.to_act[0])
    assert bot._worlds(req, _Unlimited()) == []  # noqa: SLF001
    assert 0 <= bot.choose(req) < len(legal)


class _Unlimited(_Clock):
    def __init__(self) -> None:
        super().__init__(math.inf, math.inf)

    def up(self) -> bool:
        return False


def test_answers_legally_within_the_clock() -> None:
    rules = Ruleset.preset("classic")
    match = Match(rules, 2, 3)
    bots = [_bot(rules, 2, s, budget=0.05) for s in range(2)]
    rng = random.Random(1)
    slowest = 0.0
    for _ in range(40):
        if match.over:
            break
        deal = match.deal
        seat = deal.to_act[0]
        req, legal = request_for(deal, seat)
        req.move_ms = 100  # a quarter of it is the wall-clock cap
        t = time.monotonic()
        choice = bots[seat].choose(req)
        slowest = max(slowest, time.monotonic() - t)
        assert isinstance(choice, int) and 0 <= choice < len(legal)
        match.apply(seat, legal[choice] if rng.random() < 0.5 else legal[0])
    assert bots[0].stats["searched"] + bots[1].stats["searched"] > 0
    assert slowest < 2.0  # generous: the cap is 50 ms, the machine is shared


@pytest.mark.parametrize("players", [2, 3])
def test_endgame_is_solved(players: int) -> None:
    rules = Ruleset.preset("classic")
    rng = random.Random(players)
    solved = 0
    for seed in range(6):
        match = Match(rules, players, seed)
        bots = [_bot(rules, players, s, budget=0.02) for s in range(players)]
        for s, b in enumerate(bots):
            b.on_deal_start(referee_pb2.DealStart(hand=list(observe(match.deal, s).hand)))
        deal = match.deal
        while not deal.over:
            seat = deal.to_act[0]
            req, legal = request_for(deal, seat)
            if deal.talon_left == 0 and len(legal) > 1:
                choice = bots[seat].choose(req)
                assert 0 <= choice < len(legal)
            else:
                choice = rng.randrange(len(legal))
            deal.apply(seat, legal[choice])
        solved += sum(b.stats["solved"] for b in bots)
    assert solved > 0


def test_a_short_talon_is_solved_with_the_cards_open() -> None:
    """With two sides and at most ``open_talon`` talon cards, every determinization is solved
    to the end of the deal (kozel.analysis.solver), and the answer is one of the best on
    average over them. Off by default (measured no stronger): the default bot searches by
    playouts at the same decisions."""
    rules = Ruleset.preset("classic")
    rng = random.Random(5)
    solved = searched = 0
    for seed in range(4):
        match = Match(rules, 2, seed)
        bots = [_bot(rules, 2, s, budget=0.05) for s in range(2)]
        offs = [_bot(rules, 2, s, budget=0.02) for s in range(2)]
        for s in range(2):
            bots[s].open_talon = 4
            start = referee_pb2.DealStart(hand=list(observe(match.deal, s).hand))
            bots[s].on_deal_start(start)
            offs[s].on_deal_start(start)
        deal = match.deal
        while not deal.over:
            seat = deal.to_act[0]
            req, legal = request_for(deal, seat)
            if 0 < deal.talon_left <= 4 and len(legal) > 1:
                before = bots[seat].stats["solved"]
                choice = bots[seat].choose(req)
                assert 0 <= choice < len(legal)
                solved += bots[seat].stats["solved"] - before
                assert 0 <= offs[seat].choose(req) < len(legal)
            else:
                choice = rng.randrange(len(legal))
            deal.apply(seat, legal[choice])
        assert all(o.open_talon is None and o.stats["solved"] == 0 for o in offs)
        searched += sum(o.stats["searched"] for o in offs)
    assert solved > 0 and searched > 0


def test_the_evaluator_knob_plays_its_best_action() -> None:
    rules = Ruleset.preset("classic")
    match = Match(rules, 2, 7)
    bot = _bot(rules, 2, 0)
    bot.evaluator_nodes = 3000
    bot.on_deal_start(referee_pb2.DealStart(hand=list(observe(match.deal, 0).hand)))
    rng = random.Random(2)
    deal = match.deal
    while not deal.over:
        seat = deal.to_act[0]
        req, legal = request_for(deal, seat)
        choice = bot.choose(req) if seat == 0 else rng.randrange(len(legal))
        assert 0 <= choice < len(legal)
        deal.apply(seat, legal[choice])
    assert bot.stats["evaluated"] > 5 and bot.stats["searched"] == 0


def test_house_bot_names() -> None:
    assert {"ismcts", "ismcts-fast"} <= set(HOUSE_BOTS)
    assert isinstance(HOUSE_BOTS["ismcts"](), IsmctsBot)
    assert game_pb2.DECISION_KIND_LEAD  # the stubs load


def test_kozel_play_seats_it_in_process(tmp_path: Path) -> None:
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "kozel.cli.main",
            "play",
            "--bot",
            "ismcts-fast",
            "--vs",
            "random",
            "--matches",
            "2",
            "--replay-dir",
            str(tmp_path),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout)
    assert out["matches"] == 2 and out["errors"] == [] and out["timeouts"] == 0
    assert out["wins"] >= 1


def test_can_beat_agrees_with_the_engine() -> None:
    rules = Ruleset.preset("classic")
    rng = random.Random(5)
    found = {True: 0, False: 0}
    for _ in range(2000):
        tables = tables_for(rules, rng.randrange(4))
        cards = rng.sample(range(36), 8)
        k = rng.randint(1, 4)
        target = sum(1 << c for c in cards[:k])
        hand = sum(1 << c for c in cards[4 : 4 + rng.randint(1, 4)])
        exact = hand.bit_count() >= k and any(tables.set_beats(m, target) for m in subsets(hand, k))
        assert can_beat(hand, target, tables.beaten_by) == exact, (hand, target)
        found[exact] += 1
    assert min(found.values()) > 100  # both answers were tested


def _deal_of(hands: tuple[list[str], list[str]], trump_card: str) -> Deal:
    """A two-player classic deal with these start hands (seat 0 leads first)."""
    rules = Ruleset.preset("classic")
    fixed = [CARD_OF[c] for c in hands[0] + hands[1] + [trump_card]]
    rest = [c for c in range(36) if c not in fixed]
    order = [CARD_OF[hands[i % 2][i // 2]] for i in range(8)] + [CARD_OF[trump_card]] + rest
    deal = Deal.start(rules, 2, order, 1)
    assert deal.to_act == (0,)
    assert deal.hands == [sum(1 << CARD_OF[c] for c in h) for h in hands]
    return deal


def test_greedy_policy_leads_cheap_and_trumps_a_rich_lead() -> None:
    deal = _deal_of((["AD", "7C", "8C", "TH"], ["9H", "6C", "7D", "JC"]), "QH")  # hearts trump
    rng = random.Random(0)
    trump = 3
    lead = policy_greedy(deal, deal.legal_actions(0), trump, rng, explore=0.0)
    # GreedyBot's values: the ace of diamonds would be trumped by 9H (-17), the trump ten
    # holds but spends a trump's power (-5.5); the lowest club loses little (-0.5).
    assert lead == Action(ActionKind.LEAD, 1 << CARD_OF["7C"])
    assert not can_beat(deal.hands[1], 1 << CARD_OF["TH"], deal.tables.beaten_by)
    assert can_beat(deal.hands[1], 1 << CARD_OF["AD"], deal.tables.beaten_by)
    deal.apply(0, Action(ActionKind.LEAD, 1 << CARD_OF["AD"]))
    answer = policy_greedy(deal, deal.legal_actions(1), trump, rng, explore=0.0)
    assert answer == Action(ActionKind.BEAT, 1 << CARD_OF["9H"])  # 11 points for a low trump


@pytest.mark.parametrize("name", ["greedy", "split"])
def test_greedy_and_split_playouts_finish_the_deal(name: str) -> None:
    rules = Ruleset.preset("classic")
    for seed in range(3):
        deal = Match(rules, 2 + seed, seed).deal
        side = deal.side_of[deal.to_act[0]]
        policy = IsmctsBot()
        policy.playout_policy = name
        fn = policy.playout_policy_for(side)
        assert fn is not None
        value = playout(deal, side, random.Random(seed), 0.2, True, None, fn)
        assert deal.over and -1.0 <= value <= 1.0


def test_the_split_policy_plays_each_side_by_its_own_policy() -> None:
    rules = Ruleset.preset("classic")
    split = SplitPolicy(0, Exploring(policy_seen, SEEN_EXPLORE), Exploring(policy_greedy, 0.0))
    for seed in range(20):
        deal = Match(rules, 2, seed).deal
        while not deal.over:
            seat = deal.to_act[0]
            acts = deal.legal_actions(seat)
            got = split(deal, acts, deal.trump, random.Random(seed))
            if deal.side_of[seat] == 0:
                assert got == policy_seen(deal, acts, deal.trump, random.Random(seed))
            else:
                assert got == policy_greedy(deal, acts, deal.trump, random.Random(seed), 0.0)
            deal.apply(seat, got)


def test_greedy_policy_answers_as_greedy_bot_at_two_players() -> None:
    """The opponent model of ``read_opponent``: at two players GreedyBot's answer to a lead
    depends only on its hand, the lead and the talon, so the policy on the real hands gives
    the same answer."""
    rules = Ruleset.preset("classic")
    greedy = GreedyBot()
    rng = random.Random(0)
    compared = beats = 0
    for seed in range(4):
        match = Match(rules, 2, seed)
        while not match.over:
            deal = match.deal
            seat = deal.to_act[0]
            req, legal = request_for(deal, seat)
            choice = legal[greedy.choose(req)]
            if deal.decision == "respond" and len(legal) > 1:
                assert policy_greedy(deal, legal, deal.trump, rng, 0.0) == choice
                compared += 1
                beats += choice.kind is ActionKind.BEAT
            match.apply(seat, choice)
    assert compared > 100 and 0 < beats < compared


def test_reading_the_opponent_keeps_worlds_where_it_answered_as_greedy() -> None:
    rules = Ruleset.preset("classic")
    rng = random.Random(3)
    greedy = GreedyBot()
    checked = 0
    for seed in range(2):
        match = Match(rules, 2, seed)
        bot = _bot(rules, 2, 0)
        bot.read_opponent, bot.model_slack = True, 0.0
        dealt = -1
        while not match.over:
            deal = match.deal
            if len(match.records) != dealt:
                dealt = len(match.records)
                bot.on_deal_start(referee_pb2.DealStart(hand=list(observe(deal, 0).hand)))
            seat = deal.to_act[0]
            req, legal = request_for(deal, seat)
            if seat == 0 and deal.decision in ("lead", "respond") and len(legal) > 1:
                worlds = bot._worlds(req, _Unlimited(), 3)  # noqa: SLF001 - the method under test
                assert worlds  # the real deal is one of them, so some are drawn
                real = observe(deal, 0)
                for w in worlds:
                    assert observe(w, 0).tricks == real.tricks
                    assert w.legal_actions(0) == legal
                    checked += 1
                choice = legal[rng.randrange(len(legal))]
            else:
                choice = legal[greedy.choose(req)] if seat == 1 else legal[0]
            match.apply(seat, choice)
    assert checked > 50 and bot.stats["unlikely"] > 0  # some drawn worlds were dropped


def test_match_model_win_chances() -> None:
    rules = Ruleset.preset("classic")
    model = _MatchModel(rules, 1)
    assert model.chances((0, 0)) == pytest.approx((0.5, 0.5))
    assert model.chances((0, 0, 0)) == pytest.approx((1 / 3, 1 / 3, 1 / 3))
    # Two players at 10 each: the next deal decides; one deal short of the limit, 3 of 4.
    assert model.chances((10, 10)) == pytest.approx((0.5, 0.5))
    assert model.chances((8, 10)) == pytest.approx((0.75, 0.25))
    # A side that crosses the limit is out; the last two play on under flat2.
    assert model.after((12, 4, 4)) == pytest.approx((0.0, 0.5, 0.5))
    assert model.after((12, 12, 4)) == (0.0, 0.0, 1.0)
    assert sum(model.chances((2, 6, 4))) == pytest.approx(1.0)
    assert model.chances((8, 0, 0))[0] < model.chances((4, 0, 0))[0] < 1 / 3
    first_out = _MatchModel(Ruleset.preset("classic", {"elimination": "first_out"}), 1)
    assert first_out.after((12, 4, 6)) == (0.0, 1.0, 0.0)
    assert first_out.after((12, 4, 4)) == (0.0, 0.5, 0.5)


def test_match_term_is_the_linear_reward_at_two_players_and_not_at_three() -> None:
    rules = Ruleset.preset("classic")
    two = Deal.start(rules, 2, list(range(36)), 0)
    for totals in [(0, 0), (10, 0), (6, 8)]:
        term = _match_term(rules, two, totals, 0)
        assert term is not None
        assert term([0, 2]) == pytest.approx(1 / 3)  # won: as the linear term
        assert term([2, 0]) == pytest.approx(-1 / 3)
    three = Deal.start(rules, 3, list(range(36)), 0)
    term = _match_term(rules, three, (0, 0, 0), 0)
    assert term is not None
    assert term([0, 2, 4]) == pytest.approx(0.5) and term([4, 2, 0]) == pytest.approx(-0.5)
    assert -0.5 < term([2, 0, 4]) < 0  # second is worth less than halfway at three
    # At 10 of 12, second and third both put it out: only coming top counts.
    term = _match_term(rules, three, (10, 0, 0), 0)
    assert term is not None
    assert term([2, 0, 4]) == pytest.approx(term([4, 0, 2])) == pytest.approx(-0.5)
    # Where the totals leave nothing to play for, or the match is of fixed deals: linear.
    assert _match_term(rules, three, (12, 0, 0), 0) is None
    fixed = Ruleset.preset("classic", {"fixed_deals": 5})
    assert _match_term(fixed, Deal.start(fixed, 2, list(range(36)), 0), (0, 0), 0) is None
    assert _match_term(rules, two, (), 0) is None


def test_match_aware_bot_answers_legally() -> None:
    rules = Ruleset.preset("classic")
    match = Match(rules, 3, 5)
    bot = _bot(rules, 3, 0, budget=0.02)
    bot.match_aware = True
    bot.on_deal_start(
        referee_pb2.DealStart(hand=list(observe(match.deal, 0).hand), penalty_totals=[4, 0, 8])
    )
    deal = match.deal
    asked = 0
    while not deal.over:
        seat = deal.to_act[0]
        req, legal = request_for(deal, seat)
        choice = bot.choose(req) if seat == 0 else 0
        assert 0 <= choice < len(legal)
        asked += seat == 0
        deal.apply(seat, legal[choice])
    assert asked and bot.stats["searched"] + bot.stats["solved"] > 0


def _first_searchable(rules: Ruleset, seed: int) -> tuple[Match, int]:
    """A match at its first lead or response with a choice, and the seat to act."""
    match = Match(rules, 2, seed)
    rng = random.Random(seed)
    while True:
        deal = match.deal
        seat = deal.to_act[0]
        legal = deal.legal_actions(seat)
        if deal.decision in ("lead", "respond") and len(legal) > 2:
            return match, seat
        match.apply(seat, legal[rng.randrange(len(legal))])


def test_search_talon_leaves_the_early_decisions_to_greedy() -> None:
    rules = Ruleset.preset("classic")
    match, seat = _first_searchable(rules, 5)
    req, _ = request_for(match.deal, seat)
    assert req.observation.talon > 12
    late = _bot(rules, 2, seat)
    late.search_talon = 12
    late.on_deal_start(referee_pb2.DealStart(hand=list(observe(match.deal, seat).hand)))
    assert late.choose(req) == GreedyBot().choose(req)
    assert late.stats["searched"] == 0
    always = _bot(rules, 2, seat)
    always.on_deal_start(referee_pb2.DealStart(hand=list(observe(match.deal, seat).hand)))
    always.choose(req)
    assert always.stats["searched"] == 1


def test_prune_spends_the_rounds_on_the_candidates_still_in_question() -> None:
    """Without pruning every round plays every candidate; with it the settled candidates
    drop out, so the rounds play fewer (greedy's pick and the others go on)."""
    rules = Ruleset.preset("classic")
    dropped = 0
    for prune in (False, True):
        for seed in range(6):
            match, seat = _first_searchable(rules, seed)
            req, _ = request_for(match.deal, seat)
            bot = _bot(rules, 2, seat, budget=0.05)
            bot.prune = prune
            bot.settled_z = 1.0  # settles often, so that pruning has something to drop
            bot.on_deal_start(referee_pb2.DealStart(hand=list(observe(match.deal, seat).hand)))
            worlds = bot._worlds(req, _Unlimited(), 8)  # noqa: SLF001 - the search under test
            n = min(6, len(req.legal_actions))
            bot._search_paired(worlds, seat, list(range(n)), _Clock(math.inf, 0.05))  # noqa: SLF001
            rounds, played = bot.stats["rounds"], bot.stats["playouts"]
            assert rounds > 0
            if prune:
                assert rounds <= played <= rounds * n
                dropped += played < rounds * n
            else:
                assert played == rounds * n
    assert dropped >= 2


def test_the_seen_policy_explores_as_often_as_asked() -> None:
    rules = Ruleset.preset("classic")
    never = Exploring(policy_seen, 0.0)
    always = Exploring(policy_seen, 1.0)
    differ = 0
    for seed in range(30):
        match, seat = _first_searchable(rules, seed)
        deal = match.deal
        acts = deal.legal_actions(seat)
        assert never(deal, acts, deal.trump, random.Random(seed)) == policy_seen(
            deal, acts, deal.trump, random.Random(seed), 0.0
        )
        picks = {always(deal, acts, deal.trump, random.Random(seed * 100 + k)) for k in range(20)}
        differ += len(picks) > 1
    assert differ > 20  # random moves pick different actions
