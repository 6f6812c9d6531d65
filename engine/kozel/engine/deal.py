"""One deal as an explicit state machine: who acts, what is legal, and what each action does.

A :class:`Deal` is mutable for speed (search clones it with :meth:`Deal.clone`). An action
is either applied completely or refused with :class:`IllegalAction` and the deal untouched.
The legal-action lists come from the shared :mod:`kozel.engine.tables`; an action that is
not in the list is diagnosed by :meth:`Deal.diagnose`, which names the first rule it breaks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

from kozel.engine.actions import DECISION_OF_KIND, PASS, Action, ActionKind, Combo, Decision
from kozel.engine.cards import (
    ACES,
    CODES,
    HALF_POINTS,
    SUIT_OF,
    SUITS,
    cards_in,
    codes,
    points,
)
from kozel.engine.errors import ErrorCode, IllegalAction, SetupError
from kozel.engine.rules import (
    BeatTarget,
    Combos,
    DiscardVisibility,
    DrawMode,
    Ruleset,
    SpecialEffect,
    TrumpMode,
)
from kozel.engine.scoring import deal_penalties
from kozel.engine.tables import Tables, combo_memo, combo_of, tables_for

_NO_MOVES: Final[tuple[Action, ...]] = ()

# Enum members as module constants: looking a member up on its class (``Decision.LEAD``)
# costs more than a global lookup, and the transitions below do it on every action.
_LEAD: Final = Decision.LEAD
_RESPOND: Final = Decision.RESPOND
_DECLARE: Final = Decision.DECLARE
_NONE: Final = Decision.NONE
_K_LEAD: Final = ActionKind.LEAD
_K_BEAT: Final = ActionKind.BEAT
_K_DISCARD: Final = ActionKind.DISCARD
_K_DECLARE: Final = ActionKind.DECLARE
_K_PASS: Final = ActionKind.PASS
_BIT: Final = tuple(1 << c for c in range(36))
_new: Final = tuple.__new__  # builds a NamedTuple without the Python-level __new__ (hot paths only)


class Play(NamedTuple):
    """One seat's cards in a trick. ``kind`` is lead, beat or discard; ``forced`` marks the
    discards the referee plays for everyone under an auto-win combination."""

    seat: int
    kind: ActionKind
    cards: int
    forced: bool = False

    @property
    def face_up(self) -> bool:
        return self.kind != _K_DISCARD


class Drawn(NamedTuple):
    """Cards drawn after a trick: the mask each seat drew, by seat."""

    cards: tuple[int, ...]


class Declared(NamedTuple):
    """A combination won a declaration window; its declarer leads it next."""

    seat: int
    combo: Combo
    cards: int


class Returned(NamedTuple):
    """A mid-trick interruption returned these plays' cards to their owners."""

    plays: tuple[Play, ...]


class Trick(NamedTuple):
    """A completed trick: who led, who won, its card points, its plays in order."""

    leader: int
    winner: int
    points: int
    plays: tuple[Play, ...]
    combo: Combo | None = None


