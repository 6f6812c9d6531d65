"""House bots: :class:`RandomBot` (uniform over the legal actions) and :class:`GreedyBot`
(a one-trick heuristic that clearly beats random). Both decide from the ``DecisionRequest``
alone; GreedyBot also reads the ruleset from ``MatchStart`` when it gets one (whether ``6S``
is the shokha, the deck, the money game)."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from math import comb

from kozel.engine.cards import CARD_OF, POINTS, RANK_OF, SUIT_OF
from kozel.sdk.bot import Bot
from kozel.v1 import game_pb2, referee_pb2

SHOKHA = CARD_OF["6S"]
ACE, TEN, KING = 8, 7, 6  # ranks by strength: 6 7 8 9 J Q K T A


class RandomBot(Bot):
    """Picks a legal index uniformly at random (``seed`` makes it repeatable)."""

    def __init__(self, seed: int | None = None) -> None:
        self.rng = random.Random(seed)

    def choose(self, request: referee_pb2.DecisionRequest) -> int:
        return self.rng.randrange(len(request.legal_actions))


def beats(attacker: int, defender: int, trump: int, shokha: bool = True) -> bool:
    """Whether card ``attacker`` beats card ``defender`` (card numbers) with ``trump`` suit."""
    if shokha:
        if attacker == SHOKHA:
            return True
        if defender == SHOKHA:
            return False
    if SUIT_OF[attacker] == SUIT_OF[defender]:
        return RANK_OF[attacker] > RANK_OF[defender]
    return SUIT_OF[attacker] == trump


def _cards(codes: Iterable[str]) -> list[int]:
    return [CARD_OF[c] for c in codes]


def _at_least(need: int, good: int, pool: int, draws: int) -> float:
    """P(at least ``need`` of ``good`` marked cards among ``draws`` cards drawn from ``pool``)."""
    if need <= 0:
        return 1.0
    if draws <= 0 or good < need or pool <= 0:
        return 0.0
    draws = min(draws, pool)
    total = comb(pool, draws)
    miss = sum(comb(good, j) * comb(pool - good, draws - j) for j in range(need))
    return max(0.0, 1.0 - miss / total)


class GreedyBot(Bot):
    """Looks one trick ahead. Every action is scored in expected card points for its side:
    points won or given away in this trick (with the chance that an opponent can beat, from
    the cards still unseen), minus the "power" of the cards spent (shokha, trumps, aces and
    tens are worth keeping). It always declares a combination, beats when the trick's points
    or a cheap beat make it worthwhile, otherwise discards its least valuable cards, and leads
    sets that are hard to beat (several low cards of one suit, anything with the shokha).

    A beat that will hold wins its own cards back, so their points are banked, not spent:
    taking a pointless lead with a plain ace when nobody can overbeat is good play (a version
    counting those points as a cost won under 20% of matches against this one)."""

    # Weights tuned by greedy-vs-greedy matches (two-player classic); all in card points.
    # Power: what holding a card is worth beyond its points.
    power_shokha = 12.0
    power_trump = 9.0
    power_trump_rank = 1.0
    power_ace = 8.0
    power_ten = 5.0
    power_king = 1.0
    power_low = 0.1  # per rank step below the king
    endgame_power = 0.6  # power factor once the talon is empty
    trick_bonus = 0.0  # extra for winning a trick (the lead, the first draw)
    discard_share = 1.0  # expected points of a face-down card, relative to the unseen average
    will_beat = 0.9  # chance an opponent who can beat does
    bura_bonus = 100.0  # money game: leading three trumps takes the pot
    bank_points = 1.0  # weight of a beat's own card points: they come back with the trick

    def __init__(self) -> None:
        self.shokha = True
        self.money = False
        self.deck: frozenset[int] = frozenset(range(36))

    def on_match_start(self, msg: referee_pb2.MatchStart) -> None:
        opts = msg.ruleset.options.fields
        if "shokha" in opts:
            self.shokha = opts["shokha"].bool_value
        if "game" in opts:
            self.money = opts["game"].string_value == "money"
        if "removed_cards" in opts:
            removed = {
                CARD_OF.get(v.string_value.upper(), -1)
                for v in opts["removed_cards"].list_value.values
            }
            self.deck = frozenset(range(36)) - removed

    # -- the decision --------------------------------------------------------------------------

    def choose(self, request: referee_pb2.DecisionRequest) -> int:
        legal = request.legal_actions
        if len(legal) == 1:
            return 0
        for i, a in enumerate(legal):
            if a.kind == game_pb2.ACTION_KIND_DECLARE:
                return i
        scores = self.scores(request)
        if scores is None:
            return 0
        return max(range(len(legal)), key=scores.__getitem__)

    def scores(self, request: referee_pb2.DecisionRequest) -> list[float] | None:
        """Each legal action's value in expected card points (None for a declaration)."""
        legal = request.legal_actions
        ctx = _Context(self, request.observation)
        if request.kind == game_pb2.DECISION_KIND_RESPOND:
            return [ctx.respond_value(a) for a in legal]
        if request.kind == game_pb2.DECISION_KIND_LEAD:
            cap = request.observation.lead_cap or 4
            return [ctx.lead_value(a) if len(a.cards) <= cap else float("-inf") for a in legal]
        return None

    def power(self, card: int, trump: int) -> float:
        """What holding ``card`` is worth beyond its points."""
        if self.shokha and card == SHOKHA:
            return self.power_shokha
        rank = RANK_OF[card]
        if SUIT_OF[card] == trump:
            return self.power_trump + self.power_trump_rank * rank
        if rank == ACE:
            return self.power_ace
        if rank == TEN:
            return self.power_ten
        if rank == KING:
            return self.power_king
        return self.power_low * rank


