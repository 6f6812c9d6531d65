"""The numeric encoding of a decision, shared by training and play: observation tensor, action
mask and a fixed action space.

A policy trained on ``kozel.env`` (PettingZoo, Gymnasium, OpenSpiel) and the same policy served
over gRPC (``kozel bot --policy``) see the same numbers, because both come from this module and
from the same messages: the referee's ``MatchStart``, ``DealStart`` and ``DecisionRequest``
(the environment drives the referee's own seat protocol to make them).

**Actions** (:data:`N_ACTIONS` = 47, hand-relative). A hand never holds more than four cards;
its cards in canonical order (card number ``suit*9 + rank``, suits S C D H, ranks by strength)
are the slots 0-3, and a set of cards from the hand is a 4-bit slot mask ``m`` (1-15):

=========  ============================================
index      action
=========  ============================================
0-14       lead the cards of slot mask ``index + 1``
15-29      beat with slot mask ``index - 14``
30-44      discard slot mask ``index - 29``
45         declare (the hand's combination: at most one is ever legal)
46         pass (a declaration window)
=========  ============================================

Every legal action of a request maps to exactly one index and back (:class:`ActionMap`); the
mask holds 1 at exactly those indices.

**Observation** (:data:`OBS_SIZE` = 906 floats in [0, 1]). Seats are relative to the observer
(relative seat ``r`` is ``(seat - me) % players``; 0 is the observer) and up to
:data:`MAX_SEATS` are laid out (unused ones stay 0). First 23 planes of 36 cards (index = card
number):

====  ==========================================================================
0     the hand
1-4   hand slot 0..3 (one card each: which card each action slot names)
5     unseen: in this ruleset's deck and not seen anywhere by the observer
6     the trump card (the indicator)
7     the observer's own face-down discards in this deal
8-12  cards played face up in finished tricks, by relative seat 0..4
13-17 cards played face up in the trick in play, by relative seat 0..4
18    the set now winning the trick in play (when face up)
19-22 cards known to be in the hand of relative seat 1..4
====  ==========================================================================

Then 78 numbers (offset :data:`SCALARS` = 828): the decision kind (lead, respond, declare,
none: 4), players (2, 3, 4, 5: 4), money game (1), trump suit S C D H (4), trump card drawn
(1), talon / 36 (1), lead cap / 4 (1); per relative seat 0..4, 9 each: active, on the
observer's side, hand size / 4, tricks won / 9, known points / 120, dealer, awaited, leader
of the trick in play, winning it (45); for the trick in play: cards per play / 4, the combination
led (Moscow, Molodka: 2), known points / 120, face-down cards / 16 (5 in all); deal over (1);
per relative seat 0..4 its side's penalty total / limit (capped at 1: 5) and in the money game
``0.5 + chips / 40`` (clipped to [0, 1]: 5), from the last ``DealStart``; the deal index / 20
(capped at 1: 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kozel.engine.cards import CARD_OF, CODES, N_CARDS
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

ENCODING = "kozel-obs-v1"  # changes whenever the layout below does
MAX_SEATS = 5
HAND_SLOTS = 4
SUBSETS = (1 << HAND_SLOTS) - 1  # non-empty sets of hand slots
LEAD, BEAT, DISCARD = 0, SUBSETS, 2 * SUBSETS  # first index of each kind
DECLARE = 3 * SUBSETS
PASS = DECLARE + 1
N_ACTIONS = PASS + 1

_PLANES = 23
SCALARS = _PLANES * N_CARDS
OBS_SIZE = SCALARS + 78

# Planes (offsets in the vector).
_HAND, _SLOT, _UNSEEN, _TRUMP_CARD, _MY_DOWN = 0, 1, 5, 6, 7
_DONE, _TRICK, _WINNING, _KNOWN = 8, 13, 18, 19
# Scalars (offsets from SCALARS).
_KIND, _PLAYERS, _MONEY, _SUIT, _DRAWN, _TALON, _CAP, _SEATS = 0, 4, 8, 9, 13, 14, 15, 16
_SEAT_WIDTH = 9
_TRICK_INFO = _SEATS + MAX_SEATS * _SEAT_WIDTH  # 61
_OVER = _TRICK_INFO + 5
_TOTALS = _OVER + 1
_CHIPS = _TOTALS + MAX_SEATS
_DEAL = _CHIPS + MAX_SEATS
assert SCALARS + _DEAL + 1 == OBS_SIZE

_KIND_BASE = {"lead": LEAD, "beat": BEAT, "discard": DISCARD}
_PB_KIND = {
    pb.ACTION_KIND_LEAD: "lead",
    pb.ACTION_KIND_BEAT: "beat",
    pb.ACTION_KIND_DISCARD: "discard",
    pb.ACTION_KIND_DECLARE: "declare",
    pb.ACTION_KIND_PASS: "pass",
}
_DECISION_SLOT: dict[int, int] = {
    pb.DECISION_KIND_LEAD: 0,
    pb.DECISION_KIND_RESPOND: 1,
    pb.DECISION_KIND_DECLARE: 2,
}
_FACE_DOWN = pb.ACTION_KIND_DISCARD


class EncodingError(ValueError):
    """A request this encoding cannot express (a hand of more than four cards, an action with
    cards outside the hand, two legal actions on one index)."""


def _numpy() -> Any:
    try:
        import numpy
    except ImportError as exc:  # pragma: no cover - numpy comes with the env extra
        raise ImportError("the encoding needs numpy: pip install 'kozel-arena[env]'") from exc
    return numpy


def hand_slots(hand: Sequence[str]) -> list[int]:
    """The hand's cards (numbers) in slot order: canonical, ascending card number."""
    cards = sorted(CARD_OF[c] for c in hand)
    if len(cards) > HAND_SLOTS:
        raise EncodingError(f"a hand of {len(cards)} cards; the action space has {HAND_SLOTS}")
    return cards