class Deal:
    """The state of one deal. Build it with :meth:`Deal.start`."""

    # fmt: off
    __slots__ = (
        "rules", "tables", "players", "active", "side_of", "n_sides", "dealer", "trump",
        "indicator", "talon", "talon_pos", "hands", "known", "phase", "leader",
        "responders", "resp_i", "lead_mask", "win_seat", "win_mask", "trick", "trick_combo",
        "pending", "answers", "window_mid", "tricks", "taken", "tricks_won", "history",
        "pot_winners", "bura", "_order", "_combos_on", "first_leader", "deck", "trump_index",
        "_money", "_auto_win", "_original_lead", "_interrupts", "_combo_memo", "_offered",
        "_offered_seat", "log", "_talon_bits", "_indicator_pos", "_round_robin", "_others",
        "_trick_cards",
    )
    # fmt: on

    rules: Ruleset
    tables: Tables
    players: int
    active: tuple[int, ...]
    side_of: tuple[int, ...]
    n_sides: int
    dealer: int
    trump: int
    indicator: int
    talon: list[int]
    talon_pos: int
    hands: list[int]
    known: list[int]
    phase: Decision
    leader: int
    responders: Sequence[int]  # a shared tuple from _others, or a list of those holding cards
    resp_i: int
    lead_mask: int
    win_seat: int
    win_mask: int
    trick: list[Play]
    trick_combo: Combo | None
    pending: set[int]
    answers: dict[int, Action]
    window_mid: bool
    tricks: list[Trick]
    taken: list[int]
    tricks_won: list[int]
    history: list[tuple[int, Action]]
    pot_winners: list[int]
    bura: bool
    _order: tuple[tuple[int, ...], ...]  # by seat: the active seats clockwise from it
    _combos_on: bool
    first_leader: int
    deck: tuple[int, ...]
    trump_index: int | None
    _money: bool
    _auto_win: bool
    _original_lead: bool
    _interrupts: bool
    _combo_memo: dict[int, Combo]  # every combination hand (see tables.combo_memo)
    _offered: tuple[Action, ...]  # the last legal list handed out, empty once stale
    _offered_seat: int  # the seat it was handed to
    log: list[Play | Trick | Drawn | Declared | Returned]  # what happened, in order
    _talon_bits: list[int]  # the talon as single-card masks, top first
    _indicator_pos: int
    _round_robin: bool
    _others: tuple[tuple[int, ...], ...]  # by seat: the other active seats clockwise from it
    _trick_cards: int  # every card of the trick so far

    # -- setup ---------------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        rules: Ruleset,
        players: int,
        deck: Sequence[int],
        dealer: int,
        *,
        active: Sequence[int] | None = None,
        trump_index: int | None = None,
        first_leader: int | None = None,
    ) -> Deal:
        """Deal ``deck`` (index 0 on top) and open the deal.

        ``active`` lists the seats still in the match (all by default); ``trump_index`` picks
        the shown talon card under ``random_middle``; ``first_leader`` overrides left of dealer.
        """
        act = _active_seats(players, active)
        lay = _layout(rules, players, act)
        if sorted(deck) != lay.deck:
            raise SetupError(
                f"the deck must hold each card of the {rules.name} deck once "
                f"({len(lay.deck)} cards), got {len(deck)} cards"
            )
        if dealer not in act:
            raise SetupError(f"dealer {dealer} is not an active seat")
        d = cls()
        d._seat_table(lay, players, act, dealer)
        d._clear(players)
        d._deal(lay, tuple(deck), trump_index)
        leader = lay.deal_order[dealer][0] if first_leader is None else first_leader
        if leader not in act:
            raise SetupError(f"first leader {leader} is not an active seat")
        d.first_leader = leader
        d._begin_lead(leader)
        return d

    def _seat_table(self, lay: _Layout, players: int, active: tuple[int, ...], dealer: int) -> None:
        """Seat the table: the ruleset's switches and the seating order, fixed for the deal."""
        self.rules = lay.rules
        self.players = players
        self.active = active
        self.side_of = lay.side_of
        self.n_sides = lay.n_sides
        self.dealer = dealer
        self._order = lay.order
        self._others = lay.others
        self._combos_on = lay.combos_on
        self._money = lay.money
        self._auto_win = lay.auto_win
        self._original_lead = lay.original_lead
        self._interrupts = lay.interrupts
        self._combo_memo = lay.combo_memo
        self._round_robin = lay.round_robin
        self._offered, self._offered_seat = _NO_MOVES, -1

    def _clear(self, players: int) -> None:
        """Empty hands, piles and records, no trick and no window: the state before the deal."""
        self.hands = [0] * players
        self.known = [0] * players
        self.taken = [0] * players
        self.tricks_won = [0] * players
        self.tricks = []
        self.history = []
        self.log = []
        self.pot_winners = []
        self.bura = False
        self.trick = []
        self._trick_cards = 0
        self.trick_combo = None
        self.pending = set()
        self.answers = {}
        self.window_mid = False
        self.responders = []
        self.resp_i = 0
        self.lead_mask = self.win_mask = 0
        self.win_seat = -1

    def _deal(self, lay: _Layout, deck: tuple[int, ...], trump_index: int | None) -> None:
        """Deal four rounds of one card each clockwise from the dealer's left; the rest is the
        talon, whose indicator card names the trump suit."""
        order = lay.deal_order[self.dealer]
        n = len(order)
        hands = self.hands
        bit = _BIT
        for i, s in enumerate(order):
            hands[s] = bit[deck[i]] | bit[deck[i + n]] | bit[deck[i + 2 * n]] | bit[deck[i + 3 * n]]
        self.deck = deck
        self.trump_index = trump_index if lay.random_middle else None
        self.talon, self._indicator_pos = _talon(deck[4 * n :], lay.random_middle, trump_index)
        self.indicator = self.talon[self._indicator_pos]
        self.talon_pos = 0
        self._talon_bits = list(map(_BIT.__getitem__, self.talon))
        self.trump = SUIT_OF[self.indicator]
        self.tables = lay.tables[self.trump]

    def clone(self) -> Deal:
        """An independent copy (for search): acting on either never changes the other.

        Containers the deal only ever replaces (never changes in place) are shared: the talon,
        ``responders``, ``pot_winners`` and the per-ruleset tables; the window's ``pending``
        and ``answers`` are copied only while a window is open (opening one replaces both)."""
        d = Deal()
        d.rules, d.tables, d.players, d.active = self.rules, self.tables, self.players, self.active
        d.side_of, d.n_sides, d.dealer, d.trump = (
            self.side_of,
            self.n_sides,
            self.dealer,
            self.trump,
        )
        d.indicator, d.talon, d.talon_pos = self.indicator, self.talon, self.talon_pos
        d.hands, d.known = self.hands[:], self.known[:]
        d.phase, d.leader, d.responders = self.phase, self.leader, self.responders
        d.resp_i, d.lead_mask, d.win_seat = self.resp_i, self.lead_mask, self.win_seat
        d.win_mask, d.trick, d.trick_combo = self.win_mask, self.trick[:], self.trick_combo
        if self.phase is _DECLARE:
            d.pending, d.answers = set(self.pending), dict(self.answers)
        else:
            d.pending, d.answers = self.pending, self.answers
        d.window_mid, d.tricks, d.taken = self.window_mid, self.tricks[:], self.taken[:]
        d.tricks_won, d.history, d.log = self.tricks_won[:], self.history[:], self.log[:]
        d.pot_winners, d.bura, d._order = self.pot_winners, self.bura, self._order
        d._combos_on, d.first_leader, d.deck = self._combos_on, self.first_leader, self.deck
        d.trump_index, d._money, d._auto_win = self.trump_index, self._money, self._auto_win
        d._original_lead, d._interrupts = self._original_lead, self._interrupts
        d._combo_memo, d._offered, d._talon_bits = self._combo_memo, self._offered, self._talon_bits
        d._offered_seat = self._offered_seat
        d._indicator_pos, d._round_robin = self._indicator_pos, self._round_robin
        d._others, d._trick_cards = self._others, self._trick_cards
        return d

    # -- queries -------------------------------------------------------------------------------

    @property
    def over(self) -> bool:
        return self.phase is _NONE

    @property
    def decision(self) -> Decision:
        """What is awaited now."""
        return self.phase

    @property
    def to_act(self) -> tuple[int, ...]:
        """The seats whose decision is awaited, sorted."""
        phase = self.phase
        if phase is _LEAD:
            return (self.leader,)
        if phase is _RESPOND:
            return (self.responders[self.resp_i],)
        if phase is _DECLARE:
            return tuple(sorted(self.pending))
        return ()

    @property
    def talon_left(self) -> int:
        """Cards still in the talon, the trump indicator included."""
        return len(self.talon) - self.talon_pos

    @property
    def trump_suit(self) -> str:
        return SUITS[self.trump]

    def lead_cap(self, seat: int) -> int:
        """The most cards ``seat`` may lead now: the smallest other hand still holding cards."""
        cap = 4
        hands = self.hands
        for s in self.active:
            if s != seat:
                n = hands[s].bit_count()
                if 0 < n < cap:
                    cap = n
        return cap

    def legal_actions(self, seat: int) -> tuple[Action, ...]:
        """Every legal action of ``seat`` now, in canonical order (empty when not asked).

        Leads suit by suit (S C D H), then by size, then by card numbers; responses every
        beat, then every discard, each by card numbers; in a declaration window the
        declaration, then the pass.
        """
        phase = self.phase
        if phase is _RESPOND:
            if seat == self.responders[self.resp_i]:
                moves = self.tables.responses(
                    self.hands[seat], self.lead_mask if self._original_lead else self.win_mask
                )
            else:
                moves = _NO_MOVES
        elif phase is _LEAD and seat == self.leader:
            cap = 4  # lead_cap, inlined: the smallest other hand still holding cards
            hands = self.hands
            for s in self._others[seat]:
                n = hands[s].bit_count()
                if 0 < n < cap:
                    cap = n
            moves = self.tables.leads(hands[seat], cap)
        else:
            moves = self._window_moves(seat)
        self._offered = moves
        self._offered_seat = seat
        return moves

    def _window_moves(self, seat: int) -> tuple[Action, ...]:
        if self.phase is _DECLARE and seat in self.pending:
            hand = self.hands[seat]
            return (Action(_K_DECLARE, hand, combo_of(hand, self.rules)), PASS)
        return _NO_MOVES

    def is_legal(self, seat: int, action: Action) -> bool:
        """True when ``action`` is in :meth:`legal_actions` of ``seat`` (checked without
        building the list). A declaration without cards means the whole hand; a pass's cards
        are ignored, as :meth:`apply` does."""
        kind = action.kind
        if kind is _K_DECLARE or kind is _K_PASS:
            action = self.normalise(seat, action)
        phase = self.phase
        cards = action.cards
        if phase is _RESPOND:
            if seat != self.responders[self.resp_i]:
                return False
            if cards & ~self.hands[seat] or cards.bit_count() != self.lead_mask.bit_count():
                return False
            if kind is _K_DISCARD:
                return True
            if kind is not _K_BEAT:
                return False
            return self.tables.set_beats(
                cards, self.lead_mask if self._original_lead else self.win_mask
            )
        if phase is _LEAD:
            if seat != self.leader or kind is not _K_LEAD:
                return False
            n = cards.bit_count()
            return (
                n > 0
                and not cards & ~self.hands[seat]
                and n in self.rules.lead_sizes
                and n <= self.lead_cap(seat)
                and self.tables.one_suit(cards)
            )
        if phase is _DECLARE and seat in self.pending:
            if kind is _K_PASS:
                return True
            hand = self.hands[seat]
            return (
                kind is _K_DECLARE
                and cards == hand
                and (action.combo is not None and action.combo == combo_of(hand, self.rules))
            )
        return False

    def card_points(self) -> list[int]:
        """Card points taken so far, per side."""
        out = [0] * self.n_sides
        for s in self.active:
            out[self.side_of[s]] += points(self.taken[s])
        return out

    def side_tricks(self) -> list[int]:
        """Tricks won so far, per side."""
        out = [0] * self.n_sides
        for s in self.active:
            out[self.side_of[s]] += self.tricks_won[s]
        return out

    def active_sides(self) -> list[int]:
        """The sides with a seat in this deal, ascending."""
        return sorted({self.side_of[s] for s in self.active})

    def penalties(self) -> list[int | None] | None:
        """Penalties per side for this deal (None per side not playing); None until it is over
        and always None in the money game."""
        if not self.over or self.rules.is_money:
            return None
        sides = self.active_sides()
        pts, trk = self.card_points(), self.side_tricks()
        entry = self.rules.scoring_for(len(self.active))
        pen = deal_penalties(entry, [pts[s] for s in sides], [trk[s] for s in sides])
        out: list[int | None] = [None] * self.n_sides
        for s, p in zip(sides, pen):
            out[s] = p
        return out

    @property
    def last_trick_winner(self) -> int | None:
        return self.tricks[-1].winner if self.tricks else None

    # -- actions -------------------------------------------------------------------------------

    def apply(self, seat: int, action: Action) -> Action:
        """Apply ``seat``'s action, or raise :class:`IllegalAction` leaving the deal unchanged.

        Returns the action as applied (a declaration's cards are the whole hand)."""
        if seat == self._offered_seat and type(action) is Action and action in self._offered:
            kind = action[0]  # chosen from the list just handed out: legal by construction
        else:
            try:
                kind = action.kind
            except AttributeError:
                raise IllegalAction(ErrorCode.MALFORMED, f"not an action: {action!r}") from None
            if kind is _K_DECLARE or kind is _K_PASS:
                action = self.normalise(seat, action)
            if not self.is_legal(seat, action):
                if not isinstance(action, Action) or not 0 <= action.cards < 1 << 36:
                    raise IllegalAction(ErrorCode.MALFORMED, f"not an action: {action!r}")
                self.diagnose(seat, kind, cards_in(action.cards), action.combo)
                raise AssertionError(f"{action} by seat {seat} is illegal but passed every check")
        self._offered = _NO_MOVES  # stale now
        self.history.append((seat, action))
        if kind is _K_LEAD:
            self._lead(seat, action[1], None)
        elif kind is _K_BEAT or kind is _K_DISCARD:
            cards = action[1]
            self.hands[seat] &= ~cards
            known = self.known
            if known[seat]:
                known[seat] &= ~cards
            self.trick.append(p := _new(Play, (seat, kind, cards, False)))
            self._trick_cards |= cards
            self.log.append(p)
            if kind is _K_BEAT:
                self.win_seat = seat
                self.win_mask = cards
            self.resp_i += 1
            if self.resp_i == len(self.responders):
                self._finish_trick()
            elif self._interrupts:
                self._check_interrupt()
        else:
            self._answer_window(seat, action)
        return action

    def normalise(self, seat: int, action: Action) -> Action:
        """A declaration listing no cards means the whole hand; a pass has none."""
        if action.kind is _K_PASS:
            return PASS
        if not action.cards and isinstance(seat, int) and 0 <= seat < self.players:
            return Action(_K_DECLARE, self.hands[seat], action.combo)
        return action

    def play(
        self,
        seat: int,
        kind: ActionKind | str,
        cards: Sequence[int | str] = (),
        combo: Combo | str | None = None,
    ) -> Action:
        """Apply an action given as a card list, checking duplicates too; returns the action."""
        try:
            kind = ActionKind(kind)
            nums = [c if isinstance(c, int) else CODES.index(c.upper()) for c in cards]
            if any(not 0 <= c < 36 for c in nums):
                raise ValueError
            combo = Combo(combo) if combo is not None else None
        except (ValueError, AttributeError, TypeError):
            raise IllegalAction(
                ErrorCode.MALFORMED, f"not an action: {kind!r} with cards {list(cards)!r}"
            ) from None
        if len(set(nums)) != len(nums):
            self.diagnose(seat, kind, nums, combo)
        mask = 0
        for c in nums:
            mask |= 1 << c
        return self.apply(seat, Action(kind, mask, combo))

    def diagnose(
        self, seat: int, kind: ActionKind, cards: Sequence[int], combo: Combo | None = None
    ) -> None:
        """Raise :class:`IllegalAction` for the first rule the action breaks; return if none."""
        self._diagnose_turn(seat, kind, combo)
        if kind is _K_PASS:
            return
        if kind is _K_DECLARE:
            self._diagnose_declaration(seat, cards, combo)
            return
        mask = self._diagnose_cards(seat, cards)
        if kind is _K_LEAD:
            self._diagnose_lead(seat, mask, len(cards))
        else:
            self._diagnose_response(kind, mask, len(cards))

    def _diagnose_turn(self, seat: int, kind: ActionKind, combo: Combo | None) -> None:
        """Is this action's kind awaited now, and from this seat?"""
        if not isinstance(seat, int) or not 0 <= seat < self.players:
            raise IllegalAction(ErrorCode.MALFORMED, f"seat {seat!r} is not at this table")
        if kind is _K_DECLARE and combo is None:
            raise IllegalAction(ErrorCode.MALFORMED, "a declaration must name moscow or molodka")
        if self.over:
            raise IllegalAction(ErrorCode.WRONG_DECISION, "the deal is over")
        if kind is _K_DECLARE and (self.phase is not _DECLARE or not self._combos_on):
            why = (
                "combinations are off in this ruleset"
                if not self._combos_on
                else "no declaration window is open"
            )
            raise IllegalAction(ErrorCode.DECLARATION_NOT_ALLOWED, f"cannot declare now: {why}")
        wanted = DECISION_OF_KIND[kind]
        if wanted is not self.phase:
            raise IllegalAction(
                ErrorCode.WRONG_DECISION,
                f"a {kind} is not awaited now; the deal awaits a {self.phase}",
            )
        if seat not in self.to_act:
            who = ", ".join(map(str, self.to_act))
            raise IllegalAction(
                ErrorCode.NOT_YOUR_TURN, f"seat {seat} is not asked now; awaiting seat {who}"
            )

    def _diagnose_declaration(self, seat: int, cards: Sequence[int], combo: Combo | None) -> None:
        """Is the hand the named combination, and are the listed cards (if any) the hand?"""
        hand = self.hands[seat]
        actual = combo_of(hand, self.rules)
        if actual != combo:
            held = f"a {actual}" if actual else "no combination"
            raise IllegalAction(
                ErrorCode.NOT_A_COMBINATION,
                f"the hand {' '.join(codes(hand))} is {held}, not a {combo}",
            )
        listed = sum(1 << c for c in cards)
        if listed and listed != hand:
            raise IllegalAction(
                ErrorCode.NOT_A_COMBINATION,
                f"a declaration is the whole hand ({' '.join(codes(hand))}), "
                f"not {' '.join(codes(listed))}",
            )

    def _diagnose_cards(self, seat: int, cards: Sequence[int]) -> int:
        """The cards as a mask, once checked that each is listed once and is in the hand."""
        if len(set(cards)) != len(cards):
            dup = sorted({CODES[c] for c in cards if list(cards).count(c) > 1})
            raise IllegalAction(ErrorCode.DUPLICATE_CARD, f"{' '.join(dup)} listed twice")
        hand = self.hands[seat]
        mask = sum(1 << c for c in cards)
        missing = mask & ~hand
        if missing:
            raise IllegalAction(
                ErrorCode.CARD_NOT_IN_HAND,
                f"{' '.join(codes(missing))} not in hand ({' '.join(codes(hand))})",
            )
        return mask

    def _diagnose_lead(self, seat: int, mask: int, n: int) -> None:
        """Is a lead of these ``n`` cards one suit and of a size allowed now?"""
        if n == 0:
            raise IllegalAction(ErrorCode.WRONG_CARD_COUNT, "a lead needs at least one card")
        if not self.tables.one_suit(mask):
            raise IllegalAction(
                ErrorCode.MIXED_SUITS, f"a lead must be of one suit: {' '.join(codes(mask))}"
            )
        cap = self.lead_cap(seat)
        lead_sizes = self.rules.lead_sizes
        if n not in lead_sizes or n > cap:
            sizes = [k for k in lead_sizes if k <= cap]
            raise IllegalAction(
                ErrorCode.LEAD_SIZE_NOT_ALLOWED,
                f"a lead of {n} cards is not allowed now; allowed sizes: {sizes}",
            )

    def _diagnose_response(self, kind: ActionKind, mask: int, n: int) -> None:
        """Does a beat or discard of these ``n`` cards match the lead, and does a beat beat?"""
        need = self.lead_mask.bit_count()
        if n != need:
            raise IllegalAction(
                ErrorCode.WRONG_CARD_COUNT, f"{n} cards played to a lead of {need}; play {need}"
            )
        if kind is not _K_BEAT:
            return
        original = self.rules.beat_target == BeatTarget.ORIGINAL_LEAD
        target = self.lead_mask if original else self.win_mask
        if not self.tables.set_beats(mask, target):
            now = (
                "led"
                if target == self.lead_mask and self.win_seat == self.trick[0].seat
                else "now winning the trick"
            )
            raise IllegalAction(
                ErrorCode.DOES_NOT_BEAT,
                f"{' '.join(codes(mask))} does not beat the {' '.join(codes(target))} {now}",
            )

    # -- transitions ---------------------------------------------------------------------------

    def _begin_lead(self, seat: int) -> None:
        """Give the lead to ``seat`` (or the next holder clockwise) and open a window if due."""
        self.trick = []
        self.trick_combo = None
        hands = self.hands
        for s in self._order[seat]:
            if hands[s]:
                self.leader = s
                break
        else:
            self._finish_deal()
            return
        if self._combos_on:
            table = self._combo_memo  # every combination hand
            for s in self.active:
                if hands[s] in table:  # rare: is a window due (every hand of four cards)?
                    active = self.active
                    if all(hands[a].bit_count() >= 4 for a in active):
                        self._open_window([a for a in active if hands[a] in table], mid=False)
                        return
                    break
        self.phase = _LEAD

    def _open_window(self, holders: list[int], mid: bool) -> None:
        self.pending = set(holders)
        self.answers = {}
        self.window_mid = mid
        self.phase = _DECLARE

    def _answer_window(self, seat: int, action: Action) -> None:
        self.pending.discard(seat)
        self.answers[seat] = action
        if self.pending:
            return
        declared = [(s, a.combo) for s, a in self.answers.items() if a.kind is _K_DECLARE]
        self.answers = {}
        if not declared:
            self.phase = _RESPOND if self.window_mid else _LEAD
            return
        ref = self.trick[0].seat if self.window_mid else self.leader
        order = self._order[ref]
        seat, combo = min(declared, key=lambda sc: (sc[1] != Combo.MOSCOW, order.index(sc[0])))
        assert combo is not None  # a declaration names its combination
        if self.window_mid:
            self._return_trick()
        self.log.append(Declared(seat, combo, self.hands[seat]))
        self._lead(seat, self.hands[seat], combo)

    def _return_trick(self) -> None:
        self.log.append(Returned(tuple(self.trick)))
        open_discards = self.rules.discard_visibility == DiscardVisibility.OPEN
        for p in self.trick:
            self.hands[p.seat] |= p.cards
            if p.face_up or open_discards:
                self.known[p.seat] |= p.cards
        self.trick = []
        self._trick_cards = 0

    def _lead(self, seat: int, cards: int, combo: Combo | None) -> None:
        hands = self.hands
        hands[seat] &= ~cards
        known = self.known
        if known[seat]:
            known[seat] &= ~cards
        self.leader = seat
        self.trick = [lead := _new(Play, (seat, _K_LEAD, cards, False))]
        self._trick_cards = cards
        self.log.append(lead)
        self.trick_combo = combo
        self.lead_mask = self.win_mask = cards
        self.win_seat = seat
        if self._money and (
            (cards & self.tables.trump_mask).bit_count() >= 3 or (combo and cards == ACES)
        ):
            self.bura = True  # the led cards stay on the table and go to nobody
            self.pot_winners = [seat]
            self.phase = _NONE
            return
        # The responders: the other seats still holding cards. Usually that is every other
        # seat, and the shared tuple is used as it is (responders are replaced, never changed).
        responders: Sequence[int]
        responders = others = self._others[seat]
        for s in others:
            if not hands[s]:
                responders = [s for s in others if hands[s]]
                break
        self.responders = responders
        self.resp_i = 0
        if not responders:
            self._finish_trick()
        elif combo is not None and self._auto_win:
            for s in responders:
                self.trick.append(p := Play(s, _K_DISCARD, hands[s], forced=True))
                self._trick_cards |= hands[s]
                self.log.append(p)
                hands[s] = 0
                known[s] = 0
            self._finish_trick()
        else:
            self.phase = _RESPOND
            if self._interrupts:
                self._check_interrupt()

    def _check_interrupt(self) -> None:
        """Midtrick windows: after a play, players yet to play may interrupt with a combination."""
        if self.trick_combo is not None:
            return
        played = {p.seat: p.cards.bit_count() for p in self.trick}
        hands = self.hands
        if any(hands[s].bit_count() + played.get(s, 0) < 4 for s in self.active):
            return
        rules = self.rules
        holders = [s for s in self.responders[self.resp_i :] if combo_of(hands[s], rules)]
        if holders:
            self._open_window(holders, mid=True)

    def _finish_trick(self) -> None:
        cards = self._trick_cards
        winner = self.win_seat
        self.taken[winner] |= cards
        self.tricks_won[winner] += 1
        pts = HALF_POINTS[cards & 0x3FFFF] + HALF_POINTS[cards >> 18]
        self.tricks.append(
            t := _new(Trick, (self.leader, winner, pts, tuple(self.trick), self.trick_combo))
        )
        self.log.append(t)
        if self.talon_pos < len(self._talon_bits):
            self._draw(winner)
        self._begin_lead(winner)

    def _draw(self, first: int) -> None:
        """Fill the hands from the talon, ``first`` first (rule 6)."""
        bits = self._talon_bits
        end = len(bits)
        start = pos = self.talon_pos
        hands = self.hands
        order = self._order[first]
        n = len(order)
        drawn = [0] * self.players
        k = 4 - hands[first].bit_count()
        # The usual case: enough cards for all. The hands are equal then: every trick takes as
        # many cards from each hand (a returned trick gives them back), and each draw fills
        # every hand to four while the talon can.
        if pos + k * n <= end:
            if k == 1:
                for s in order:
                    drawn[s] = b = bits[pos]
                    hands[s] |= b
                    pos += 1
            elif not self._round_robin:  # each draws k cards in a row
                for s in order:
                    m = 0
                    for b in bits[pos : pos + k]:
                        m |= b
                    drawn[s] = m
                    hands[s] |= m
                    pos += k
            else:  # one card per player per pass, clockwise
                for i, s in enumerate(order):
                    m = 0
                    for b in bits[pos + i : pos + k * n : n]:
                        m |= b
                    drawn[s] = m
                    hands[s] |= m
                pos += k * n
        else:
            need = [4 - hands[s].bit_count() for s in order]
            if self._round_robin:
                for r in range(max(need)):  # one card per player per pass, clockwise
                    for i, s in enumerate(order):
                        if need[i] > r and pos < end:
                            drawn[s] |= bits[pos]
                            pos += 1
            else:
                for i, s in enumerate(order):  # each in turn fills up to four
                    take = min(need[i], end - pos)
                    for b in bits[pos : pos + take]:
                        drawn[s] |= b
                    pos += take
            for s in order:
                hands[s] |= drawn[s]
        if start <= self._indicator_pos < pos:  # everyone saw it: its holder is public
            ibit = 1 << self.indicator
            for s in order:
                if drawn[s] & ibit:
                    self.known[s] |= ibit
        self.talon_pos = pos
        self.log.append(_new(Drawn, (tuple(drawn),)))

    def _finish_deal(self) -> None:
        self.phase = _NONE
        if self.rules.is_money and not self.bura:
            pts = [points(self.taken[s]) for s in self.active]
            top = max(pts)
            self.pot_winners = [s for s, p in zip(self.active, pts) if p == top]

    def __repr__(self) -> str:
        hands = " | ".join(" ".join(codes(h)) for h in self.hands)
        return (
            f"<Deal {self.rules.name} trump={SUITS[self.trump]} phase={self.phase} "
            f"to_act={self.to_act} talon={self.talon_left} hands=[{hands}]>"
        )


