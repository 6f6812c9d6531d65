"""No message a bot receives names a card its seat could not know at that moment.

Random bots play matches of every preset at every player count the engine allows (plus knob
variants that change who sees what) through a real referee over gRPC, recording every
``PlayResponse``. Each match's replay holds the truth: every deck and every action. From it an
independent knowledge model (it never calls ``kozel.engine.observation``) replays each deal and
follows each seat's message stream: every event must be the next thing that truly happened,
every request must come exactly when the seat was truly asked, and every card code anywhere in a
message must be one the seat may know then:

- its own hand as dealt and as drawn, the trump indicator, removed cards;
- every face-up card played (leads, beats, declared combinations), its own face-down cards,
  and every discard when ``discard_visibility`` is ``open``;
- which hand holds a card only when that is public (RULES.md 9.7: the drawn indicator, face-up
  cards a mid-trick interruption returned, and returned discards when they are open);
- every card of a deal, and its deck order, once the deal has ended (DealEnd).

Hand sizes, the talon, points and tricks in a message must equal what the public plays and
draw counts give; request ids count the seat's own requests only; the seed appears nowhere
before MatchEnd. A self-test plants three leaks in the referee in turn (an opponent's card
listed as known, face-down cards shown in tricks, everyone's draws shown) and expects each to be
caught in a match that passes unpatched. ``KOZEL_LEAK_ROUNDS=N`` plays N matches per table.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import importlib.util
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message

from kozel.core.clock import Clock
from kozel.core.convert import (
    COMBO_TO_PB,
    KIND_TO_PB,
    action_from_pb,
    dict_to_struct,
    ruleset_from_pb,
)
from kozel.engine import PRESETS, ActionKind, Combo, Deal, Ruleset
from kozel.engine.cards import CARD_OF, CODES, FULL_DECK, SUITS, codes, points
from kozel.engine.deal import Declared, Drawn, Play, Returned, Trick
from kozel.engine.rules import DiscardVisibility
from kozel.server.app import start_referee
from kozel.server.config import ServerConfig
from kozel.server.replay.file import read_replay
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc, replay_pb2

from .rawbot import RawBot, reply, table_hello, wait_table

# Knob variants that change visibility or timing of information, on top of the presets.
VARIANTS: list[tuple[str, int, dict]] = [
    ("classic", 3, {"discard_visibility": "open"}),
    ("courtyard", 4, {"discard_visibility": "open"}),  # returned discards become public
    ("classic", 3, {"midtrick_interrupt": True, "special_effect": "lead_only"}),
    ("classic", 2, {"trump_mode": "random_middle", "draw_mode": "fill_each"}),
    ("money", 3, {"combos": "both"}),  # declared combinations that are also a Bura
]
ROUNDS = int(os.environ.get("KOZEL_LEAK_ROUNDS", "2"))  # matches per table (more for a soak)
ILLEGAL_RATE = 0.05  # answers preceded by a refused attempt (Rejection messages are checked too)
CARD = re.compile(r"[6789TJQKA][SCDH]")
CARD_IN_TEXT = re.compile(r"(?<![0-9A-Za-z])[6789TJQKA][SCDH](?![0-9A-Za-z])")


def tables() -> list[tuple[str, int, dict]]:
    """Every preset at every player count it allows, then the variants."""
    return [
        (name, n, {}) for name, rules in PRESETS.items() for n in rules.players_allowed
    ] + VARIANTS


# -- playing ---------------------------------------------------------------------------------


@dataclass
class Played:
    """One match as its bots saw it, and its replay."""

    preset: str
    players: int
    options: dict
    bots: list[RawBot]
    attempts: list[dict[int, set[str]]]  # per bot: cards it named in refused attempts, by request
    replay: replay_pb2.Replay


def _answer(attempts: dict[int, set[str]]) -> Callable:
    async def answer(bot: RawBot, req: rpb.DecisionRequest) -> list[rpb.ActionReply]:
        if req.request_id in attempts:  # the retry RawBot asks for: the answer is already sent
            return []
        out = []
        named: set[str] = set()
        if bot.rng.random() < ILLEGAL_RATE:  # a lead of a card not in hand, whatever is asked
            card = bot.rng.choice([c for c in CODES if c not in req.observation.hand])
            bad = rpb.ActionReply(match_id=req.match_id, request_id=req.request_id)
            bad.action.CopyFrom(pb.Action(kind=pb.ACTION_KIND_LEAD, cards=[card]))
            out.append(bad)
            named.add(card)
        attempts[req.request_id] = named
        return out + [reply(req, bot.rng.randrange(len(req.legal_actions)))]

    return answer


async def play(address: str, preset: str, players: int, options: dict, rnd: int) -> Played:
    """One match, the same every time: its seed, the bots' choices and the seating (bots join
    one after another) follow from the table and ``rnd``."""
    name = f"{preset} {players} {sorted(options.items())} {rnd}".encode()
    ruleset = pb.Ruleset(preset=preset, options=dict_to_struct(options))
    async with grpc.aio.insecure_channel(address) as channel:
        table = (
            await referee_pb2_grpc.RefereeServiceStub(channel).CreateTable(
                rpb.CreateTableRequest(
                    ruleset=ruleset, players=players, seed=hashlib.sha256(name).digest()
                )
            )
        ).table_id
    attempts: list[dict[int, set[str]]] = [{} for _ in range(players)]
    runs = []
    bots = []
    for i in range(players):
        bots.append(
            RawBot(
                address,
                f"leak-bot-{i}",
                hello=table_hello(f"leak-bot-{i}", table),
                answer=_answer(attempts[i]),
                seed=int.from_bytes(name) + i,
            )
        )
        runs.append(asyncio.create_task(bots[i].run()))
        while not bots[i].of("welcome"):
            await asyncio.sleep(0.005)
    result = await wait_table(address, table, timeout=600)
    await asyncio.wait_for(asyncio.gather(*runs), 60)
    return Played(preset, players, options, bots, attempts, read_replay(result.replay_path))


async def play_all(
    replay_dir: Path, matches: list[tuple[str, int, dict]], rounds: int = 1
) -> list[Played]:
    """Play ``rounds`` matches of each table at once on an in-process referee (real gRPC on a
    loopback port)."""
    referee = await start_referee(
        ServerConfig(
            listen="127.0.0.1:0",
            replay_dir=replay_dir,
            clock=Clock(move_ms=60_000, bank_ms=60_000, max_retries=2),
            max_tables_per_peer=1024,
            max_idle_rpcs_per_peer=1024,
        )
    )  # every table from one address
    try:
        return await asyncio.gather(
            *(play(referee.address, p, n, o, r) for r in range(rounds) for p, n, o in matches)
        )
    finally:
        await referee.stop(0)


# -- the truth, from the replay --------------------------------------------------------------


@dataclass
class DealTruth:
    """One deal replayed: its final state (with the whole log) and, before each step, the log
    length, every hand and the talon size."""

    deal: Deal
    dealt: tuple[int, ...]
    before: list[tuple[int, tuple[int, ...], int]] = field(default_factory=list)


@dataclass
class Truth:
    rules: Ruleset
    deals: list[DealTruth]
    asked: dict[tuple[int, int], tuple[int, int]]  # (seat, request id) -> (deal, step)


def truth_of(replay: replay_pb2.Replay) -> Truth:
    rules = ruleset_from_pb(replay.ruleset)
    deals, asked = [], {}
    for d in replay.deals:
        assert not d.voided
        deal = Deal.start(
            rules,
            replay.players,
            [CARD_OF[c] for c in d.deck],
            d.dealer,
            active=list(d.active_seats),
            first_leader=d.first_leader,
            trump_index=d.trump_index if d.HasField("trump_index") else None,
        )
        dt = DealTruth(deal, tuple(deal.hands))
        for k, step in enumerate(d.steps):
            dt.before.append((len(deal.log), tuple(deal.hands), deal.talon_left))
            asked[(step.seat, step.request_id)] = (d.index, k)
            kind, cards, combo = action_from_pb(step.action)
            deal.play(step.seat, kind, cards, combo)
        assert deal.over
        deals.append(dt)
    return Truth(rules, deals, asked)


# -- what one seat may know ------------------------------------------------------------------


class Knowledge:
    """What ``seat`` may know of one deal, updated entry by entry from the deal's true log."""

    def __init__(self, seat: int, truth: DealTruth, rules: Ruleset) -> None:
        deal = truth.deal
        self.seat = seat
        self.deal = deal
        self.open = rules.discard_visibility == DiscardVisibility.OPEN
        self.cards = (FULL_DECK & ~rules.deck) | truth.dealt[seat] | 1 << deal.indicator
        self.held = [0] * deal.players  # cards everyone knows are in each hand
        self.count = [4 if s in deal.active else 0 for s in range(deal.players)]
        self.talon = rules.deck_size - 4 * len(deal.active)
        self.indicator_drawn = False
        self.tricks: list[Trick] = []
        self.trick: list[Play] = []  # the trick in play
        self.trick_combo: Combo | None = None  # the combination led in it
        self._declared: Combo | None = None  # a combination declared, about to be led
        self.won = [0] * deal.players
        self.pos = 0  # log entries taken in

    def sees(self, p: Play) -> bool:
        return p.kind is not ActionKind.DISCARD or self.open or p.seat == self.seat

    def seen(self, plays: list[Play] | tuple[Play, ...]) -> int:
        return sum(p.cards for p in plays if self.sees(p))

    def next_event(self) -> Play | Trick | Drawn | Declared:
        """Take in the next entry that an event reports (returned tricks have no event)."""
        log = self.deal.log
        while True:
            assert self.pos < len(log), "an event about nothing that happened"
            entry = log[self.pos]
            self.pos += 1
            self._take(entry)
            if not isinstance(entry, Returned):
                return entry

    def _take(self, entry: object) -> None:
        if isinstance(entry, Play):
            self.count[entry.seat] -= entry.cards.bit_count()
            self.held[entry.seat] &= ~entry.cards
            if self.sees(entry):
                self.cards |= entry.cards
            if entry.kind is ActionKind.LEAD:
                self.trick_combo, self._declared = self._declared, None
            self.trick.append(entry)
        elif isinstance(entry, Trick):
            self.tricks.append(entry)
            self.won[entry.winner] += 1
            self.trick = []
        elif isinstance(entry, Drawn):
            for s, m in enumerate(entry.cards):
                self.count[s] += m.bit_count()
                self.talon -= m.bit_count()
                if m >> self.deal.indicator & 1:
                    self.held[s] |= m & 1 << self.deal.indicator
                    self.indicator_drawn = True
            self.cards |= entry.cards[self.seat]
        elif isinstance(entry, Declared):
            self.cards |= entry.cards  # it is led face up at once
            self._declared = entry.combo
        elif isinstance(entry, Returned):
            for p in entry.plays:
                self.count[p.seat] += p.cards.bit_count()
                if p.kind is not ActionKind.DISCARD or self.open:
                    self.held[p.seat] |= p.cards
            self.trick = []

    def seen_points(self, seat: int) -> int:
        return sum(points(self.seen(t.plays)) for t in self.tricks if t.winner == seat)