def action_index(action: pb.Action, slots: Sequence[int]) -> int:
    """The index of ``action`` for a hand whose slots hold ``slots`` (see :func:`hand_slots`)."""
    cards = 0
    for code in action.cards:
        card = CARD_OF.get(code)
        if card is None:
            raise EncodingError(f"the action plays {code!r}, which is no card")
        cards |= 1 << card
    return kind_index(_PB_KIND.get(action.kind, ""), cards, sum(1 << c for c in slots))


def kind_index(kind: str, cards: int, hand: int) -> int:
    """The index of an action given as its kind's name (``lead``, ``beat``, ``discard``,
    ``declare``, ``pass``: the engine's ``ActionKind`` values), its cards and the hand (both
    36-bit card masks)."""
    if kind == "pass":
        return PASS
    if kind == "declare":
        return DECLARE
    base = _KIND_BASE.get(kind)
    if base is None:
        raise EncodingError(f"no index for an action of kind {kind!r}")
    if hand.bit_count() > HAND_SLOTS:
        raise EncodingError(
            f"a hand of {hand.bit_count()} cards; the action space has {HAND_SLOTS}"
        )
    if not cards:
        raise EncodingError("an action of no cards")
    subset = 0
    rest = cards
    while rest:
        low = rest & -rest
        card = low.bit_length() - 1
        if not hand & low:
            raise EncodingError(f"the action plays {CODES[card]}, which is not in the hand")
        subset |= 1 << (hand & (low - 1)).bit_count()  # the card's slot: cards below it
        rest ^= low
    return base + subset - 1


