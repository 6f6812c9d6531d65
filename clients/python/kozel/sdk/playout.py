"""The playouts of :mod:`kozel.sdk.ismcts`: a deal played to its end by a fast one-trick
policy, and the reward of its end for one side.

This is the search's hot loop (most of its time), so `make setup` compiles this module with
mypyc beside the engine (:mod:`kozel.sdk.native`); it runs the same as pure Python.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Final

from kozel.engine import Action, ActionKind, Deal
from kozel.engine.cards import SUIT_OF, points
from kozel.sdk.house import GreedyBot


def _card_premium(card: int, trump: int) -> float:
    if card == 0:
        return 30.0
    if SUIT_OF[card] == trump:
        return 8.0 + card % 9
    return 0.2 * (card % 9)


_PREMIUM = tuple(tuple(_card_premium(c, t) for c in range(36)) for t in range(4))


def _table_sum(mask: int, table: tuple[float, ...]) -> float:
    """The sum of ``table``'s entries for the cards of ``mask``."""
    v = 0.0
    while mask:
        low = mask & -mask
        v += table[low.bit_length() - 1]
        mask ^= low
    return v


def premium(mask: int, trump: int) -> float:
    """What spending these cards gives up beyond their points: trumps and the shokha most."""
    return _table_sum(mask, _PREMIUM[trump])


def cost(mask: int, trump: int) -> float:
    """What spending these cards gives up: their points and their premium."""
    return points(mask) + premium(mask, trump)


Policy = Callable[[Deal, Sequence[Action], int, random.Random], Action]


def _greedy_power(card: int, trump: int) -> float:
    """GreedyBot's power of a card (what holding it is worth beyond its points)."""
    g = GreedyBot
    if card == 0:
        return g.power_shokha
    rank = card % 9
    if card // 9 == trump:
        return g.power_trump + g.power_trump_rank * rank
    if rank == 8:
        return g.power_ace
    if rank == 7:
        return g.power_ten
    if rank == 6:
        return g.power_king
    return g.power_low * rank


_GPOWER = tuple(tuple(_greedy_power(c, t) for c in range(36)) for t in range(4))


def _on_table(deal: Deal) -> int:
    """The cards of the trick in play."""
    cards = 0
    for play in deal.trick:
        cards |= play.cards
    return cards


def can_beat(hand: int, target: int, beaten_by: Sequence[int]) -> bool:
    """Whether ``hand`` holds a set that beats ``target`` (Hall's condition over the target's
    cards: every subset of them is beaten, one by one, by as many cards of the hand)."""
    if target & (target - 1) == 0:
        return bool(hand & beaten_by[target.bit_length() - 1])
    unions: list[tuple[int, int]] = []
    c = target
    while c:
        low = c & -c
        bw = hand & beaten_by[low.bit_length() - 1]
        if not bw:
            return False
        unions += [(u | bw, n + 1) for u, n in unions]
        unions.append((bw, 1))
        c ^= low
    return all(u.bit_count() >= n for u, n in unions)


def trivial_answer(acts: Sequence[Action], rng: random.Random, explore: float) -> Action | None:
    """A playout policy's answer before any judgement: the only action, a random one with
    chance ``explore``, or the first of a declaration window's; None when judgement is due."""
    if len(acts) == 1:
        return acts[0]
    if explore and rng.random() < explore:
        return acts[rng.randrange(len(acts))]
    kind = acts[0].kind
    if kind is ActionKind.DECLARE or kind is ActionKind.PASS:
        return acts[0]
    return None


def policy_greedy(
    deal: Deal, acts: Sequence[Action], trump: int, rng: random.Random, explore: float = 0.05
) -> Action:
    """GreedyBot's one-trick judgement (its card powers and values) on the determinized
    hands: whether a lead or a beat will be beaten is read off the hands (beaten with
    GreedyBot's ``will_beat`` chance) instead of estimated from the unseen cards."""
    trivial = trivial_answer(acts, rng, explore)
    if trivial is not None:
        return trivial
    power = _GPOWER[trump]
    pf = 1.0 if deal.talon_left else GreedyBot.endgame_power
    if acts[0].kind is ActionKind.LEAD:
        return _greedy_lead(deal, acts, power, pf)
    return _greedy_response(deal, acts, power, pf)


def _beat_chance(hands: Sequence[int], target: int, beaten_by: Sequence[int]) -> float:
    """GreedyBot's ``will_beat`` when one of ``hands`` holds a set that beats ``target``."""
    k = target.bit_count()
    for h in hands:
        if h.bit_count() >= k and can_beat(h, target, beaten_by):
            return GreedyBot.will_beat
    return 0.0