class _Layout(NamedTuple):
    """What every deal of one ruleset, table size and set of active seats shares."""

    rules: Ruleset
    deck: list[int]
    side_of: tuple[int, ...]
    n_sides: int
    # By seat (a tuple indexed by seat, empty for a seat not active: cheaper than a dict, for
    # compiled code most of all): the active seats clockwise from it, the others, and the seats
    # as dealt to by it as dealer (dealer last).
    order: tuple[tuple[int, ...], ...]
    others: tuple[tuple[int, ...], ...]
    deal_order: tuple[tuple[int, ...], ...]
    combos_on: bool
    money: bool
    auto_win: bool
    original_lead: bool
    interrupts: bool
    round_robin: bool
    random_middle: bool
    combo_memo: dict[int, Combo]
    tables: tuple[Tables, ...]  # by trump suit


_LAYOUTS: Final[dict[tuple[int, int, tuple[int, ...]], _Layout]] = {}


def _layout(rules: Ruleset, players: int, active: tuple[int, ...]) -> _Layout:
    key = (id(rules), players, active)
    lay = _LAYOUTS.get(key)
    if lay is None or lay.rules is not rules:
        if len(_LAYOUTS) > 512:
            _LAYOUTS.clear()
        side_of = rules.side_of(players)
        order = tuple(_clockwise(active, s, players) if s in active else () for s in range(players))
        combos_on = rules.combos != Combos.NONE
        lay = _LAYOUTS[key] = _Layout(
            rules=rules,
            deck=cards_in(rules.deck),
            side_of=side_of,
            n_sides=max(side_of) + 1,
            order=order,
            others=tuple(o[1:] for o in order),
            deal_order=tuple(o[1:] + o[:1] for o in order),
            combos_on=combos_on,
            money=rules.is_money,
            auto_win=rules.special_effect == SpecialEffect.AUTO_WIN,
            original_lead=rules.beat_target == BeatTarget.ORIGINAL_LEAD,
            interrupts=rules.midtrick_interrupt and combos_on,
            round_robin=rules.draw_mode == DrawMode.ROUND_ROBIN,
            random_middle=rules.trump_mode == TrumpMode.RANDOM_MIDDLE,
            combo_memo=combo_memo(rules),
            tables=tuple(tables_for(rules, t) for t in range(4)),
        )
    return lay