class _Context:
    """What one decision knows: the unseen cards and who plays after whom."""

    def __init__(self, bot: GreedyBot, obs: game_pb2.Observation) -> None:
        self.bot = bot
        self.obs = obs
        self.me = obs.seat
        self.trump = "SCDH".index(obs.trump) if obs.trump else -1
        seats = obs.seats
        my_side = seats[self.me].side if self.me < len(seats) else self.me
        self.side_of = [s.side for s in seats]
        self.my_side = my_side
        seen: set[int] = set(_cards(obs.hand))
        for trick in list(obs.tricks) + ([obs.trick] if obs.HasField("trick") else []):
            for p in trick.plays:
                seen.update(_cards(p.cards))
        self.known: dict[int, list[int]] = {}
        for s in seats:
            if s.known_cards:
                cards = _cards(s.known_cards)
                seen.update(cards)
                if s.seat != self.me:
                    self.known[s.seat] = cards
        if obs.trump_card and not obs.trump_card_drawn:
            seen.add(CARD_OF[obs.trump_card])  # lies at the bottom of the talon
        self.unseen = [c for c in bot.deck if c not in seen]
        n = len(self.unseen)
        self.avg_points = sum(POINTS[c] for c in self.unseen) / n if n else 0.0
        self.power_factor = bot.endgame_power if obs.talon == 0 else 1.0

    # -- helpers -------------------------------------------------------------------------------

    def power(self, cards: Sequence[int]) -> float:
        return self.power_factor * sum(self.bot.power(c, self.trump) for c in cards)

    def opponents(self, seats: Iterable[int]) -> list[int]:
        return [s for s in seats if self.side_of[s] != self.my_side]

    def p_beaten(self, cards: Sequence[int], seats: Sequence[int]) -> float:
        """Chance that one of ``seats`` can beat the set ``cards`` (and does)."""
        bot = self.bot
        if not seats or not cards or (bot.shokha and SHOKHA in cards):
            return 0.0
        strongest = max(cards, key=lambda c: (SUIT_OF[c] == self.trump, RANK_OF[c]))
        k = len(cards)
        pool = len(self.unseen)
        beat_all = [u for u in self.unseen if beats(u, strongest, self.trump, bot.shokha)]
        beat_any = [
            u for u in self.unseen if any(beats(u, c, self.trump, bot.shokha) for c in cards)
        ]
        p_keep = 1.0
        for s in seats:
            view = self.obs.seats[s]
            known = self.known.get(s, [])
            unknown = view.hand_size - len(known)
            if view.hand_size < k:
                continue
            k_all = sum(1 for c in known if beats(c, strongest, self.trump, bot.shokha))
            k_any = sum(1 for c in known if any(beats(c, x, self.trump, bot.shokha) for x in cards))
            low = _at_least(k - k_all, len(beat_all), pool, unknown)
            high = _at_least(k - k_any, len(beat_any), pool, unknown)
            p_keep *= 1.0 - bot.will_beat * (low + high) / 2
        return 1.0 - p_keep

    def still_to_play(self) -> list[int]:
        """Seats that answer the trick in play after this seat."""
        obs = self.obs
        played = {p.seat for p in obs.trick.plays} if obs.HasField("trick") else set()
        n = obs.players
        order = [(self.me + i) % n for i in range(1, n)]
        return [
            s
            for s in order
            if s not in played and obs.seats[s].active and obs.seats[s].hand_size > 0
        ]

    # -- scores --------------------------------------------------------------------------------

    def lead_value(self, action: game_pb2.Action) -> float:
        bot = self.bot
        cards = _cards(action.cards)
        k = len(cards)
        pts = sum(POINTS[c] for c in cards)
        others = [
            s
            for s in range(self.obs.players)
            if s != self.me and self.obs.seats[s].active and self.obs.seats[s].hand_size > 0
        ]
        opps = self.opponents(others)
        p = self.p_beaten(cards, opps)
        taken = pts + len(others) * k * self.avg_points * bot.discard_share + bot.trick_bonus
        lost = pts + k * self.avg_points
        value = (1 - p) * taken - p * lost - self.power(cards)
        if (
            bot.money
            and sum(1 for c in cards if SUIT_OF[c] == self.trump or (bot.shokha and c == SHOKHA))
            >= 3
        ):
            value += bot.bura_bonus
        return value

    def respond_value(self, action: game_pb2.Action) -> float:
        bot = self.bot
        obs = self.obs
        cards = _cards(action.cards)
        k = len(cards)
        pts = sum(POINTS[c] for c in cards)
        trick = obs.trick
        hidden = sum(p.count - len(p.cards) for p in trick.plays)
        on_table = trick.known_points + hidden * self.avg_points * bot.discard_share
        later = self.still_to_play()
        later_opps = self.opponents(later)
        later_cards = len(later) * k * self.avg_points * bot.discard_share
        if action.kind == game_pb2.ACTION_KIND_BEAT:
            p = self.p_beaten(cards, later_opps)
            stake = on_table + bot.bank_points * pts + later_cards
            return ((1 - p) * (stake + bot.trick_bonus) - p * stake) - self.power(cards)
        stake = on_table + pts
        if self.side_of[trick.winner] == self.my_side:  # partner is winning
            winning = _cards(
                next(
                    (p.cards for p in reversed(trick.plays) if p.seat == trick.winner and p.cards),
                    (),
                )
            )
            p = self.p_beaten(winning, later_opps)
            return (1 - p) * (stake + later_cards) - p * stake - self.power(cards)
        return -stake - self.power(cards)
