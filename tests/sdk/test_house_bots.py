"""House bots played in-process against the engine (no server): legality, strength, choices."""

from __future__ import annotations

import random

import pytest

from kozel.engine import Match, Ruleset
from kozel.engine.cards import CARD_OF
from kozel.sdk import HOUSE_BOTS, Bot, GreedyBot, RandomBot
from kozel.sdk.house import beats
from kozel.v1 import game_pb2, referee_pb2
from tests.sdk.harness import deal_with, play_match, request_for

C = CARD_OF


class ExplicitBot(Bot):
    """Answers with the Action spelled out instead of an index (a declaration as kind and
    combo only, as the protocol allows)."""

    def __init__(self, inner: Bot) -> None:
        self.inner = inner

    def on_match_start(self, msg: referee_pb2.MatchStart) -> None:
        self.inner.on_match_start(msg)

    def choose(self, request: referee_pb2.DecisionRequest) -> game_pb2.Action:
        choice = self.inner.choose(request)
        assert isinstance(choice, int)
        action = game_pb2.Action()
        action.CopyFrom(request.legal_actions[choice])
        if action.kind == game_pb2.ACTION_KIND_DECLARE:
            del action.cards[:]
        return action


def test_greedy_beats_random_two_player_classic() -> None:
    n = 200
    wins = 0
    for i in range(n):
        greedy_seat = i % 2
        bots: list[Bot] = [RandomBot(seed=i), RandomBot(seed=i)]
        bots[greedy_seat] = GreedyBot()
        outcome = play_match(bots, seed=i)
        wins += outcome.winner == greedy_seat
    rate = wins / n
    print(f"\nGreedyBot vs RandomBot, {n} two-player classic matches: {wins} won ({rate:.1%})")
    assert rate >= 0.65, f"greedy won only {rate:.1%}"


@pytest.mark.parametrize(
    ("preset", "players"),
    [
        ("classic", 3),
        ("classic", 4),
        ("classic-35", 3),
        ("courtyard", 4),
        ("classic-no-shokha", 2),
        ("balkan", 3),
        ("money", 3),
        ("money", 5),
    ],
)
def test_mixed_tables_play_only_legal_actions(preset: str, players: int) -> None:
    """Random, greedy and explicit-Action bots at one table; the harness refuses any
    illegal index or action."""
    explicit = 0
    for seed in range(6):
        bots: list[Bot] = []
        for s in range(players):
            kind = (s + seed) % 3
            bots.append(
                GreedyBot()
                if kind == 0
                else RandomBot(seed=seed * 10 + s)
                if kind == 1
                else ExplicitBot(GreedyBot())
            )
        outcome = play_match(bots, seed=seed, preset=preset)
        explicit += outcome.explicit_actions
        assert outcome.deals >= 1
    assert explicit > 0


@pytest.mark.parametrize("players", [3, 4])
def test_greedy_ahead_of_random_at_bigger_tables(players: int) -> None:
    """One greedy seat among random ones (its partner random at four) wins most matches."""
    n = 20
    wins = 0
    for i in range(n):
        seat = i % players
        bots: list[Bot] = [RandomBot(seed=100 + i * 7 + s) for s in range(players)]
        bots[seat] = GreedyBot()
        outcome = play_match(bots, seed=1000 + i)
        side = seat % 2 if players == 4 else seat
        wins += outcome.winner == side
    assert wins >= n * 0.6, f"greedy won {wins} of {n}"


def test_house_bots_registry_and_random_seed() -> None:
    assert set(HOUSE_BOTS) == {"random", "greedy", "ismcts", "ismcts-fast"}
    assert HOUSE_BOTS["random"] is RandomBot and HOUSE_BOTS["greedy"] is GreedyBot
    for make in HOUSE_BOTS.values():
        assert isinstance(make(), Bot)  # the referee builds house bots without arguments
    deal = deal_with([["7C", "8C", "9S", "AH"], ["6S", "8D", "KH", "9H"]], "QD")
    req, legal = request_for(deal, 0)
    a = [RandomBot(seed=3).choose(req) for _ in range(3)]
    b = [RandomBot(seed=3).choose(req) for _ in range(3)]
    assert a == b and all(0 <= i < len(legal) for i in a)


# -- hand-made situations (two players, diamonds trump unless said) -----------------------------


def _greedy(deal, seat: int) -> game_pb2.Action:
    req, _ = request_for(deal, seat)
    return req.legal_actions[GreedyBot().choose(req)]


def _is(action: game_pb2.Action, kind: int, *cards: str) -> bool:
    return action.kind == kind and sorted(action.cards) == sorted(cards)


BEAT, DISCARD, LEAD = (
    game_pb2.ACTION_KIND_BEAT,
    game_pb2.ACTION_KIND_DISCARD,
    game_pb2.ACTION_KIND_LEAD,
)