# -- checking one bot's messages -------------------------------------------------------------


def texts(msg: Message) -> list[tuple[str, str]]:
    """Every non-empty string anywhere in a message (map keys and values too), with the name of
    its field."""
    out: list[tuple[str, str]] = []

    def walk(m: Message) -> None:
        for name, repeated, kind in _plan(m.DESCRIPTOR):
            if kind == "msg" and not repeated and not m.HasField(name):
                continue
            value = getattr(m, name)
            if kind == "map":
                for key, item in value.items():
                    out.append((name, str(key)))
                    if isinstance(item, Message):
                        walk(item)
                    else:
                        out.append((name, str(item)))
            elif kind == "msg":
                for item in value if repeated else (value,):
                    walk(item)
            else:
                out.extend((name, item) for item in (value if repeated else (value,)) if item)

    walk(msg)
    return out


_PLANS: dict[str, tuple[tuple[str, bool, str], ...]] = {}


def _plan(desc: Any) -> tuple[tuple[str, bool, str], ...]:  # a message Descriptor (Python or upb)
    """The fields of a message type that may hold strings: (name, repeated, str|msg|map)."""
    plan = _PLANS.get(desc.full_name)
    if plan is None:
        fields = []
        for fd in desc.fields:
            if fd.type == fd.TYPE_STRING:
                fields.append((fd.name, fd.is_repeated, "str"))
            elif fd.message_type is not None:
                kind = "map" if fd.message_type.GetOptions().map_entry else "msg"
                fields.append((fd.name, fd.is_repeated, kind))
        plan = _PLANS[desc.full_name] = tuple(fields)
    return plan