def index_name(index: int, slots: Sequence[int]) -> str:
    """A readable name of ``index`` for a hand with these slots (``lead 7S 9S``)."""
    if index == PASS:
        return "pass"
    if index == DECLARE:
        return "declare"
    if not 0 <= index < DECLARE:
        raise EncodingError(f"index {index} is outside 0..{N_ACTIONS - 1}")
    kind = ("lead", "beat", "discard")[index // SUBSETS]
    mask = index % SUBSETS + 1
    cards = [CODES[slots[i]] if i < len(slots) else "?" for i in range(HAND_SLOTS) if mask >> i & 1]
    return f"{kind} {' '.join(cards)}"


@dataclass(frozen=True, slots=True)
class ActionMap:
    """The legal actions of one request and their indices: ``indices[i]`` is the index of
    ``legal_actions[i]``; :meth:`legal` goes back."""

    indices: tuple[int, ...]
    _back: dict[int, int]

    @classmethod
    def of(cls, request: rpb.DecisionRequest) -> ActionMap:
        slots = hand_slots(request.observation.hand)
        indices = tuple(action_index(a, slots) for a in request.legal_actions)
        back = {index: i for i, index in enumerate(indices)}
        if len(back) != len(indices):
            raise EncodingError("two legal actions share an index")
        return cls(indices, back)

    def legal(self, index: int) -> int:
        """The position in ``legal_actions`` of action ``index``; ``ValueError`` (naming the
        legal indices) if it is not legal now."""
        try:
            return self._back[int(index)]
        except KeyError:
            raise ValueError(
                f"action {index} is not legal now; legal: {sorted(self._back)}"
            ) from None

    def mask(self) -> npt.NDArray[np.int8]:
        """1 at every legal index, 0 elsewhere."""
        np = _numpy()
        mask = np.zeros(N_ACTIONS, dtype=np.int8)
        mask[list(self.indices)] = 1
        return mask


@dataclass(slots=True)
class Context:
    """What a seat knows of the match besides the decision: from ``MatchStart`` (the deck,
    the limit, the money game) and the last ``DealStart`` (the standing, the deal index)."""

    deck: tuple[int, ...] = tuple(range(N_CARDS))
    limit: int = 12
    money: bool = False
    seat: int = 0
    players: int = 2
    sides: tuple[int, ...] = ()
    totals: tuple[int, ...] = ()  # per side
    chips: tuple[int, ...] = ()  # per seat
    deal_index: int = 0

    def match_start(self, msg: rpb.MatchStart) -> None:
        opts = msg.ruleset.options.fields
        removed = set()
        if "removed_cards" in opts:
            removed = {
                CARD_OF.get(v.string_value.upper(), -1)
                for v in opts["removed_cards"].list_value.values
            }
        self.deck = tuple(c for c in range(N_CARDS) if c not in removed)
        if "limit" in opts:
            self.limit = max(1, int(opts["limit"].number_value))
        self.money = "game" in opts and opts["game"].string_value == "money"
        self.seat, self.players = msg.seat, msg.players
        self.sides = tuple(p.side for p in sorted(msg.seating, key=lambda p: p.seat))

    def deal_start(self, msg: rpb.DealStart) -> None:
        self.totals = tuple(msg.penalty_totals)
        self.chips = tuple(msg.chips)
        self.deal_index = msg.deal_index


class Encoder:
    """One seat's encoder for one match: feed it the seat's ``MatchStart`` and ``DealStart``
    messages, then :meth:`encode` each ``DecisionRequest``."""

    def __init__(self) -> None:
        self.context = Context()
        self.finished = _Finished()

    def match_start(self, msg: rpb.MatchStart) -> None:
        self.context.match_start(msg)

    def deal_start(self, msg: rpb.DealStart) -> None:
        self.context.deal_start(msg)

    def encode(
        self, request: rpb.DecisionRequest
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int8], ActionMap]:
        """The observation tensor, the action mask and the action map of ``request``."""
        actions = ActionMap.of(request)
        return (
            observation_tensor(request.observation, request.kind, self.context, self.finished),
            actions.mask(),
            actions,
        )

    def observe(self, obs: pb.Observation) -> npt.NDArray[np.float32]:
        """The tensor of an observation when the seat is not asked (kind: none)."""
        return observation_tensor(obs, pb.DECISION_KIND_UNSPECIFIED, self.context, self.finished)


def observation_tensor(
    obs: pb.Observation, kind: int, context: Context | None = None, finished: Any = None
) -> npt.NDArray[np.float32]:
    """The observation tensor (layout in the module docstring). ``finished`` is an
    :class:`Encoder`'s memory of the deal's finished tricks (none: all are read)."""
    np = _numpy()
    ctx = context or Context(players=obs.players, seat=obs.seat)
    vec = np.zeros(OBS_SIZE, dtype=np.float32)
    ones = _card_planes(obs, ctx, finished if finished is not None else _Finished())
    vec[ones] = 1.0
    _scalars(vec, obs, kind, ctx)
    return vec


@dataclass(slots=True)
class _Finished:
    """The card-plane 1s and seen cards of a deal's finished tricks, which never change: an
    encoder reads only the tricks finished since its last observation of the deal."""

    deal: tuple[int, int, int, str] = (-1, -1, -1, "")  # seat, deal index, dealer, trump card
    count: int = 0
    ones: list[int] = field(default_factory=list)
    seen: set[int] = field(default_factory=set)

    def update(self, obs: pb.Observation, ctx: Context) -> None:
        key = (obs.seat, ctx.deal_index, obs.dealer, obs.trump_card)
        tricks = obs.tricks
        if key != self.deal or len(tricks) < self.count:
            self.deal, self.count, self.ones, self.seen = key, 0, [], set()
        for i in range(self.count, len(tricks)):
            _trick_planes(tricks[i], _DONE, obs.seat, obs.players or 1, self.ones, self.seen)
        self.count = len(tricks)


