"""The open-hand ("double dummy") solver: with every hand and the talon's order known, the
exact value of every legal action at any decision of a deal.

A value is the card points a side takes from the decision to the end of the deal (the cards
of the trick on the table included) when every seat plays its best. With two sides (two
players, or four in two teams; also three players once one is eliminated) the game is
zero-sum: one side's gain is the other's loss, and the search is a two-sided alpha-beta.
With three sides the value of a seat is *paranoid*: what it takes if the two others play
together against it (a lower bound on what it can make sure of).

Every knob of the penalty game is followed: the legal leads and responses come from the
engine's own tables (lead sizes and the cap, the shokha, ``beat_target``), draws follow
``draw_mode`` including the uneven draws when the talon runs out, and declaration windows
(``combos``, ``special_effect``, ``midtrick_interrupt``) open exactly where the engine opens
them. A window is a sealed, simultaneous choice; its value is that of the matrix game between
the sides, which here always has a pure saddle point (a declaration of higher priority
overrides every one of lower priority whatever they chose), so it equals the perfect
information game in which the holders answer in increasing order of priority, each knowing
the answers before. Face-down discards change nothing with the cards open. The money game
(a Bura ends the deal, and the pot is not additive) is refused with :class:`Unsupported`.

The search: alpha-beta with a transposition table at trick boundaries (card points are
additive, so a boundary's value does not depend on how it was reached), keyed by the talon
position, the leader and the hands by relative rank (:meth:`Search.key`), holding lower and
upper bounds and the best lead; moves ordered by a cheap guess; no discard that a seat
playing alone could better by keeping a higher card of the suit (:func:`_dominated`);
MTD(f) at the root (null-window probes, each narrowing the value's interval). A node budget
stops it: the values not finished are reported as intervals (:attr:`ActionValue.low`,
:attr:`ActionValue.high`), never as a guess. Only a search given a *horizon* (a talon
position past which positions are estimated, :meth:`Search.estimate`) guesses, and says so
(:attr:`Solution.estimated`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from kozel.engine.actions import Action, ActionKind, Combo, Decision
from kozel.engine.cards import ACES, HALF_POINTS, TENS
from kozel.engine.deal import Deal
from kozel.engine.rules import BeatTarget, Combos, DrawMode, SpecialEffect
from kozel.engine.tables import Tables, combo_memo

_BEAT: Final = ActionKind.BEAT
_DECLARE_K: Final = ActionKind.DECLARE
_MOSCOW: Final = Combo.MOSCOW
_BIG: Final = 1 << 30
_NO_MOVE: Final = 255
MAX_ENTRIES: Final = 1_000_000
"""The most positions a search keeps (about 130 bytes each): past it the table starts again."""
_ACES_TENS_SHOKHA: Final = ACES | TENS | 1


def _relative_row(pattern: int) -> list[int]:
    """For a suit's cards in play (a 9-bit ``pattern``), each subset's cards as ranks among
    them: bit i set for the i-th lowest card of ``pattern`` in the subset."""
    row = [0] * 512
    ranks = [r for r in range(9) if pattern >> r & 1]
    for sub in range(1 << len(ranks)):
        m = 0
        for i, r in enumerate(ranks):
            if sub >> i & 1:
                m |= 1 << r
        row[m] = sub
    return row


_RELATIVE: Final[list[list[int]]] = [_relative_row(p) for p in range(512)]


def _may_be_combo(hand: int) -> bool:
    """A cheap test passed by every combination hand (four cards: aces, tens and the shokha,
    or three or four of one suit), so that most hands skip the table."""
    if hand & ~_ACES_TENS_SHOKHA == 0:
        return True
    return (
        (hand & 0x1FF).bit_count() >= 3
        or (hand & 0x3FE00).bit_count() >= 3
        or (hand & 0x7FC0000).bit_count() >= 3
        or (hand & 0xFF8000000).bit_count() >= 3
    )


_STRENGTHS: Final[dict[tuple[int, bool], list[int]]] = {}


def _strengths(trump: int, shokha: bool) -> list[int]:
    """How much keeping each card is worth (a guess, for ordering moves and estimates), summed
    by suit: index ``suit * 512 + the suit's 9-bit pattern``."""
    found = _STRENGTHS.get((trump, shokha))
    if found is None:
        single = [
            40
            if c == 0 and shokha
            else (16 + 2 * (c % 9) if c // 9 == trump else c % 9) + _points(1 << c)
            for c in range(36)
        ]
        found = [sum(single[9 * (i >> 9) + r] for r in range(9) if i >> r & 1) for i in range(2048)]
        _STRENGTHS[trump, shokha] = found
    return found


def _dominated(discard: int, hand: int) -> bool:
    """Whether a discard gives away a card while keeping a lower one of the same suit. For a
    seat that plays alone such a discard is never better than the one that swaps the two:
    the higher card does whatever the lower one could (it beats all the lower one beats, and
    fewer cards beat it), gives away no more points now, and if it is taken later its points
    go where the lower one's would have gone (see docs/analysis.md). A seat with a partner
    may not want the stronger card (the partner could no longer take the trick over)."""
    for suit in range(4):
        mask = 0x1FF << 9 * suit
        part = discard & mask
        if part:
            kept = hand & mask & ~part
            if kept & ((1 << part.bit_length()) - 1):  # a kept card below a given one
                return True
    return False


class Unsupported(ValueError):
    """A position the solver does not cover (the money game); the message says why."""


class _Out(Exception):
    """The node budget is spent."""


def _points(mask: int) -> int:
    return HALF_POINTS[mask & 0x3FFFF] + HALF_POINTS[mask >> 18 & 0x3FFFF]


@dataclass(frozen=True, slots=True)
class ActionValue:
    """One legal action's value for the acting seat's side: exact when ``low == high``, else
    the interval the search had proved when its budget ran out."""

    action: Action
    low: int
    high: int

    @property
    def exact(self) -> bool:
        return self.low == self.high

    @property
    def value(self) -> float:
        """The value, or the middle of its interval when it is a bound."""
        return (self.low + self.high) / 2


@dataclass(frozen=True, slots=True)
class Solution:
    """The values of the legal actions of ``seat`` at one decision (in the order of
    ``Deal.legal_actions``), for ``seat``'s side; ``nodes`` searched."""

    seat: int
    values: tuple[ActionValue, ...]
    nodes: int
    paranoid: bool  # three sides: each against the two others
    estimated: bool = False  # past a horizon, positions were guessed at: values are estimates

    @property
    def exact(self) -> bool:
        return all(v.exact for v in self.values)

    @property
    def best(self) -> int:
        """The highest value (the lower end of a bound)."""
        return max(v.low for v in self.values)


def check_supported(deal: Deal) -> None:
    """Raise :class:`Unsupported` for a deal the solver does not cover."""
    if deal.rules.is_money:
        raise Unsupported(
            "the money game is not analysed: a Bura ends the deal at once and the pot goes to "
            "the top total, so card points are not the value being played for"
        )


class Trick:
    """What a trick in play fixes: the hands before it was led (``start``: an interruption
    returns the cards played), its leader, who answers in order, the lead's cards and
    whether a declared combination was led. No responders: a lead to come."""

    __slots__ = ("start", "leader", "responders", "lead_mask", "combo")

    def __init__(
        self,
        start: list[int],
        leader: int,
        responders: tuple[int, ...],
        lead_mask: int,
        combo: bool,
    ) -> None:
        self.start = start
        self.leader = leader
        self.responders = responders
        self.lead_mask = lead_mask
        self.combo = combo


class Search:
    """The search of one deal (its talon and rules) for one maximizing side; the table of
    values it keeps is valid for every position of that deal, so one :class:`Search` serves
    every decision of a deal (:class:`OpenHand` keeps one per maximizing side)."""

    def __init__(self, deal: Deal, mine: tuple[bool, ...], horizon: int = _BIG) -> None:
        rules = deal.rules
        self.horizon = horizon  # a talon position: see estimate()
        self.tables: Tables = deal.tables
        self.mine = mine  # by seat: whether the seat plays for the maximizing side
        self.active = deal.active
        self.players = deal.players
        bits = [1 << c for c in deal.talon]
        self.bits = bits
        self.n_bits = len(bits)
        # points of the talon from each position on
        suffix = [0] * (len(bits) + 1)
        for i in range(len(bits) - 1, -1, -1):
            suffix[i] = suffix[i + 1] + _points(bits[i])
        self.talon_points = suffix
        live = [0] * (len(bits) + 1)  # the talon's cards from each position on
        for i in range(len(bits) - 1, -1, -1):
            live[i] = live[i + 1] | bits[i]
        self.talon_live = live
        self.shokha_bit = 1 if rules.shokha else 0
        self.suit_strengths = _strengths(deal.trump, rules.shokha)
        self.order = tuple(
            tuple(s2 for k in range(deal.players) if (s2 := (s + k) % deal.players) in deal.active)
            if s in deal.active
            else ()
            for s in range(deal.players)
        )
        self.others = tuple(o[1:] for o in self.order)
        # by seat: no active seat plays with it in this search (a partner, or with three sides
        # the other seat against the maximizing one): its discards can be pruned (_dominated)
        self.alone = tuple(
            sum(mine[o] == mine[s] for o in deal.active) == 1 for s in range(deal.players)
        )
        self.original = rules.beat_target == BeatTarget.ORIGINAL_LEAD
        self.round_robin = rules.draw_mode == DrawMode.ROUND_ROBIN
        self.combos_on = rules.combos != Combos.NONE
        self.auto_win = rules.special_effect == SpecialEffect.AUTO_WIN
        self.interrupts = rules.midtrick_interrupt and self.combos_on
        self.combo_table: dict[int, Combo] = combo_memo(rules)
        self.tt: dict[int, int] = {}  # key -> low << 16 | high << 8 | best lead index
        self.nodes = 0
        self.limit = _BIG
        self.windows = [0, 0]  # windows searched, at leads and mid-trick (a statistic)
        self.estimates = 0  # positions beyond the horizon guessed at

    # -- keys and draws ------------------------------------------------------------------------

    def key(self, hands: list[int], pos: int, leader: int) -> int:
        """The position's key by relative ranks: per suit, which of its point cards are still
        in play (hands and talon), how many of its zero-point cards, and each hand's cards as
        ranks among those in play. Two positions with one key are the same game up to renaming
        cards of a suit in rank order, with equal points (see the module docstring)."""
        live = self.talon_live[pos]
        for s in self.active:
            live |= hands[s]
        k = pos | leader << 6
        shift = 8
        shokha = self.shokha_bit
        if shokha:
            for s in self.active:
                if hands[s] & 1:
                    k |= (s + 1) << shift
            shift += 3
            live &= ~1
        rel = _RELATIVE
        for suit in range(4):
            base = 9 * suit
            pattern = live >> base & 0x1FF
            k |= (pattern >> 4 | (pattern & 0xF).bit_count() << 5) << shift
            shift += 8
            row = rel[pattern]
            width = pattern.bit_count()
            for s in self.active:
                k |= row[hands[s] >> base & pattern] << shift
                shift += width
        return k

    def draw(self, hands: list[int], pos: int, first: int) -> int:
        """Fill ``hands`` from the talon as the engine's ``Deal._draw`` does; the new position."""
        bits = self.bits
        end = self.n_bits
        order = self.order[first]
        n = len(order)
        k = 4 - hands[first].bit_count()
        if pos + k * n <= end:
            if k == 1:
                for s in order:
                    hands[s] |= bits[pos]
                    pos += 1
            elif not self.round_robin:
                for s in order:
                    for i in range(pos, pos + k):
                        hands[s] |= bits[i]
                    pos += k
            else:
                for j in range(n):
                    s = order[j]
                    for i in range(pos + j, pos + k * n, n):
                        hands[s] |= bits[i]
                pos += k * n
            return pos
        need = [4 - hands[s].bit_count() for s in order]
        drawn = [0] * len(hands)
        if self.round_robin:
            for r in range(max(need)):
                for j in range(n):
                    if need[j] > r and pos < end:
                        drawn[order[j]] |= bits[pos]
                        pos += 1
        else:
            for j in range(n):
                take = min(need[j], end - pos)
                for i in range(pos, pos + take):
                    drawn[order[j]] |= bits[i]
                pos += take
        for s in order:
            hands[s] |= drawn[s]
        return pos

    def count(self) -> None:
        self.nodes += 1
        if self.nodes > self.limit:
            raise _Out

    def estimate(self, hands: list[int], rem: int) -> int:
        """A guess at a position beyond the horizon: the points left, shared in proportion to
        the strength of the hands (for searches cut short on purpose; never exact)."""
        self.estimates += 1
        ours = theirs = 1
        for s in self.active:
            if self.mine[s]:
                ours += self.strength(hands[s])
            else:
                theirs += self.strength(hands[s])
        return rem * ours // (ours + theirs)

    # -- move ordering -------------------------------------------------------------------------

    def strength(self, mask: int) -> int:
        """How much the cards of ``mask`` are worth keeping (a guess, for ordering only)."""
        st = self.suit_strengths
        return (
            st[mask & 0x1FF]
            + st[512 | mask >> 9 & 0x1FF]
            + st[1024 | mask >> 18 & 0x1FF]
            + st[1536 | mask >> 27 & 0x1FF]
        )

    def lead_order(
        self, moves: tuple[Action, ...], hands: list[int], leader: int, first: int
    ) -> list[int]:
        """The leads to try, likely best first: the table's best, then the leads the next
        seat cannot beat by their points, then the others, cheapest first."""
        n = len(moves)
        nxt = self.others[leader][0]
        opp = hands[nxt]
        tables = self.tables
        beaten_by = tables.beaten_by
        scored: list[int] = []  # (-score) * 64 + index: sorted as plain ints
        for i in range(n):
            if i == first:
                continue
            m = moves[i][1]
            if m & (m - 1) == 0:
                safe = not opp & beaten_by[m.bit_length() - 1]
            else:
                answers = tables.responses(opp, m) if opp.bit_count() >= m.bit_count() else ()
                safe = not answers or answers[0][0] is not _BEAT
            p = _points(m)
            score = 2 * p + 8 if safe else -2 * p - self.strength(m)
            scored.append((1000 - score) << 6 | i)
        scored.sort()
        out = [k & 63 for k in scored]
        if first < n:
            out.insert(0, first)
        return out

    def response_order(self, moves: tuple[Action, ...], cards: int, hand: int) -> list[Action]:
        """The answers to try, likely best first: beats that take points cheaply, discards
        that give little away. With ``hand`` (the answering seat plays alone, not -1), the
        discards :func:`_dominated` by another are left out."""
        trick = _points(cards)
        scored: list[int] = []  # (-score) * 64 + index: sorted as plain ints
        plain = ~self.shokha_bit
        for i in range(len(moves)):
            a = moves[i]
            m = a[1]
            if a[0] is _BEAT:
                score = 2 * (trick + _points(m)) - self.strength(m)
            elif hand >= 0 and _dominated(m & plain, hand & plain):
                continue
            else:
                score = -2 * (trick + _points(m)) - self.strength(m)
            scored.append((1000 - score) << 6 | i)
        scored.sort()
        return [moves[k & 63] for k in scored]

    # -- the tree ----------------------------------------------------------------------------

    def boundary(
        self, hands: list[int], pos: int, rem: int, leader: int, alpha: int, beta: int
    ) -> int:
        """The value with ``leader`` (or the next seat holding cards) due to lead; ``rem`` card
        points are still to be taken. Fail-soft: exact inside (alpha, beta), else a bound."""
        if rem == 0:
            return 0
        if not hands[leader]:
            for s in self.order[leader]:
                if hands[s]:
                    leader = s
                    break
            else:
                return 0
        if pos >= self.horizon and pos < self.n_bits:
            return self.estimate(hands, rem)
        self.count()
        key = self.key(hands, pos, leader)
        tt = self.tt
        entry = tt.get(key, -1)
        lo = 0
        hi = rem
        first = _NO_MOVE
        if entry >= 0:
            lo = entry >> 16
            hi = entry >> 8 & 255
            first = entry & 255
        if lo >= beta or lo == hi:
            return lo
        if hi <= alpha:
            return hi
        a0 = max(lo, alpha)
        b0 = min(hi, beta)
        best_i = _NO_MOVE
        if self.combos_on and self.window_due(hands, hands):
            t = Trick(hands, leader, (), 0, False)
            best = self.window(hands, t, pos, rem, 0, leader, 0, 0, a0, b0)
        else:
            best, best_i = self.leads(hands, pos, rem, leader, first, a0, b0)
        if best <= a0:
            hi = min(hi, best)
        elif best >= b0:
            lo = max(lo, best)
        else:
            lo = hi = best
        if best_i == _NO_MOVE:
            best_i = first
        if len(tt) >= MAX_ENTRIES and key not in tt:
            tt.clear()  # the memory stays bounded; what is lost is found again
        tt[key] = lo << 16 | hi << 8 | best_i
        return best

    def leads(
        self, hands: list[int], pos: int, rem: int, leader: int, first: int, alpha: int, beta: int
    ) -> tuple[int, int]:
        """The best lead's value (fail-soft) and its index in the legal leads."""
        cap = 4
        for s in self.others[leader]:
            n = hands[s].bit_count()
            if 0 < n < cap:
                cap = n
        moves = self.tables.leads(hands[leader], cap)
        maximize = self.mine[leader]
        best = -1 if maximize else _BIG
        best_i = _NO_MOVE
        for i in self.lead_order(moves, hands, leader, first):
            v = self.after_lead(hands, pos, rem, leader, moves[i].cards, False, alpha, beta)
            if maximize:
                if v > best:
                    best = v
                    best_i = i
                    if v > alpha:
                        alpha = v
            elif v < best:
                best = v
                best_i = i
                if v < beta:
                    beta = v
            if alpha >= beta:
                break
        return best, best_i

    def after_lead(
        self,
        hands: list[int],
        pos: int,
        rem: int,
        leader: int,
        cards: int,
        combo: bool,
        alpha: int,
        beta: int,
    ) -> int:
        h = hands[:]
        h[leader] &= ~cards
        responders = self.others[leader]
        for s in responders:
            if not h[s]:  # rare: some hold no cards
                responders = tuple(s2 for s2 in responders if h[s2])
                break
        if not responders:
            return self.finish(h, pos, rem, leader, cards, alpha, beta)
        t = Trick(hands, leader, responders, cards, combo)
        return self.answers(h, t, pos, rem, 0, leader, cards, cards, True, alpha, beta)

    def answers(
        self,
        hands: list[int],
        t: Trick,
        pos: int,
        rem: int,
        idx: int,
        win_seat: int,
        win_mask: int,
        cards: int,
        check: bool,
        alpha: int,
        beta: int,
    ) -> int:
        """The value with ``t.responders[idx]`` to answer the trick (after a mid-trick window,
        if one is due and ``check``), ``win_seat`` winning it with ``win_mask``, ``cards``
        on the table."""
        if check and self.interrupts and not t.combo and self.interrupt_due(hands, t, idx):
            return self.window(hands, t, pos, rem, idx, win_seat, win_mask, cards, alpha, beta)
        self.count()
        seat = t.responders[idx]
        moves = self.tables.responses(hands[seat], t.lead_mask if self.original else win_mask)
        maximize = self.mine[seat]
        best = -1 if maximize else _BIG
        hand = hands[seat] if self.alone[seat] else -1
        for a in self.response_order(moves, cards, hand):
            v = self.answer(hands, t, pos, rem, idx, win_seat, win_mask, cards, a, alpha, beta)
            if maximize:
                if v > best:
                    best = v
                    if v > alpha:
                        alpha = v
            elif v < best:
                best = v
                if v < beta:
                    beta = v
            if alpha >= beta:
                break
        return best

    def answer(
        self,
        hands: list[int],
        t: Trick,
        pos: int,
        rem: int,
        idx: int,
        win_seat: int,
        win_mask: int,
        cards: int,
        a: Action,
        alpha: int,
        beta: int,
    ) -> int:
        """The value after ``t.responders[idx]`` answers with ``a``."""
        seat = t.responders[idx]
        h = hands[:]
        played = a[1]
        h[seat] &= ~played
        if a[0] is _BEAT:
            win_seat = seat
            win_mask = played
        if idx + 1 == len(t.responders):
            return self.finish(h, pos, rem, win_seat, cards | played, alpha, beta)
        return self.answers(
            h, t, pos, rem, idx + 1, win_seat, win_mask, cards | played, True, alpha, beta
        )

    def finish(
        self, hands: list[int], pos: int, rem: int, winner: int, cards: int, alpha: int, beta: int
    ) -> int:
        """The trick's cards go to ``winner``, the hands are filled, ``winner`` leads."""
        p = _points(cards)
        gain = p if self.mine[winner] else 0
        if pos < self.n_bits:
            pos = self.draw(hands, pos, winner)
        return gain + self.boundary(hands, pos, rem - p, winner, alpha - gain, beta - gain)

    # -- declaration windows -------------------------------------------------------------------

    def window_due(self, hands: list[int], full: list[int]) -> bool:
        """Whether a window opens: a hand is a combination and every active hand (``full``:
        with the trick in play returned) holds at least four cards."""
        table = self.combo_table
        holder = False
        for s in self.active:
            if full[s].bit_count() < 4:
                return False
            if not holder and _may_be_combo(hands[s]) and hands[s] in table:
                holder = True
        return holder

    def interrupt_due(self, hands: list[int], t: Trick, idx: int) -> bool:
        if not self.window_due(t.start, t.start):
            return False
        table = self.combo_table
        return any(hands[s] in table for s in t.responders[idx:])

    def holders(
        self, hands: list[int], candidates: tuple[int, ...], ref: int
    ) -> list[tuple[int, Combo]]:
        """The seats of ``candidates`` holding a combination, highest priority first: Moscow
        over Molodka, then fewer seats clockwise from ``ref``."""
        table = self.combo_table
        order = self.order[ref]
        found = [(s, table[hands[s]]) for s in candidates if hands[s] in table]
        found.sort(key=lambda sc: (sc[1] is not _MOSCOW, order.index(sc[0])))
        return found

    def window(
        self,
        hands: list[int],
        t: Trick,
        pos: int,
        rem: int,
        idx: int,
        win_seat: int,
        win_mask: int,
        cards: int,
        alpha: int,
        beta: int,
    ) -> int:
        """A window's value: the holders answer in increasing priority, each the best for its
        side of declaring (its combination wins the window) and of what the lower ones make
        of it (see the module docstring). ``t`` is the trick in play (mid-trick, before
        ``t.responders[idx]`` plays) or, with no responders, the lead to come."""
        self.count()
        mid = len(t.responders) > 0
        self.windows[mid] += 1
        candidates = t.responders[idx:] if mid else self.active
        found = self.holders(hands, candidates, t.leader)
        return self.chain(found, 0, hands, t, pos, rem, idx, win_seat, win_mask, cards, alpha,
                          beta)  # fmt: skip

    def chain(
        self,
        found: list[tuple[int, Combo]],
        i: int,
        hands: list[int],
        t: Trick,
        pos: int,
        rem: int,
        idx: int,
        win_seat: int,
        win_mask: int,
        cards: int,
        alpha: int,
        beta: int,
    ) -> int:
        if i == len(found):  # nobody declares
            if t.responders:
                return self.answers(
                    hands, t, pos, rem, idx, win_seat, win_mask, cards, False, alpha, beta
                )
            return self.leads(hands, pos, rem, t.leader, _NO_MOVE, alpha, beta)[0]
        q = found[i][0]
        vq = self.declared(t.start, pos, rem, q, alpha, beta)
        if self.mine[q]:
            if vq >= beta:
                return vq
            alpha = max(alpha, vq)
        else:
            if vq <= alpha:
                return vq
            beta = min(beta, vq)
        rest = self.chain(found, i + 1, hands, t, pos, rem, idx, win_seat, win_mask, cards,
                          alpha, beta)  # fmt: skip
        return max(rest, vq) if self.mine[q] else min(rest, vq)

    def declared(
        self, hands: list[int], pos: int, rem: int, seat: int, alpha: int, beta: int
    ) -> int:
        """The value once ``seat``'s combination (its whole hand) wins a window; ``hands`` are
        the hands with any trick in play returned."""
        if self.auto_win:  # unbeatable: every other hand is discarded to it
            everything = 0
            for s in self.active:
                everything |= hands[s]
            return self.finish([0] * len(hands), pos, rem, seat, everything, alpha, beta)
        return self.after_lead(hands, pos, rem, seat, hands[seat], True, alpha, beta)


def _mine(deal: Deal, side: int) -> tuple[bool, ...]:
    return tuple(deal.side_of[s] == side for s in range(deal.players))


class OpenHand:
    """The open-hand values of one deal's decisions (see the module docstring). Keep one per
    deal: its tables of values carry over from decision to decision. ``max_nodes`` bounds the
    search of each decision (None: no bound)."""

    def __init__(
        self, deal: Deal, max_nodes: int | None = None, horizon: int | None = None
    ) -> None:
        check_supported(deal)
        self.deal = deal
        self.max_nodes = max_nodes
        # A talon position past which positions are guessed at (Search.estimate), not solved:
        # for estimates when solving to the end is too dear; None (the default) solves exactly.
        self.horizon = _BIG if horizon is None else horizon
        sides = sorted({deal.side_of[s] for s in deal.active})
        self.two_sided = len(sides) == 2
        self.first_side = sides[0]
        self._searches: dict[int, Search] = {}

    def search_for(self, side: int) -> Search:
        """The search whose maximizing side is ``side`` (two sides: one search for both)."""
        key = self.first_side if self.two_sided else side
        found = self._searches.get(key)
        if found is None:
            mine = _mine(self.deal, key)
            found = self._searches[key] = Search(self.deal, mine, self.horizon)
        return found

    def solve(self, deal: Deal, seat: int | None = None, side: int | None = None) -> Solution:
        """The values of ``seat``'s legal actions in ``deal`` (a position of the same deal;
        by default the one seat to act, or the first one asked in a window) for ``side`` (by
        default the seat's own; with three sides, another side's values are what it takes
        when the two others play against it)."""
        if deal.over:
            raise ValueError("the deal is over: there is no decision to value")
        if seat is None:
            seat = deal.to_act[0]
        if seat not in deal.to_act:
            raise ValueError(f"seat {seat} is not asked now; awaiting {list(deal.to_act)}")
        if side is None:
            side = deal.side_of[seat]
        search = self.search_for(side)
        search.nodes = 0
        search.estimates = 0
        search.limit = _BIG if self.max_nodes is None else self.max_nodes
        flip = not search.mine[self.seat_of(side)]
        root = _Root(search, deal)
        actions = deal.legal_actions(seat)
        if deal.decision is Decision.DECLARE:
            raw = root.window_values(seat, actions)
        else:
            raw = root.action_values(seat, actions)
        values = []
        for a, (low, high) in zip(actions, raw):
            if flip:  # the search's values are the other side's
                values.append(ActionValue(a, root.rem - high, root.rem - low))
            else:
                values.append(ActionValue(a, low, high))
        return Solution(seat, tuple(values), search.nodes, not self.two_sided, search.estimates > 0)

    def seat_of(self, side: int) -> int:
        """A seat of ``side`` (the search's table is by seat)."""
        return next(s for s in self.deal.active if self.deal.side_of[s] == side)


class _Root:
    """One decision: the position in the search's terms, and each action's value by MTD(f)."""

    def __init__(self, search: Search, deal: Deal) -> None:
        self.search = search
        self.deal = deal
        self.hands = list(deal.hands)
        self.pos = deal.talon_pos
        cards = 0
        start = list(deal.hands)
        for p in deal.trick:
            cards |= p.cards
            start[p.seat] |= p.cards
        self.cards = cards
        self.start = start
        rem = search.talon_points[self.pos] + _points(cards)
        for s in deal.active:
            rem += _points(deal.hands[s])
        self.rem = rem

    def action_values(self, seat: int, actions: tuple[Action, ...]) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        guess = -1
        for a in actions:
            lo, hi = self.mtd(a, guess)
            out.append((lo, hi))
            if lo == hi:
                guess = lo
        return out

    def mtd(self, a: Action, guess: int) -> tuple[int, int]:
        """MTD(f): null-window probes of the value after ``a`` until its interval closes or
        the budget is spent (then the interval proved so far)."""
        lo, hi = 0, self.rem
        g = guess if 0 <= guess <= hi else hi // 2
        try:
            while lo < hi:
                beta = g + 1 if g == lo else g
                g = self.child(a, beta - 1, beta)
                if g < beta:
                    hi = g
                else:
                    lo = g
        except _Out:
            pass
        return lo, hi

    def child(self, a: Action, alpha: int, beta: int) -> int:
        """The value after the acting seat's ``a`` (lead or response), within (alpha, beta)."""
        s, d = self.search, self.deal
        seat = d.to_act[0]
        if d.decision is Decision.LEAD:
            return s.after_lead(self.hands, self.pos, self.rem, seat, a.cards, False, alpha, beta)
        return s.answer(
            self.hands, self.trick(), self.pos, self.rem, d.resp_i, d.win_seat, d.win_mask,
            self.cards, a, alpha, beta,
        )  # fmt: skip

    def trick(self) -> Trick:
        """The trick in play, in the search's terms."""
        d = self.deal
        combo = d.trick_combo is not None
        return Trick(self.start, d.trick[0].seat, tuple(d.responders), d.lead_mask, combo)

    # -- a window at the root ----------------------------------------------------------------

    def window_values(self, seat: int, actions: tuple[Action, ...]) -> list[tuple[int, int]]:
        """Declare and pass for ``seat`` in the open window: the others answer as the
        window's saddle point has them (those who answered already, as they did)."""
        s, d = self.search, self.deal
        ref = d.trick[0].seat if d.window_mid else d.leader
        asked = tuple(sorted(set(d.pending) | set(d.answers)))
        found = [q for q, _ in s.holders(self.start, asked, ref)]
        values = {q: self.exact_of(_Declared(self, q)) for q in found}
        none = self.exact_of(self.nobody)
        plan = {q: a.kind is _DECLARE_K for q, a in d.answers.items()}
        w = none
        for q in reversed(found):  # lowest priority first: each picks against the ones below
            if q not in plan:  # the asked seat too: the ones above pick against its best
                vq, wq = sum(values[q]), sum(w)  # the middle of an interval not closed
                plan[q] = vq > wq if s.mine[q] else vq < wq
            if plan.get(q, False):
                w = values[q]
        out = []
        for a in actions:
            plan[seat] = a.kind is _DECLARE_K
            out.append(next((values[q] for q in found if plan.get(q, False)), none))
        return out

    def exact_of(self, probe: Callable[[int, int], int]) -> tuple[int, int]:
        """MTD(f) of a value given as ``probe(alpha, beta)``; the interval when out of budget."""
        lo, hi = 0, self.rem
        g = hi // 2
        try:
            while lo < hi:
                beta = g + 1 if g == lo else g
                g = probe(beta - 1, beta)
                if g < beta:
                    hi = g
                else:
                    lo = g
        except _Out:
            pass
        return lo, hi

    def nobody(self, alpha: int, beta: int) -> int:
        """The value when nobody declares in the open window."""
        s, d = self.search, self.deal
        if d.window_mid:
            return s.answers(
                self.hands, self.trick(), self.pos, self.rem, d.resp_i, d.win_seat, d.win_mask,
                self.cards, False, alpha, beta,
            )  # fmt: skip
        return s.leads(self.hands, self.pos, self.rem, d.leader, _NO_MOVE, alpha, beta)[0]


class _Declared:
    """The probe of a window's value once ``seat``'s combination wins it."""

    def __init__(self, root: _Root, seat: int) -> None:
        self.root = root
        self.seat = seat

    def __call__(self, alpha: int, beta: int) -> int:
        r = self.root
        return r.search.declared(r.start, r.pos, r.rem, self.seat, alpha, beta)