def test_beats_follows_the_rules() -> None:
    d = "SCDH".index("D")
    assert beats(C["7D"], C["KC"], d) and beats(C["AC"], C["9C"], d)
    assert not beats(C["9C"], C["AC"], d) and not beats(C["AH"], C["7C"], d)
    assert beats(C["6S"], C["AD"], d) and not beats(C["AD"], C["6S"], d)
    assert not beats(C["6S"], C["7S"], d, shokha=False)


def test_greedy_declares_a_combination() -> None:
    deal = deal_with([["7H", "8H", "KH", "AH"], ["6C", "8D", "KC", "9S"]], "QD")
    req, _ = request_for(deal, 0)
    assert req.kind == game_pb2.DECISION_KIND_DECLARE
    assert req.legal_actions[GreedyBot().choose(req)].kind == game_pb2.ACTION_KIND_DECLARE


def test_greedy_beats_with_a_plain_card_not_trump_or_shokha() -> None:
    deal = deal_with([["KS", "8H", "9H", "JC"], ["AS", "7D", "6S", "9C"]], "QD")
    deal.play(0, "lead", ["KS"])
    assert _is(_greedy(deal, 1), BEAT, "AS")


def test_greedy_never_wastes_shokha_or_trump_on_a_pointless_trick() -> None:
    deal = deal_with([["7C", "8H", "TH", "JC"], ["6S", "8D", "KH", "9H"]], "QD")
    deal.play(0, "lead", ["7C"])
    assert _is(_greedy(deal, 1), DISCARD, "9H")  # the cheapest card, not KH


def test_greedy_takes_a_ten_with_a_low_trump_rather_than_the_shokha() -> None:
    deal = deal_with([["TC", "8H", "TH", "JC"], ["6S", "8D", "KH", "9H"]], "QD")
    deal.play(0, "lead", ["TC"])
    assert _is(_greedy(deal, 1), BEAT, "8D")


def test_greedy_discard_keeps_trumps_aces_and_tens() -> None:
    deal = deal_with([["AC", "8H", "TH", "JC"], ["TS", "8D", "AH", "7S"]], "QD")
    deal.play(0, "lead", ["AC"])  # only the trump can beat it: 8D takes 11, so beat
    assert _is(_greedy(deal, 1), BEAT, "8D")
    deal = deal_with([["9C", "8H", "TH", "JC"], ["TS", "KD", "AH", "7S"]], "QD")
    deal.play(0, "lead", ["9C"])  # not worth a trump: throw the seven, keep TS, AH, KD
    assert _is(_greedy(deal, 1), DISCARD, "7S")


def test_greedy_leads_low_cards_of_one_suit_and_keeps_aces() -> None:
    deal = deal_with([["7C", "8C", "9S", "AH"], ["6S", "8D", "KH", "9H"]], "QD")
    assert _is(_greedy(deal, 0), LEAD, "7C", "8C")


def test_greedy_banks_aces_and_tens_under_the_shokha() -> None:
    deal = deal_with([["6S", "AH", "TH", "7C"], ["JS", "8D", "KC", "9C"]], "QD")
    assert _is(_greedy(deal, 0), LEAD, "6S", "AH", "TH")


def test_greedy_respects_the_lead_cap() -> None:
    """Whenever the cap is below 4, greedy leads at most that many cards."""
    capped = 0
    for seed in range(3):
        match = Match(Ruleset.preset("classic"), 3, seed)
        rng = random.Random(seed)
        while not match.over:
            seat = match.deal.to_act[0]
            req, legal = request_for(match.deal, seat)
            choice = GreedyBot().choose(req)
            if req.kind == game_pb2.DECISION_KIND_LEAD and req.observation.lead_cap < 4:
                capped += 1
                assert len(req.legal_actions[choice].cards) <= req.observation.lead_cap
            match.apply(seat, legal[choice] if seat == 0 else rng.choice(legal))
    assert capped > 0


def test_greedy_reads_the_ruleset_and_plays_a_bura_for_the_pot() -> None:
    from kozel.core.convert import ruleset_to_pb

    bot = GreedyBot()
    bot.on_match_start(referee_pb2.MatchStart(ruleset=ruleset_to_pb(Ruleset.preset("money"))))
    assert bot.money and bot.shokha and len(bot.deck) == 36
    other = GreedyBot()
    other.on_match_start(
        referee_pb2.MatchStart(ruleset=ruleset_to_pb(Ruleset.preset("classic-35")))
    )
    assert not other.money and C["6C"] not in other.deck
    deal = deal_with([["7D", "9D", "KD", "AH"], ["JS", "8C", "KC", "9C"]], "QD", preset="money")
    req, _ = request_for(deal, 0)
    action = req.legal_actions[bot.choose(req)]
    assert _is(action, LEAD, "7D", "9D", "KD")  # three trumps take the pot at once