def _trick_planes(
    trick: pb.Trick, plane: int, me: int, n: int, ones: list[int], seen: set[int]
) -> None:
    for play in trick.plays:
        rel = (play.seat - me) % n
        cards = [CARD_OF[c] for c in play.cards]
        seen.update(cards)
        if play.kind == _FACE_DOWN and play.seat == me:
            ones += [_MY_DOWN * N_CARDS + c for c in cards]
        elif rel < MAX_SEATS:  # face up (or open discards: ``discard_visibility``)
            ones += [(plane + rel) * N_CARDS + c for c in cards]


def _card_planes(obs: pb.Observation, ctx: Context, finished: _Finished) -> list[int]:
    """Indices of the 1s of the card planes."""
    me, n = obs.seat, obs.players or 1
    finished.update(obs, ctx)
    ones = finished.ones[:]
    seen = set(finished.seen)
    for i, card in enumerate(hand_slots(obs.hand)):
        ones += (_HAND * N_CARDS + card, (_SLOT + i) * N_CARDS + card)
        seen.add(card)
    if obs.trump_card:
        card = CARD_OF[obs.trump_card]
        ones.append(_TRUMP_CARD * N_CARDS + card)
        seen.add(card)
    if obs.HasField("trick"):
        _trick_planes(obs.trick, _TRICK, me, n, ones, seen)
        ones += [_WINNING * N_CARDS + c for c in _winning_set(obs.trick)]
    for view in obs.seats:
        rel = (view.seat - me) % n
        for code in view.known_cards:
            card = CARD_OF[code]
            seen.add(card)
            if 0 < rel < MAX_SEATS:
                ones.append((_KNOWN + rel - 1) * N_CARDS + card)
    ones += [_UNSEEN * N_CARDS + c for c in ctx.deck if c not in seen]
    return ones


def _winning_set(trick: pb.Trick) -> list[int]:
    for play in reversed(trick.plays):
        if play.seat == trick.winner and play.kind != _FACE_DOWN:
            return [CARD_OF[c] for c in play.cards]
    return []


def _scalars(vec: npt.NDArray[np.float32], obs: pb.Observation, kind: int, ctx: Context) -> None:
    me, n = obs.seat, obs.players or 1
    s = [0.0] * (OBS_SIZE - SCALARS)
    s[_KIND + _DECISION_SLOT.get(kind, 3)] = 1.0
    if 2 <= n <= MAX_SEATS:
        s[_PLAYERS + n - 2] = 1.0
    s[_MONEY] = float(ctx.money)
    if obs.trump:
        s[_SUIT + "SCDH".index(obs.trump)] = 1.0
    s[_DRAWN] = float(obs.trump_card_drawn)
    s[_TALON] = obs.talon / N_CARDS
    s[_CAP] = min(obs.lead_cap, 4) / 4
    in_play = obs.trick if obs.HasField("trick") else None
    my_side = next((v.side for v in obs.seats if v.seat == me), me)
    awaited = set(obs.to_act)
    for view in obs.seats:
        rel = (view.seat - me) % n
        if rel >= MAX_SEATS:
            continue
        base = _SEATS + rel * _SEAT_WIDTH
        s[base : base + _SEAT_WIDTH] = [
            float(view.active),
            float(view.side == my_side),
            min(view.hand_size, 4) / 4,
            min(view.tricks_won, 9) / 9,
            min(view.known_points, 120) / 120,
            float(view.seat == obs.dealer),
            float(view.seat in awaited),
            float(in_play is not None and in_play.leader == view.seat and bool(in_play.plays)),
            float(in_play is not None and in_play.winner == view.seat and bool(in_play.plays)),
        ]
        if view.seat < len(ctx.sides) and ctx.sides[view.seat] < len(ctx.totals):
            total = ctx.totals[ctx.sides[view.seat]]
            s[_TOTALS + rel] = min(total / ctx.limit, 1.0)
        if view.seat < len(ctx.chips):
            s[_CHIPS + rel] = min(max(0.5 + ctx.chips[view.seat] / 40, 0.0), 1.0)
    if in_play is not None and in_play.plays:
        down = sum(p.count - len(p.cards) for p in in_play.plays)
        s[_TRICK_INFO] = min(in_play.plays[0].count, 4) / 4
        if in_play.combo == pb.COMBO_MOSCOW:
            s[_TRICK_INFO + 1] = 1.0
        elif in_play.combo == pb.COMBO_MOLODKA:
            s[_TRICK_INFO + 2] = 1.0
        s[_TRICK_INFO + 3] = min(in_play.known_points, 120) / 120
        s[_TRICK_INFO + 4] = min(down, 16) / 16
    s[_OVER] = float(obs.deal_over)
    s[_DEAL] = min(ctx.deal_index, 20) / 20
    vec[SCALARS:] = s
