"""A match: deals one after another until the match-end rule says stop.

:class:`Scoreboard` holds the penalty arithmetic across deals (eggs, eliminations, fixed
deals) and is usable on its own; :class:`Match` drives real deals from a seed.
:class:`MatchOutcome` is where a match stands: its result once it is over, with the ranks a
rating update takes.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from kozel.engine.actions import Action, ActionKind, Combo
from kozel.engine.deal import Deal
from kozel.engine.errors import ErrorCode, IllegalAction
from kozel.engine.rules import Eggs, Elimination, FirstLead, Ruleset, TrumpMode
from kozel.engine.scoring import deal_penalties, is_eggs, split_pot
from kozel.engine.shuffle import first_dealer, seed_from, shuffled_deck, trump_index


class EndReason(StrEnum):
    """Why a match ended."""

    LIMIT = "limit"  # a side reached the penalty limit
    FIXED_DEALS = "fixed_deals"  # the set number of deals was played
    FORFEIT = "forfeit"  # sides forfeited until one was left


def standing_ranks(standing: Sequence[int], forfeited: Collection[int] = ()) -> tuple[int, ...]:
    """Rank per side (1 is best) from a standing where lower is better: forfeited sides after
    every other, equal standings share a rank (the next rank skips: 1, 1, 3)."""
    worst = max(standing, default=0) + 1
    keyed = [worst + 1 if side in forfeited else score for side, score in enumerate(standing)]
    return tuple(1 + sum(1 for other in keyed if other < mine) for mine in keyed)


@dataclass(frozen=True, slots=True)
class MatchOutcome:
    """Where a match stands, and its result once it is over.

    Sides are the scoring units: a seat in the money game and in free-for-all, a team of two
    in the four-player penalty game. Exactly one of ``penalty_totals`` (penalty game, per
    side) and ``chips`` (money game, per seat) is filled.
    """

    money: bool
    penalty_totals: tuple[int, ...] = ()
    chips: tuple[int, ...] = ()
    eliminated: tuple[int, ...] = ()  # sides out: past the limit or forfeited, ascending
    forfeited: tuple[int, ...] = ()  # sides that forfeited, ascending
    reason: EndReason | None = None  # None while the match goes on
    winner: int | None = None  # the winning side; None while playing or without a winner

    @property
    def over(self) -> bool:
        return self.reason is not None

    @property
    def draw(self) -> bool:
        """Over without a winner."""
        return self.over and self.winner is None

    @property
    def standing(self) -> tuple[int, ...]:
        """Per side, lower is better: the penalty totals, or minus the chips."""
        return tuple(-c for c in self.chips) if self.money else self.penalty_totals

    @property
    def ranks(self) -> tuple[int, ...]:
        """Per side, 1 is best, by :attr:`standing` (see :func:`standing_ranks`)."""
        return standing_ranks(self.standing, self.forfeited)


@dataclass(slots=True)
class Scoreboard:
    """Penalty totals per side across deals, with eggs doubling and eliminations (rule 10)."""

    rules: Ruleset
    players: int
    totals: list[int] = field(default_factory=list)
    eliminated: list[int] = field(default_factory=list)
    deals: int = 0
    double_next: bool = False
    over: bool = False
    winner: int | None = None
    reason: EndReason | None = None

    def __post_init__(self) -> None:
        if not self.totals:  # a new board; a clone passes its copy
            self.totals = [0] * (max(self.rules.side_of(self.players)) + 1)

    @property
    def n_sides(self) -> int:
        return len(self.totals)

    def clone(self) -> Scoreboard:
        """An independent copy."""
        return Scoreboard(
            self.rules,
            self.players,
            self.totals[:],
            self.eliminated[:],
            self.deals,
            self.double_next,
            self.over,
            self.winner,
            self.reason,
        )

    @property
    def alive(self) -> list[int]:
        """Sides not eliminated."""
        return [s for s in range(self.n_sides) if s not in self.eliminated]

    def active_players(self) -> int:
        side_of = self.rules.side_of(self.players)
        return sum(1 for s in side_of if s not in self.eliminated)

    def record(self, pts: Sequence[int | None], tricks: Sequence[int | None]) -> list[int | None]:
        """Score one deal given per-side points and tricks (None for eliminated sides).

        Returns the penalties added per side (None for sides not playing).
        """
        if self.over:
            raise ValueError("the match is over")
        alive = self.alive
        entry = self.rules.scoring_for(self.active_players())
        a_pts = [int(pts[s] or 0) for s in alive]
        raw = deal_penalties(entry, a_pts, [int(tricks[s] or 0) for s in alive])
        factor = 2 if self.double_next else 1
        self.double_next = self.rules.eggs == Eggs.DOUBLE_NEXT and is_eggs(a_pts)
        added: list[int | None] = [None] * self.n_sides
        for s, p in zip(alive, raw):
            added[s] = p * factor
            self.totals[s] += p * factor
        self.deals += 1
        if self.rules.fixed_deals is not None:
            if self.deals >= self.rules.fixed_deals:
                self._finish(self.alive, EndReason.FIXED_DEALS)
            return added
        crossed = [s for s in alive if self.totals[s] >= self.rules.limit]
        if crossed:
            self.eliminated = sorted(self.eliminated + crossed)
            rest = self.alive
            if self.rules.elimination == Elimination.FIRST_OUT or len(rest) <= 1:
                self._finish(rest, EndReason.LIMIT)
        return added

    def outcome(self, forfeited: Collection[int] = ()) -> MatchOutcome:
        """The penalty standing so far (``forfeited``: the sides that forfeited)."""
        return MatchOutcome(
            money=False,
            penalty_totals=tuple(self.totals),
            eliminated=tuple(sorted(self.eliminated)),
            forfeited=tuple(sorted(forfeited)),
            reason=self.reason,
            winner=self.winner,
        )

    def forfeit(self, side: int) -> None:
        """Eliminate a side that forfeited; the match ends when one side is left."""
        if self.over or side in self.eliminated:
            return
        self.eliminated = sorted(self.eliminated + [side])
        if len(self.alive) <= 1 or self.rules.elimination == Elimination.FIRST_OUT:
            self._finish(self.alive, EndReason.FORFEIT)

    def _finish(self, candidates: list[int], reason: EndReason) -> None:
        self.over = True
        self.reason = reason
        if not candidates:
            self.winner = None
            return
        best = min(self.totals[s] for s in candidates)
        top = [s for s in candidates if self.totals[s] == best]
        self.winner = top[0] if len(top) == 1 else None


@dataclass(frozen=True, slots=True)
class DealRecord:
    """What a finished (or voided) deal left behind."""

    index: int
    dealer: int
    deck: tuple[int, ...]
    trump_index: int | None
    first_leader: int
    active: tuple[int, ...]  # the seats dealt in
    actions: tuple[tuple[int, Action], ...]
    card_points: tuple[int | None, ...]
    tricks: tuple[int | None, ...]
    penalties: tuple[int | None, ...] | None  # as added to the totals (eggs doubling included)
    pot_winners: tuple[int, ...]
    voided: bool = False


class Match:
    """A whole match from a seed. ``match.deal`` is the deal in play."""

    def __init__(
        self, rules: Ruleset, players: int, seed: bytes | str | int, *, _deal: Deal | None = None
    ) -> None:
        """``_deal`` is for :meth:`clone` only (the deal in play instead of a new one)."""
        rules.check_players(players)
        self.rules = rules
        self.players = players
        self.seed = seed_from(seed)
        self.side_of = rules.side_of(players)
        self.board = Scoreboard(rules, players)
        self.chips = [0] * players
        self.pot = 0
        self.records: list[DealRecord] = []
        self.forfeited: list[int] = []  # sides that forfeited, in order
        self.dealer = first_dealer(self.seed, players)
        self._prev_last_winner: int | None = None
        self.deal: Deal = self._new_deal() if _deal is None else _deal

    # -- queries -------------------------------------------------------------------------------

    @property
    def over(self) -> bool:
        return self.board.over

    @property
    def winner(self) -> int | None:
        """The winning side (a seat in the money game), or None while playing or on a draw."""
        if not self.over:
            return None
        if self.rules.is_money:  # a seat that forfeited cannot win
            alive = self.active_seats
            best = max(self.chips[s] for s in alive)
            top = [s for s in alive if self.chips[s] == best]
            return top[0] if len(top) == 1 else None
        return self.board.winner

    def outcome(self) -> MatchOutcome:
        """Where the match stands (its result once :attr:`over`)."""
        if not self.rules.is_money:
            return self.board.outcome(self.forfeited)
        return MatchOutcome(
            money=True,
            chips=tuple(self.chips),
            eliminated=tuple(sorted(self.board.eliminated)),
            forfeited=tuple(sorted(self.forfeited)),
            reason=self.board.reason,
            winner=self.winner,
        )

    @property
    def active_seats(self) -> list[int]:
        return [s for s in range(self.players) if self.side_of[s] not in self.board.eliminated]

    @property
    def deal_index(self) -> int:
        return len(self.records)

    def clone(self) -> Match:
        """An independent copy (for search): acting on either never changes the other. The
        finished deals' records are immutable and shared."""
        match = Match(self.rules, self.players, self.seed, _deal=self.deal.clone())
        match.board = self.board.clone()
        match.chips = self.chips[:]
        match.pot = self.pot
        match.records = self.records[:]
        match.forfeited = self.forfeited[:]
        match.dealer = self.dealer
        match._prev_last_winner = self._prev_last_winner
        return match

    # -- play ----------------------------------------------------------------------------------

    def apply(self, seat: int, action: Action) -> Action:
        """Apply an action to the current deal (starting the next deal when this one ends);
        returns the action as applied."""
        if self.over:
            raise IllegalAction(ErrorCode.WRONG_DECISION, "the match is over")
        applied = self.deal.apply(seat, action)
        if self.deal.over:
            self._end_deal()
        return applied

    def play(
        self,
        seat: int,
        kind: ActionKind | str,
        cards: Sequence[int | str] = (),
        combo: Combo | str | None = None,
    ) -> Action:
        """Like :meth:`apply`, for an action given as a card list (see :meth:`Deal.play`)."""
        if self.over:
            raise IllegalAction(ErrorCode.WRONG_DECISION, "the match is over")
        action = self.deal.play(seat, kind, cards, combo)
        if self.deal.over:
            self._end_deal()
        return action

    def forfeit(self, *seats: int) -> None:
        """The sides of ``seats`` forfeit together: they are eliminated and the current deal
        is voided once. Seats whose side is already out change nothing."""
        for seat in seats:
            if not 0 <= seat < self.players:
                raise ValueError(f"seat {seat} is not at this table of {self.players}")
        sides = sorted({self.side_of[s] for s in seats} - set(self.board.eliminated))
        if self.over or not sides:
            return
        self.forfeited.extend(sides)
        self._record(self.deal, voided=True)
        for side in sides:
            self.board.forfeit(side)
        if not self.over:
            self._advance_dealer()
            self.deal = self._new_deal()

    # -- internals -----------------------------------------------------------------------------

    def _new_deal(self) -> Deal:
        index = len(self.records)
        active = self.active_seats
        deck = shuffled_deck(self.seed, index, self.rules.deck)
        tidx = None
        if self.rules.trump_mode == TrumpMode.RANDOM_MIDDLE:
            tidx = trump_index(self.seed, index, len(deck) - 4 * len(active))
        leader = None
        prev = self._prev_last_winner
        if self.rules.first_lead == FirstLead.PREV_LAST_TRICK and prev is not None:
            leader = next(
                s for k in range(self.players) if (s := (prev + k) % self.players) in active
            )
        return Deal.start(
            self.rules,
            self.players,
            deck,
            self.dealer,
            active=active,
            trump_index=tidx,
            first_leader=leader,
        )

    def _record(
        self, deal: Deal, voided: bool = False, penalties: list[int | None] | None = None
    ) -> DealRecord:
        pen = None if voided else penalties
        rec = DealRecord(
            index=len(self.records),
            dealer=deal.dealer,
            deck=deal.deck,
            trump_index=deal.trump_index,
            first_leader=deal.first_leader,
            active=deal.active,
            actions=tuple(deal.history),
            card_points=tuple(deal.card_points()),
            tricks=tuple(deal.side_tricks()),
            penalties=None if pen is None else tuple(pen),
            pot_winners=tuple(deal.pot_winners),
            voided=voided,
        )
        self.records.append(rec)
        return rec

    def _end_deal(self) -> None:
        deal = self.deal
        self._prev_last_winner = deal.last_trick_winner
        if self.rules.is_money:
            self._record(deal)
            self._settle_pot(deal)
        else:
            pts: list[int | None] = [None] * self.board.n_sides
            trk: list[int | None] = [None] * self.board.n_sides
            for side, (p, t) in enumerate(zip(deal.card_points(), deal.side_tricks())):
                if side not in self.board.eliminated:
                    pts[side], trk[side] = p, t
            self._record(deal, penalties=self.board.record(pts, trk))
        if not self.over:
            self._advance_dealer()
            self.deal = self._new_deal()

    def _settle_pot(self, deal: Deal) -> None:
        stake = self.rules.stake
        for s in deal.active:
            self.chips[s] -= stake
        self.pot += stake * len(deal.active)
        share, self.pot = split_pot(self.pot, len(deal.pot_winners))
        for s in deal.pot_winners:
            self.chips[s] += share
        self.board.deals += 1
        if self.board.deals >= (self.rules.fixed_deals or 0):
            self.board.over = True
            self.board.reason = EndReason.FIXED_DEALS

    def _advance_dealer(self) -> None:
        active = self.active_seats
        self.dealer = next(
            s
            for k in range(1, self.players + 1)
            if (s := (self.dealer + k) % self.players) in active
        )