def _clockwise(active: tuple[int, ...], start: int, players: int) -> tuple[int, ...]:
    """Active seats clockwise from ``start`` (included)."""
    return tuple(s for k in range(players) if (s := (start + k) % players) in active)


def _active_seats(players: int, active: Sequence[int] | None) -> tuple[int, ...]:
    """The seats in the deal, sorted (every seat when ``active`` is None), or SetupError."""
    if not 2 <= players <= 5:
        raise SetupError(f"a table has 2 to 5 players, not {players}")
    if active is None:
        return tuple(range(players))
    act = tuple(sorted(set(active)))
    if len(act) < 2 or any(not 0 <= s < players for s in act):
        raise SetupError(f"active seats {list(act)} are not at least two seats of {players}")
    return act


def _talon(
    rest: tuple[int, ...], random_middle: bool, trump_index: int | None
) -> tuple[list[int], int]:
    """The talon from the cards left after dealing, and where its indicator card lies: the top
    card turned under the talon, or under ``random_middle`` the card at ``trump_index``."""
    if not random_middle:
        return list(rest[1:]) + [rest[0]], len(rest) - 1
    if trump_index is None:
        raise SetupError("random_middle needs a trump_index into the talon")
    if not 0 <= trump_index < len(rest):
        raise SetupError(f"trump_index {trump_index} is outside the talon of {len(rest)}")
    return list(rest), trump_index