def named_cards(strings: list[tuple[str, str]]) -> set[str]:
    """Card codes among a message's strings: whole fields, or inside sentences (``message``)."""
    out: set[str] = set()
    for name, value in strings:
        if CARD.fullmatch(value):
            out.add(value)
        elif name == "message":
            out.update(CARD_IN_TEXT.findall(value))
    return out


def mask(cards: Iterable[str]) -> int:
    return sum(1 << CARD_OF[c] for c in cards)


class SeatCheck:
    """Follows one bot's messages against the truth; raises AssertionError on the first leak
    or on any message that does not match what happened."""

    def __init__(self, played: Played, index: int, truth: Truth) -> None:
        self.bot = played.bots[index]
        self.attempts = played.attempts[index]
        self.truth = truth
        self.seed = played.replay.seed
        self.seat = self.bot.seat
        self.k: Knowledge | None = None
        self.deal_index = -1
        self.allowed = FULL_DECK & ~truth.rules.deck  # no deal yet: removed cards only
        self.requests = 0
        self.where = ""

    def run(self) -> int:
        for i, msg in enumerate(self.bot.received):
            self.where = f"seat {self.seat}, message {i} ({msg.WhichOneof('message')})"
            self.message(msg)
        steps = [r for (s, r) in self.truth.asked if s == self.seat]
        assert self.requests == len(steps), f"seat {self.seat}: requests lost or invented"
        return len(self.bot.received)

    def leak(self, ok: bool, what: str) -> None:
        if not ok:
            raise AssertionError(f"LEAK at {self.where}: {what}")

    def message(self, msg: rpb.PlayResponse) -> None:
        which = msg.WhichOneof("message")
        body = getattr(msg, which)
        extra: set[str] = set()
        strings = texts(msg)
        if which != "match_end":
            self.leak(
                self.seed not in msg.SerializeToString()
                and not any(self.seed.hex() in v.lower() for _, v in strings),
                "the match seed",
            )
        if which == "match_start":
            assert body.seat == self.seat
            assert body.seed_commitment == hashlib.sha256(self.seed).hexdigest()
        elif which == "deal_start":
            self.deal_start(body)
        elif which == "event":
            assert body.deal_index == self.deal_index, self.where
            if body.WhichOneof("kind") != "notice":
                self.event(body)
        elif which == "decision":
            self.decision(body)
        elif which == "rejection":
            extra = self.attempts.get(body.request_id, set())
        elif which == "deal_end":
            self.deal_end(body)
        elif which == "match_end":
            assert body.seed == self.seed
        allowed = self.k.cards if self.k is not None else self.allowed
        bad = {c for c in named_cards(strings) if not allowed >> CARD_OF[c] & 1} - extra
        self.leak(not bad, f"names {sorted(bad)}, which seat {self.seat} could not know")

    def deal_start(self, body: rpb.DealStart) -> None:
        self.deal_index = body.deal_index
        dt = self.truth.deals[body.deal_index]
        self.k = Knowledge(self.seat, dt, self.truth.rules)
        assert list(body.hand) == codes(dt.dealt[self.seat]), self.where
        assert body.trump_card == CODES[dt.deal.indicator] and body.dealer == dt.deal.dealer
        assert list(body.active_seats) == list(dt.deal.active)

    def deal_end(self, body: rpb.DealEnd) -> None:
        assert body.deal_index == self.deal_index and not body.voided
        deal = self.truth.deals[body.deal_index].deal
        assert self.k is not None
        rest = deal.log[self.k.pos :]
        assert all(isinstance(e, Returned) for e in rest), f"{self.where}: events lost: {rest}"
        self.leak(list(body.deck) == codes_in_order(deal.deck), "a deck other than this deal's")
        self.k = None
        self.allowed = FULL_DECK  # every card of the deal is shown now

    def event(self, body: rpb.Event) -> None:
        k = self.k
        assert k is not None
        kind = body.WhichOneof("kind")
        entry = k.next_event()
        expected = {Play: "played", Trick: "trick_taken", Drawn: "drawn", Declared: "declared"}
        assert expected[type(entry)] == kind, f"{self.where}: {kind} but truly {entry}"
        if isinstance(entry, Play):
            self.play(body.played, entry)
        elif isinstance(entry, Trick):
            self.trick(body.trick_taken.trick, entry.plays, entry.leader, entry.winner, entry.combo)
        elif isinstance(entry, Drawn):
            d = body.drawn
            own = codes(entry.cards[self.seat])
            self.leak(set(d.cards) <= set(own), f"drew {list(d.cards)}, truly {own}")
            assert list(d.cards) == own, self.where
            assert list(d.counts) == [m.bit_count() for m in entry.cards], self.where
            assert d.talon == k.talon, self.where
        else:
            dec = body.declared
            assert (dec.seat, dec.combo, list(dec.cards)) == (
                entry.seat,
                COMBO_TO_PB[entry.combo],
                codes(entry.cards),
            ), self.where

    def play(self, view: pb.Play, p: Play) -> None:
        assert (view.seat, view.kind, view.count, view.forced) == (
            p.seat,
            KIND_TO_PB[p.kind],
            p.cards.bit_count(),
            p.forced,
        ), self.where
        assert self.k is not None
        if self.k.sees(p):
            assert list(view.cards) == codes(p.cards), self.where
        else:
            self.leak(not view.cards, f"seat {p.seat}'s face-down cards {list(view.cards)}")

    def trick(
        self,
        view: pb.Trick,
        plays: list[Play] | tuple[Play, ...],
        leader: int,
        winner: int,
        combo: Combo | None,
    ) -> None:
        assert (view.leader, view.winner, view.combo) == (leader, winner, COMBO_TO_PB[combo]), (
            self.where
        )
        assert len(view.plays) == len(plays), self.where
        for v, p in zip(view.plays, plays):
            self.play(v, p)
        assert self.k is not None
        self.leak(
            view.known_points == points(self.k.seen(plays)),
            f"trick points {view.known_points} count cards it cannot see",
        )

    def decision(self, body: rpb.DecisionRequest) -> None:
        k = self.k
        assert k is not None
        self.requests += 1
        self.leak(body.request_id == self.requests, "request ids that count other seats'")
        deal_index, step = self.truth.asked[(self.seat, body.request_id)]
        assert deal_index == self.deal_index, self.where
        log_len, hands, talon = self.truth.deals[deal_index].before[step]
        assert k.pos == log_len, f"{self.where}: asked at the wrong moment ({k.pos}/{log_len})"
        obs = body.observation
        deal = k.deal
        assert (obs.seat, obs.players, obs.dealer, obs.trump, obs.trump_card) == (
            self.seat,
            deal.players,
            deal.dealer,
            SUITS[deal.trump],
            CODES[deal.indicator],
        )
        assert list(obs.hand) == codes(hands[self.seat]), self.where
        assert obs.talon == k.talon == talon and obs.trump_card_drawn == k.indicator_drawn
        assert not obs.deal_over
        for j, sv in enumerate(obs.seats):
            assert sv.seat == j and sv.active == (j in deal.active), self.where
            self.leak(sv.hand_size == k.count[j], f"seat {j}'s hand size {sv.hand_size}")
            assert k.count[j] == hands[j].bit_count()  # public counts are the truth
            self.leak(
                not mask(sv.known_cards) & ~k.held[j],
                f"seat {j}'s known_cards {list(sv.known_cards)} are not public",
            )
            self.leak(
                sv.tricks_won == k.won[j] and sv.known_points == k.seen_points(j),
                f"seat {j}'s tricks or points",
            )
        assert len(obs.tricks) == len(k.tricks), self.where
        for view, t in zip(obs.tricks, k.tricks):
            self.trick(view, t.plays, t.leader, t.winner, t.combo)
        if k.trick:
            beats = [p.seat for p in k.trick if p.kind is ActionKind.BEAT]
            self.trick(
                obs.trick,
                k.trick,
                k.trick[0].seat,
                beats[-1] if beats else k.trick[0].seat,
                k.trick_combo,
            )
        else:
            assert not obs.trick.plays, self.where
        self.leak(list(obs.to_act) == [self.seat], f"to_act {list(obs.to_act)}")
        if body.kind == pb.DECISION_KIND_LEAD:
            others = [c for s, c in enumerate(k.count) if s != self.seat and c]
            self.leak(obs.lead_cap == min([4, *others]), f"lead cap {obs.lead_cap}")