def _greedy_lead(deal: Deal, acts: Sequence[Action], power: tuple[float, ...], pf: float) -> Action:
    """The lead worth most: its points and the others' cards it draws in when it holds, less
    what it gives away when an opponent beats it, less ``pf`` times its cards' power."""
    beaten_by = deal.tables.beaten_by
    side_of = deal.side_of
    hands = deal.hands
    seat = deal.leader
    mine = side_of[seat]
    opps = [hands[s] for s in deal.active if side_of[s] != mine and hands[s]]
    others = sum(1 for s in deal.active if s != seat and hands[s])
    n_opp = sum(h.bit_count() for h in opps)
    avg = sum(points(h) for h in opps) / n_opp if n_opp else 0.0
    best, best_v = acts[0], -1e9
    for a in acts:
        m = a.cards
        k = m.bit_count()
        pts = points(m)
        p = _beat_chance(opps, m, beaten_by)
        v = (1 - p) * (pts + others * k * avg) - p * (pts + k * avg) - pf * _table_sum(m, power)
        if v > best_v:
            best, best_v = a, v
    return best


def _greedy_response(
    deal: Deal, acts: Sequence[Action], power: tuple[float, ...], pf: float
) -> Action:
    """The beat or discard worth most: a beat wins the stake unless a later opponent beats
    it; a discard under a partner's winning card adds to the partner's stake, under an
    opponent's it gives its points away; less ``pf`` times its cards' power."""
    beaten_by = deal.tables.beaten_by
    side_of = deal.side_of
    hands = deal.hands
    stake0 = points(_on_table(deal))
    seat = deal.responders[deal.resp_i]
    mine = side_of[seat]
    later = [s for s in deal.responders[deal.resp_i + 1 :] if hands[s]]
    later_opps = [hands[s] for s in later if side_of[s] != mine]
    partner_wins = side_of[deal.win_seat] == mine
    partner_beaten = _beat_chance(later_opps, deal.win_mask, beaten_by) if partner_wins else 0.0
    held = hands[seat].bit_count()
    avg = points(hands[seat]) / held if held else 0.0
    best, best_v = acts[0], -1e9
    for a in acts:
        m = a.cards
        pts = points(m)
        later_cards = len(later) * m.bit_count() * avg
        if a.kind is ActionKind.BEAT:
            p = _beat_chance(later_opps, m, beaten_by)
            stake = stake0 + pts + later_cards
            v = (1 - p) * stake - p * stake
        elif partner_wins:
            stake = float(stake0 + pts)
            v = (1 - partner_beaten) * (stake + later_cards) - partner_beaten * stake
        else:
            v = -float(stake0 + pts)
        v -= pf * _table_sum(m, power)
        if v > best_v:
            best, best_v = a, v
    return best


def policy_simple(deal: Deal, acts: Sequence[Action], trump: int, rng: random.Random) -> Action:
    if len(acts) == 1:
        return acts[0]
    if rng.random() < 0.15:
        return acts[rng.randrange(len(acts))]
    kind = acts[0].kind
    if kind in (ActionKind.DECLARE, ActionKind.PASS):
        return next((a for a in acts if a.kind is ActionKind.DECLARE), acts[0])
    if kind is ActionKind.LEAD:
        return min(acts, key=lambda a: cost(a.cards, trump) / a.cards.bit_count() ** 1.5)
    stake = points(_on_table(deal))
    beats = [a for a in acts if a.kind is ActionKind.BEAT]
    if beats and stake >= 10:
        best = min(beats, key=lambda a: cost(a.cards, trump) - points(a.cards))
        if cost(best.cards, trump) - points(best.cards) < stake + 8:
            return best
    discards = [a for a in acts if a.kind is ActionKind.DISCARD] or list(acts)
    return min(discards, key=lambda a: cost(a.cards, trump))


SEEN_EXPLORE: Final = 0.1
"""The share of random moves of :func:`policy_seen` by default."""


