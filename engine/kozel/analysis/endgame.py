"""Exact play of a deal's last tricks, once the talon is empty: every hand is then only played
down (no draws, no declaration windows), so the rest of the deal is a small game tree over
the hands. :func:`solve` searches it exhaustively (minimax with alpha-beta pruning and a memo of
value bounds at trick boundaries)
for one side: that side picks its best play, every other seat the play worst for it (at three
players the other two are treated as one team). Legal leads and responses come from the
engine's own tables (``Deal.tables``), so the solver follows every rule knob of the ruleset
(lead sizes, the shokha, ``beat_target``); it does not model the money game's Bura, which
ends a deal early (callers keep it to the penalty game).

A node budget and a stop test (the caller's clock, asked every 256 nodes) keep it from
running away on a large position (:class:`Exhausted`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial

from kozel.engine import Action, ActionKind, Deal
from kozel.engine.cards import points
from kozel.engine.rules import BeatTarget

INF = float("inf")
Reward = Callable[[Sequence[int], Sequence[int]], float]  # (points, tricks) per side -> value


class Exhausted(Exception):
    """The position needs more nodes than the budget allows."""


class Solver:
    """The endgame of one deal position for the seats of ``side`` (see the module docstring).
    ``reward`` maps final card points per side, and per side whether it took a trick (1) or
    none (0), to a value for ``side``."""

    def __init__(
        self,
        deal: Deal,
        side: int,
        reward: Reward,
        max_nodes: int = 200_000,
        stop: Callable[[], bool] | None = None,
    ) -> None:
        if deal.talon_left or deal.over or deal.decision not in ("lead", "respond"):
            raise ValueError("the solver starts at a lead or response with the talon empty")
        self.tables = deal.tables
        self.side_of = deal.side_of
        self.side = side
        self.reward = reward
        self.players = deal.players
        self.active = deal.active
        self.n_sides = deal.n_sides
        self.original = deal.rules.beat_target == BeatTarget.ORIGINAL_LEAD
        self.memo: dict[tuple[object, ...], tuple[float, float]] = {}  # key: (low, high)
        self.nodes = 0
        self.max_nodes = max_nodes
        self.stop = stop
        self.order = {
            s: [o for k in range(1, self.players) if (o := (s + k) % self.players) in self.active]
            for s in self.active
        }
        self.deal = deal
        pts = [0] * self.n_sides
        trk = [0] * self.n_sides
        for s in self.active:
            pts[self.side_of[s]] += points(deal.taken[s])
            trk[self.side_of[s]] |= deal.tricks_won[s] > 0
        self.pts0, self.trk0 = tuple(pts), tuple(trk)

    # -- the root --------------------------------------------------------------------------

    def values(self, actions: Sequence[Action] | None = None) -> list[float]:
        """The exact value of each of the acting seat's legal actions (in that order)."""
        deal = self.deal
        seat = deal.to_act[0]
        acts = deal.legal_actions(seat) if actions is None else actions
        hands = list(deal.hands)
        if deal.decision == "lead":
            return [self._after_lead(hands, seat, a.cards, self.pts0, self.trk0) for a in acts]
        out = []
        trick_cards = 0
        for p in deal.trick:
            trick_cards |= p.cards
        responders = list(deal.responders[deal.resp_i :])
        for a in acts:
            h = hands[:]
            h[seat] &= ~a.cards
            win_seat, win_mask = deal.win_seat, deal.win_mask
            if a.kind is ActionKind.BEAT:
                win_seat, win_mask = seat, a.cards
            out.append(
                self._respond(
                    h,
                    responders[1:],
                    deal.lead_mask,
                    win_seat,
                    win_mask,
                    trick_cards | a.cards,
                    self.pts0,
                    self.trk0,
                )
            )
        return out

    # -- the tree --------------------------------------------------------------------------

    def _count(self) -> None:
        self.nodes += 1
        if self.nodes > self.max_nodes or (
            self.nodes & 255 == 0 and self.stop is not None and self.stop()
        ):
            raise Exhausted

    @staticmethod
    def _best(
        mine: bool, children: Iterable[Callable[[float, float], float]], alpha: float, beta: float
    ) -> float:
        """The best child for the seat to play (``mine``: the solver's side maximizes), each
        searched within the window narrowed by the ones before; stops at a cut-off."""
        best = -INF if mine else INF
        for child in children:
            v = child(alpha, beta)
            if mine:
                if v > best:
                    best = v
                    alpha = max(alpha, v)
            elif v < best:
                best = v
                beta = min(beta, v)
            if alpha >= beta:
                break
        return best

    def _lead(
        self,
        hands: list[int],
        leader: int,
        pts: tuple[int, ...],
        trk: tuple[int, ...],
        alpha: float = -INF,
        beta: float = INF,
    ) -> float:
        """The value with ``leader`` (or the next seat holding cards) to lead, exact when it
        lies inside (alpha, beta), else a bound on the side it fell (alpha-beta)."""
        if hands[leader] == 0:
            for s in self.order[leader]:
                if hands[s]:
                    leader = s
                    break
            else:
                return self.reward(pts, trk)
        key = (tuple(hands), leader, pts, trk)
        memo = self.memo
        lo, hi = memo.get(key, (-INF, INF))
        if lo >= beta or lo == hi:
            return lo
        if hi <= alpha:
            return hi
        a0, b0 = alpha, beta
        alpha, beta = max(alpha, lo), min(beta, hi)
        self._count()
        cap = 4
        for s in self.order[leader]:
            n = hands[s].bit_count()
            if 0 < n < cap:
                cap = n
        children = (
            partial(self._after_lead, hands, leader, a.cards, pts, trk)
            for a in self.tables.leads(hands[leader], cap)
        )
        best = self._best(self.side_of[leader] == self.side, children, alpha, beta)
        if best <= a0:
            memo[key] = (lo, min(hi, best))
        elif best >= b0:
            memo[key] = (max(lo, best), hi)
        else:
            memo[key] = (best, best)
        return best

    def _after_lead(
        self,
        hands: list[int],
        leader: int,
        cards: int,
        pts: tuple[int, ...],
        trk: tuple[int, ...],
        alpha: float = -INF,
        beta: float = INF,
    ) -> float:
        h = hands[:]
        h[leader] &= ~cards
        responders = [s for s in self.order[leader] if h[s]]
        return self._respond(h, responders, cards, leader, cards, cards, pts, trk, alpha, beta)

    def _respond(
        self,
        hands: list[int],
        responders: list[int],
        lead_mask: int,
        win_seat: int,
        win_mask: int,
        trick_cards: int,
        pts: tuple[int, ...],
        trk: tuple[int, ...],
        alpha: float = -INF,
        beta: float = INF,
    ) -> float:
        if not responders:
            side = self.side_of[win_seat]
            p = list(pts)
            p[side] += points(trick_cards)
            if not trk[side]:
                t = list(trk)
                t[side] = 1
                trk = tuple(t)
            return self._lead(hands, win_seat, tuple(p), trk, alpha, beta)
        self._count()
        seat = responders[0]
        rest = responders[1:]
        target = lead_mask if self.original else win_mask
        children = (
            partial(
                self._answer,
                hands,
                seat,
                a,
                rest,
                lead_mask,
                win_seat,
                win_mask,
                trick_cards,
                pts,
                trk,
            )
            for a in self.tables.responses(hands[seat], target)
        )
        return self._best(self.side_of[seat] == self.side, children, alpha, beta)

    def _answer(
        self,
        hands: list[int],
        seat: int,
        a: Action,
        rest: list[int],
        lead_mask: int,
        win_seat: int,
        win_mask: int,
        trick_cards: int,
        pts: tuple[int, ...],
        trk: tuple[int, ...],
        alpha: float,
        beta: float,
    ) -> float:
        """The value after ``seat`` answers the trick with ``a``."""
        h = hands[:]
        h[seat] &= ~a.cards
        if a.kind is ActionKind.BEAT:
            win_seat, win_mask = seat, a.cards
        return self._respond(
            h, rest, lead_mask, win_seat, win_mask, trick_cards | a.cards, pts, trk, alpha, beta
        )