def codes_in_order(cards: tuple[int, ...]) -> list[str]:
    return [CODES[c] for c in cards]


def check_match(played: Played) -> int:
    """Check every bot of a match; returns the number of messages checked."""
    truth = truth_of(played.replay)
    result = played.replay.result
    assert not result.forfeits and not any(result.timeouts), result
    return sum(SeatCheck(played, i, truth).run() for i in range(played.players))


# -- the tests -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def matches(tmp_path_factory: pytest.TempPathFactory) -> list[Played]:
    """``ROUNDS`` matches of every table, every preset and player count among them."""
    return asyncio.run(play_all(tmp_path_factory.mktemp("replays"), tables(), ROUNDS))


def _table_id(table: tuple[str, int, dict]) -> str:
    preset, players, options = table
    return f"{preset}-{players}" + "".join(f"-{k}={v}" for k, v in sorted(options.items()))


@pytest.mark.slow
def test_every_preset_and_player_count_is_covered(matches: list[Played]) -> None:
    covered = {(m.preset, m.players) for m in matches}
    assert covered >= {(name, n) for name, r in PRESETS.items() for n in r.players_allowed}
    kinds = {m.WhichOneof("message") for p in matches for b in p.bots for m in b.received}
    assert {"decision", "event", "rejection", "deal_end", "match_end"} <= kinds
    events = {
        m.event.WhichOneof("kind")
        for p in matches
        for b in p.bots
        for m in b.received
        if m.WhichOneof("message") == "event"
    }
    assert {"played", "trick_taken", "drawn", "declared"} <= events
    log = [e for p in matches for d in truth_of(p.replay).deals for e in d.deal.log]
    assert any(isinstance(e, Returned) for e in log), "no mid-trick interruption happened"
    assert any(isinstance(e, Play) and e.forced for e in log), "no auto-win combination"