def policy_seen(
    deal: Deal,
    acts: Sequence[Action],
    trump: int,
    rng: random.Random,
    explore: float = SEEN_EXPLORE,
) -> Action:
    """A one-trick policy that sees the determinized hands (every seat plays as if it knew
    them): it leads what the opponents cannot beat, beats when the trick is worth the cards,
    and otherwise sheds its cheapest cards; random with chance ``explore``."""
    trivial = trivial_answer(acts, rng, explore)
    if trivial is not None:
        return trivial
    kind = acts[0].kind
    beaten_by = deal.tables.beaten_by
    side_of = deal.side_of
    hands = deal.hands
    if kind is ActionKind.LEAD:
        seat = deal.leader
        mine = side_of[seat]
        opp = 0
        for s in deal.active:
            if side_of[s] != mine:
                opp |= hands[s]
        best, best_v = acts[0], -1e9
        for a in acts:
            m = a.cards
            k = m.bit_count()
            union = 0
            beatable = True
            c = m
            while c:
                low = c & -c
                b = opp & beaten_by[low.bit_length() - 1]
                if not b:
                    beatable = False
                    break
                union |= b
                c ^= low
            if beatable and union.bit_count() < k:
                beatable = False
            v = points(m) + 3.0 * k if not beatable else -points(m) - 4.0 * k
            v -= 0.5 * premium(m, trump)
            if v > best_v:
                best, best_v = a, v
        return best
    stake = points(_on_table(deal))
    partner_wins = side_of[deal.win_seat] == side_of[deal.responders[deal.resp_i]]
    best, best_v = acts[0], -1e9
    for a in acts:
        m = a.cards
        if partner_wins:  # the trick is ours already: give it points, keep the trumps
            v = (-1.0 if a.kind is ActionKind.BEAT else points(m)) - 0.5 * premium(m, trump)
        elif a.kind is ActionKind.BEAT:
            v = stake + points(m) - 0.5 * premium(m, trump)
        else:
            v = -stake - points(m) - 0.3 * premium(m, trump)
        if v > best_v:
            best, best_v = a, v
    return best


ExploringPolicy = Callable[[Deal, Sequence[Action], int, random.Random, float], Action]
"""A policy with its share of random moves as a last argument: :func:`policy_seen`,
:func:`policy_greedy`."""


class Exploring:
    """``policy`` for every seat, random with chance ``explore``."""

    def __init__(self, policy: ExploringPolicy, explore: float) -> None:
        self.policy = policy
        self.explore = explore

    def __call__(
        self, deal: Deal, acts: Sequence[Action], trump: int, rng: random.Random
    ) -> Action:
        return self.policy(deal, acts, trump, rng, self.explore)


class SplitPolicy:
    """``mine`` for the seats of ``side``, ``theirs`` for the others (for ``ismcts``: the seen
    policy for its side, the opponents played as GreedyBot judges)."""

    def __init__(self, side: int, mine: Policy, theirs: Policy) -> None:
        self.side = side
        self.mine = mine
        self.theirs = theirs

    def __call__(
        self, deal: Deal, acts: Sequence[Action], trump: int, rng: random.Random
    ) -> Action:
        policy = self.mine if deal.side_of[deal.to_act[0]] == self.side else self.theirs
        return policy(deal, acts, trump, rng)


def playout(
    deal: Deal,
    side: int,
    rng: random.Random,
    points_weight: float = 0.2,
    seen: bool = False,
    solve: Callable[[Deal], float | None] | None = None,
    policy: Policy | None = None,
    term: Callable[[Sequence[int | None]], float] | None = None,
) -> float:
    """Play the deal out with a quick heuristic; the reward for ``side`` in [-1, 1]. With
    ``solve``, the rest is solved exactly once the talon is empty (if ``solve`` can)."""
    trump = "SCDH".index(deal.trump_suit)
    if policy is None:
        policy = policy_seen if seen else policy_simple
    while not deal.over:
        if solve is not None and not deal.talon_left and deal.decision in ("lead", "respond"):
            v = solve(deal)
            if v is not None:
                return v
            solve = None
        seat = deal.to_act[0]
        acts = deal.legal_actions(seat)
        deal.apply(seat, policy(deal, acts, trump, rng))
    others = [s for s in deal.active_sides() if s != side]
    return reward(deal.penalties(), deal.card_points(), side, others, points_weight, term)


def reward(
    pen: Sequence[int | None] | None,
    pts: Sequence[int],
    side: int,
    others: Sequence[int],
    points_weight: float,
    term: Callable[[Sequence[int | None]], float] | None = None,
) -> float:
    """A finished deal's value for ``side`` in [-1, 1]: the penalties it pays fewer than the
    others on average (or ``term`` of the penalties, as :mod:`kozel.sdk.ismcts` values them
    match-aware), with a share of its card-point margin (card points alone in the money game,
    ``pen`` None)."""
    opp_pts = sum(pts[s] for s in others) / max(1, len(others))
    if pen is None:
        return (pts[side] - opp_pts) / 120
    if term is not None:
        value = term(pen)
    else:
        value = (sum(pen[s] or 0 for s in others) / max(1, len(others)) - (pen[side] or 0)) / 6
    return (value + points_weight * (pts[side] - opp_pts) / 120) / (1 + points_weight)