@pytest.mark.slow
@pytest.mark.parametrize("table", tables(), ids=_table_id)
def test_no_message_reveals_a_card_its_seat_could_not_know(
    matches: list[Played], table: tuple[str, int, dict]
) -> None:
    played = [m for m in matches if (m.preset, m.players, m.options) == table]
    assert len(played) == ROUNDS
    assert sum(check_match(m) for m in played) > 0


def _leaky_observer(leak: Callable) -> Callable:
    """The protocol core's ``SeatObserver`` with ``leak(observation, deal, seat)`` applied to every
    observation it returns."""

    def make(original: type) -> type:
        class Leaky:  # a wrapper: the compiled engine's classes cannot be subclassed here
            def __init__(self, deal: Deal, observer: int) -> None:
                self.inner = original(deal, observer)
                self.deal, self.observer = deal, observer

            def observe(self):  # noqa: ANN202
                return leak(self.inner.observe(), self.deal, self.observer)

        return Leaky

    return make


def _known_card(obs, deal: Deal, seat: int):  # noqa: ANN001, ANN202
    """Also list one card of the next seat's hand as publicly known."""
    other = next((s for s in range(1, deal.players) if deal.hands[(seat + s) % deal.players]), None)
    if other is None:
        return obs
    j = (seat + other) % deal.players
    card = codes(deal.hands[j] & -deal.hands[j])[0]
    seats = list(obs.seats)
    seats[j] = dataclasses.replace(seats[j], known_cards=(*seats[j].known_cards, card))
    return dataclasses.replace(obs, seats=tuple(seats))


def _face_down(obs, deal: Deal, seat: int):  # noqa: ANN001, ANN202
    """Finished tricks show every face-down card."""
    from kozel.engine.observation import full_view

    return dataclasses.replace(obs, tricks=full_view(deal).tricks)


def _leaky_draws(original: Callable) -> Callable:
    """``event_views`` whose draw events show what every seat drew."""

    def event_views(deal: Deal, start: int, observer: object) -> list:
        views = original(deal, start, observer)
        entries = [e for e in deal.log[start:] if not isinstance(e, Returned)]
        return [
            dataclasses.replace(v, cards=tuple(codes(sum(e.cards)))) if isinstance(e, Drawn) else v
            for v, e in zip(views, entries)
        ]

    return event_views


PLANTS = {
    "known-cards": ("SeatObserver", _leaky_observer(_known_card)),
    "face-down": ("SeatObserver", _leaky_observer(_face_down)),
    "draws": ("event_views", _leaky_draws),
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_planted_leak_is_caught(
    matches: list[Played], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plant: str
) -> None:
    """The referee is patched to leak; the very match that passes unpatched (same seed, same
    choices) must fail the check."""
    core = _python_protocol(monkeypatch)  # where the referee builds what a seat is sent
    name, make = PLANTS[plant]
    monkeypatch.setattr(core, name, make(getattr(core, name)))
    (leaky,) = asyncio.run(play_all(tmp_path, [("classic", 3, {})]))
    honest = next(m for m in matches if (m.preset, m.players, m.options) == ("classic", 3, {}))
    assert _actions(leaky) == _actions(honest)
    with pytest.raises(AssertionError, match="LEAK"):
        check_match(leaky)


def _python_protocol(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``kozel.core.protocol`` loaded from its source, and the referee's runner made to use
    it: the compiled one (``kozel.core.native``) calls the engine's functions directly, so a
    patch of its module's names would never reach them."""
    import kozel.server.runner as runner
    from kozel.core import native

    spec = importlib.util.spec_from_file_location(
        "kozel.core._python_protocol", native.PACKAGE / "protocol.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(runner, "MatchProtocol", module.MatchProtocol)
    return module


def _actions(played: Played) -> list[tuple[int, int, bytes]]:
    return [
        (s.seat, s.request_id, s.action.SerializeToString())
        for d in played.replay.deals
        for s in d.steps
    ]
