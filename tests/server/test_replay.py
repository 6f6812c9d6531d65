"""Replays: built from real engine matches, written, read back, verified, tampered with."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kozel.core.convert import action_to_pb
from kozel.core.steps import StepMeta, encoded_steps
from kozel.engine.cards import CODES, codes
from kozel.engine.deal import Deal
from kozel.engine.match import Match
from kozel.engine.players import random_action
from kozel.engine.rules import Ruleset
from kozel.engine.shuffle import shuffled_deck
from kozel.server.replay.build import build_replay, result_to_pb
from kozel.server.replay.file import (
    ReplayError,
    decode_replay,
    encode_replay,
    read_replay,
    write_replay,
)
from kozel.server.replay.render import replay_to_text
from kozel.server.replay.verify import verify_replay
from kozel.v1 import game_pb2, replay_pb2

ROOT = Path(__file__).resolve().parents[2]
KOZEL = [sys.executable, "-m", "kozel.cli.main"]
NAMES = ["Ann", "Bob", "Cid", "Dee", "Eve"]
CLOCK = game_pb2.TimeControl(
    move_ms=2000, bank_ms=30000, max_strikes=3, max_retries=2, grace_ms=5000
)
T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@dataclass
class Played:
    """A match played by random players, with what the referee would have noted."""

    match: Match
    steps: list[list[StepMeta]] = field(default_factory=list)
    forfeits: list[game_pb2.Forfeit] = field(default_factory=list)
    timeouts: list[int] = field(default_factory=list)
    rejections: list[int] = field(default_factory=list)
    aborted: bool = False


def play(
    preset: str,
    players: int,
    seed: int,
    *,
    forfeit_at: tuple[int, int] | None = None,
    abort_at: tuple[int, int] | None = None,
) -> Played:
    """Play random legal actions; ``forfeit_at``/``abort_at`` = (deal, actions into it)."""
    match = Match(Ruleset.preset(preset), players, seed)
    rng = random.Random(seed)
    p = Played(match, timeouts=[0] * players, rejections=[0] * players)
    request = 0
    while not match.over:
        i = match.deal_index
        while len(p.steps) <= i:
            p.steps.append([])
        where = (i, len(match.deal.history))
        if where == abort_at:
            p.aborted = True
            break
        seat = match.deal.to_act[0]
        if where == forfeit_at:
            p.forfeits.append(
                game_pb2.Forfeit(seat=seat, deal_index=i, reason=game_pb2.FORFEIT_REASON_STRIKES)
            )
            match.forfeit(seat)
            continue
        request += 1
        meta = StepMeta(
            request_id=request, think_ms=rng.randrange(5, 900), timeout=rng.random() < 0.05
        )
        if rng.random() < 0.05:
            meta.rejections.append(
                replay_pb2.ReplayRejection(
                    code=game_pb2.ERROR_CODE_CARD_NOT_IN_HAND,
                    message="ZZ is not in your hand",
                    attempted=game_pb2.Action(kind=game_pb2.ACTION_KIND_LEAD, cards=["AH"]),
                )
            )
        p.timeouts[seat] += meta.timeout
        p.rejections[seat] += len(meta.rejections)
        match.apply(seat, random_action(match.deal, seat, rng))
        p.steps[i].append(meta)
    return p


def replay_of(p: Played) -> replay_pb2.Replay:
    result = result_to_pb(
        p.match,
        forfeits=p.forfeits,
        timeouts=p.timeouts,
        rejections=p.rejections,
        aborted=p.aborted,
    )
    return build_replay(
        p.match,
        match_id="m-1",
        names=NAMES[: p.match.players],
        time_control=CLOCK,
        steps=p.steps,
        result=result,
        started_at=T0,
        ended_at=T0 + timedelta(minutes=7),
        table_id="t-9",
    )


def copy(replay: replay_pb2.Replay) -> replay_pb2.Replay:
    out = replay_pb2.Replay()
    out.CopyFrom(replay)
    return out


def kozel(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KOZEL, *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


TABLES = [
    ("classic", 2, 11),
    ("classic", 3, 12),
    ("classic", 4, 13),
    ("courtyard", 4, 14),
    ("money", 3, 15),
    ("money", 5, 16),
    ("balkan", 3, 17),
    ("classic-35", 3, 18),
]


@pytest.fixture(scope="module")
def classic3() -> Played:
    return play("classic", 3, 12)


@pytest.fixture(scope="module")
def forfeited() -> Played:
    return play("classic", 3, 21, forfeit_at=(1, 4))


@pytest.fixture(scope="module")
def aborted() -> Played:
    return play("classic", 4, 22, abort_at=(1, 5))


# -- building and verifying --------------------------------------------------------------------


@pytest.mark.parametrize(("preset", "players", "seed"), TABLES)
def test_finished_matches_verify(preset: str, players: int, seed: int) -> None:
    p = play(preset, players, seed)
    replay = replay_of(p)
    assert verify_replay(replay) == []
    assert len(replay.deals) == len(p.match.records) == replay.result.deals
    assert [len(d.steps) for d in replay.deals] == [len(r.actions) for r in p.match.records]
    assert replay.result.reason != game_pb2.MATCH_END_REASON_ABORTED
    assert replay.result.draw == (p.match.winner is None)
    if p.match.rules.is_money:
        assert list(replay.result.chips) == p.match.chips and not replay.result.penalty_totals
        assert replay.result.reason == game_pb2.MATCH_END_REASON_FIXED_DEALS
    else:
        assert list(replay.result.penalty_totals) == p.match.board.totals
        assert not replay.result.chips
        assert all(len(d.penalties) == p.match.board.n_sides for d in replay.deals)


def test_header_and_steps_carry_the_referee_notes(classic3: Played) -> None:
    replay = replay_of(classic3)
    assert (replay.format_version, replay.protocol_version) == (1, 1)
    assert replay.match_id == "m-1" and replay.table_id == "t-9"
    assert [(s.seat, s.name, s.side) for s in replay.seats] == [
        (0, "Ann", 0),
        (1, "Bob", 1),
        (2, "Cid", 2),
    ]
    assert replay.seed == classic3.match.seed
    assert replay.seed_commitment == hashlib.sha256(classic3.match.seed).hexdigest()
    assert replay.ruleset.preset == "classic"
    assert replay.started_at.ToDatetime(tzinfo=UTC) == T0
    flat = [m for deal in classic3.steps for m in deal]
    got = [s for d in replay.deals for s in d.steps]
    assert [s.request_id for s in got] == [m.request_id for m in flat]
    assert [s.think_ms for s in got] == [m.think_ms for m in flat]
    assert sum(s.timeout for s in got) == sum(classic3.timeouts) > 0
    assert sum(len(s.rejections) for s in got) == sum(classic3.rejections) > 0


def test_steps_are_byte_for_byte_what_protobuf_writes(classic3: Played) -> None:
    """The steps are assembled from memoised encodings; they must be protobuf's own."""
    replay = replay_of(classic3)
    for deal, record, metas in zip(replay.deals, classic3.match.records, classic3.steps):
        expected = replay_pb2.ReplayDeal(
            steps=[
                replay_pb2.ReplayStep(
                    seat=seat,
                    action=action_to_pb(action),
                    request_id=m.request_id,
                    think_ms=m.think_ms,
                    timeout=m.timeout,
                    rejections=m.rejections,
                )
                for (seat, action), m in zip(record.actions, metas)
            ]
        )
        assert encoded_steps(record.actions, metas) == expected.SerializeToString()
        assert list(deal.steps) == list(expected.steps)


def test_decks_follow_from_the_seed(classic3: Played) -> None:
    replay = replay_of(classic3)
    rules = Ruleset.preset("classic")
    for d in replay.deals:
        assert list(d.deck) == [CODES[c] for c in shuffled_deck(replay.seed, d.index, rules.deck)]
    assert len({tuple(d.deck) for d in replay.deals}) == len(replay.deals)


def test_the_documented_check_value_deck() -> None:
    """RULES.md section 9.16: seed of 32 zero bytes, deck 0 begins JH TH 9S AC TC JC 8D QH."""
    p = play("classic", 4, 0)
    replay = replay_of(p)
    assert list(replay.deals[0].deck[:8]) == ["JH", "TH", "9S", "AC", "TC", "JC", "8D", "QH"]
    assert replay.deals[0].dealer == 1
    assert verify_replay(replay) == []


def test_random_middle_records_the_trump_index() -> None:
    replay = replay_of(play("courtyard", 4, 14))
    assert all(d.HasField("trump_index") for d in replay.deals)
    assert not any(d.HasField("trump_index") for d in replay_of(play("classic", 2, 11)).deals)


def test_declarations_and_midtrick_returns_verify() -> None:
    """Courtyard seed 101 has mid-trick declarations that send played cards back."""
    replay = replay_of(play("courtyard", 4, 101))
    assert verify_replay(replay) == []
    declares = [
        (i, k)
        for i, d in enumerate(replay.deals)
        for k, s in enumerate(d.steps)
        if s.action.kind == game_pb2.ACTION_KIND_DECLARE
    ]
    assert declares
    assert "the cards played to the trick go back to their owners" in replay_to_text(replay)
    i, k = declares[0]
    step = replay.deals[i].steps[k]
    assert len(step.action.cards) == 4  # a declaration lists the whole hand
    wrong_combo = copy(replay)
    wrong_combo.deals[i].steps[k].action.combo = game_pb2.COMBO_MOSCOW
    problems = verify_replay(wrong_combo)
    assert problems[0].startswith(
        f"deal {i} step {k + 1}: the engine refuses seat {step.seat}'s declare moscow"
    )
    assert "NOT_A_COMBINATION" in problems[0]
    wrong_cards = copy(replay)
    wrong_cards.deals[i].steps[k].action.cards[0] = "6S" if step.action.cards[0] != "6S" else "7S"
    problems = verify_replay(wrong_cards)
    assert problems[0].startswith(f"deal {i} step {k + 1}: the engine refuses seat {step.seat}")
    assert "whole hand" in problems[0]


def test_forfeit_voids_its_deal(forfeited: Played) -> None:
    replay = replay_of(forfeited)
    assert verify_replay(replay) == []
    (f,) = replay.result.forfeits
    voided = replay.deals[1]
    assert voided.voided and len(voided.steps) == 4 and not voided.penalties
    assert f.deal_index == 1 and f.seat in voided.active_seats
    assert f.seat not in replay.deals[2].active_seats
    assert len(replay.deals[2].active_seats) == 2
    assert f.seat in replay.result.eliminated_sides
    assert "forfeited in deal 1" in replay_to_text(replay)


def test_forfeit_that_ends_the_match() -> None:
    p = play("classic", 2, 31, forfeit_at=(0, 3))
    replay = replay_of(p)
    assert replay.result.reason == game_pb2.MATCH_END_REASON_FORFEIT
    assert len(replay.deals) == 1 and replay.deals[0].voided
    assert replay.result.winner_side == 1 - replay.result.forfeits[0].seat
    assert verify_replay(replay) == []


def test_a_missing_forfeit_is_detected(forfeited: Played) -> None:
    replay = replay_of(forfeited)
    del replay.result.forfeits[:]
    problems = verify_replay(replay)
    assert problems == ["deal 1 is marked voided but the result lists no forfeit in it"]


def test_aborted_match_keeps_the_deal_in_play(aborted: Played) -> None:
    replay = replay_of(aborted)
    assert replay.result.reason == game_pb2.MATCH_END_REASON_ABORTED and replay.result.draw
    assert replay.result.deals == 1 and len(replay.deals) == 2
    last = replay.deals[-1]
    assert len(last.steps) == 5 and not last.voided
    assert not last.card_points and not last.penalties and not last.tricks
    assert list(last.active_seats) == [0, 1, 2, 3]
    assert verify_replay(replay) == []
    assert "(unfinished)" in replay_to_text(replay)


def test_an_unfinished_deal_needs_an_aborted_result(aborted: Played) -> None:
    replay = replay_of(aborted)
    replay.result.reason = game_pb2.MATCH_END_REASON_LIMIT
    problems = verify_replay(replay)
    assert problems and problems[0] == "deal 1 is not over after its 5 steps"


def test_steps_must_align_with_actions(classic3: Played) -> None:
    steps = [list(d) for d in classic3.steps]
    steps[0].pop()
    result = result_to_pb(classic3.match, forfeits=[], timeouts=[], rejections=[])
    with pytest.raises(ValueError, match="deal 0 has"):
        build_replay(
            classic3.match,
            match_id="m",
            names=NAMES[:3],
            time_control=CLOCK,
            steps=steps,
            result=result,
            started_at=T0,
            ended_at=T0,
        )


# -- tampering ---------------------------------------------------------------------------------


def test_changed_deck_card_is_detected(classic3: Played) -> None:
    replay = replay_of(classic3)
    deck = replay.deals[0].deck
    deck[0], deck[1] = deck[1], deck[0]
    problems = verify_replay(replay)
    assert len(problems) == 1
    assert problems[0].startswith("deal 0: the deck does not follow from the seed (card 0 is ")


def test_changed_action_is_detected(classic3: Played) -> None:
    replay = replay_of(classic3)
    step = replay.deals[0].steps[0]
    assert step.action.kind == game_pb2.ACTION_KIND_LEAD
    other = next(c for c in replay.deals[0].deck if c not in _first_hand(replay, 0, step.seat))
    step.action.cards[:] = [other]
    problems = verify_replay(replay)
    assert len(problems) == 1
    assert problems[0].startswith(
        f"deal 0 step 1: the engine refuses seat {step.seat}'s lead {other} (CARD_NOT_IN_HAND"
    )


def test_changed_seat_is_detected(classic3: Played) -> None:
    replay = replay_of(classic3)
    step = replay.deals[2].steps[3]
    step.seat = (step.seat + 1) % 3
    problems = verify_replay(replay)
    assert problems and problems[0].startswith("deal 2 step 4: the engine refuses seat")


def test_changed_penalty_is_detected(classic3: Played) -> None:
    replay = replay_of(classic3)
    replay.deals[0].penalties[0] += 2
    problems = verify_replay(replay)
    assert len(problems) == 1
    assert problems[0].startswith("deal 0: the penalties are recorded as ")
    assert "the engine gives" in problems[0]


def test_changed_seed_breaks_the_commitment(classic3: Played) -> None:
    replay = replay_of(classic3)
    replay.seed = bytes(32)
    problems = verify_replay(replay)
    assert problems[0].startswith("the seed's SHA-256 is ")
    assert any("the deck does not follow from the seed" in p for p in problems)


def test_changed_seed_with_matching_commitment_breaks_the_decks(classic3: Played) -> None:
    replay = replay_of(classic3)
    replay.seed = bytes(range(32))
    replay.seed_commitment = hashlib.sha256(replay.seed).hexdigest()
    problems = verify_replay(replay)
    assert problems and problems[0].startswith("deal 0: ")
    assert "follow from the seed" in problems[0] or "the seed gives" in problems[0]


def test_changed_result_is_detected(classic3: Played) -> None:
    replay = replay_of(classic3)
    totals = replay.result.penalty_totals
    totals[0] += 1
    replay.result.winner_side = (replay.result.winner_side + 1) % 3
    problems = verify_replay(replay)
    assert len(problems) == 2
    assert problems[0].startswith("the result's winner_side is recorded as ")
    assert problems[1].startswith("the result's penalty_totals is recorded as ")


def test_changed_money_result_is_detected() -> None:
    replay = replay_of(play("money", 3, 15))
    replay.result.chips[0] += 1
    replay.deals[3].pot_winners[:] = [(replay.deals[3].pot_winners[0] + 1) % 3]
    problems = verify_replay(replay)
    assert any(p.startswith("deal 3: the pot winners are recorded as ") for p in problems)
    assert any(p.startswith("the result's chips is recorded as ") for p in problems)


def test_extra_and_missing_deals_are_detected(classic3: Played) -> None:
    replay = replay_of(classic3)
    short = copy(replay)
    del short.deals[-1]
    assert any("is not over after the replay's" in p for p in verify_replay(short))
    long = copy(replay)
    long.deals.add().CopyFrom(replay.deals[-1])
    n = len(replay.deals)
    assert verify_replay(long) == [f"deal {n}: the match was already over after deal {n - 1}"]


def test_timeout_counts_must_cover_the_steps(classic3: Played) -> None:
    replay = replay_of(classic3)
    seat = next(s for s, t in enumerate(replay.result.timeouts) if t)
    replay.result.timeouts[seat] = 0
    problems = verify_replay(replay)
    assert len(problems) == 1 and problems[0].startswith(
        f"the result counts 0 timeouts for seat {seat}, but its steps show "
    )


def _first_hand(replay: replay_pb2.Replay, deal: int, seat: int) -> list[str]:
    """The hand ``seat`` was dealt in a deal, dealt again by the engine."""
    d = replay.deals[deal]
    start = Deal.start(
        Ruleset.preset(replay.ruleset.preset),
        replay.players,
        [CODES.index(c) for c in d.deck],
        d.dealer,
        active=list(d.active_seats),
    )
    return codes(start.hands[seat])


# -- files -------------------------------------------------------------------------------------


def test_write_and_read_round_trip(tmp_path: Path, classic3: Played) -> None:
    replay = replay_of(classic3)
    path = tmp_path / "deep" / "folder" / "m-1.kzr"
    size = write_replay(path, replay)
    assert size == path.stat().st_size > 0
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    assert read_replay(path) == replay
    assert decode_replay(encode_replay(replay)) == replay
    assert sorted(os.listdir(path.parent)) == ["m-1.kzr"]


def test_write_replaces_atomically(
    tmp_path: Path, classic3: Played, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.kzr"
    first = replay_of(classic3)
    write_replay(path, first)
    second = copy(first)
    second.match_id = "m-2"

    def broken(src: str, dst: str) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk gone"):
        write_replay(path, second)
    monkeypatch.undo()
    assert read_replay(path).match_id == "m-1"
    assert os.listdir(tmp_path) == ["m.kzr"]  # the temporary file was removed
    write_replay(path, second)
    assert read_replay(path).match_id == "m-2"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"hello, I am text", "not gzip-compressed"),
        (gzip.compress(b"\xff\xff\xff\xff garbage", mtime=0), "not a Replay message"),
        (gzip.compress(b"", mtime=0), "no format_version"),
        (
            gzip.compress(replay_pb2.Replay(format_version=2).SerializeToString(), mtime=0),
            "unknown replay format_version 2",
        ),
    ],
    ids=["text", "garbage", "empty", "future-version"],
)  # stable ids: xdist workers must agree
def test_non_replays_are_refused(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "x.kzr"
    path.write_bytes(content)
    with pytest.raises(ReplayError, match=message):
        read_replay(path)


# -- text --------------------------------------------------------------------------------------


def test_text_rendering(classic3: Played) -> None:
    replay = replay_of(classic3)
    text = replay_to_text(replay)
    assert text.startswith("Kozel replay of match m-1 at table t-9\n")
    assert "ruleset classic, 3 players" in text
    assert "  seat 1 (Bob), side 1" in text
    assert f"seed commitment {replay.seed_commitment}" in text
    assert "time control: 2000 ms a move, bank 30000 ms, 3 strikes, 2 retries" in text
    first = replay.deals[0].steps[0]
    who = f"seat {first.seat} ({NAMES[first.seat]})"
    assert f"{who} lead {' '.join(first.action.cards)}  [{first.think_ms} ms" in text
    assert "timeout: default action" in text
    assert "refused: CARD_NOT_IN_HAND 'ZZ is not in your hand' (tried lead AH)" in text
    n_tricks = text.count("-> trick to ")
    assert n_tricks == sum(
        replay.deals[i].tricks[s] for i in range(len(replay.deals)) for s in range(3)
    )
    pen = " / ".join(map(str, replay.deals[0].penalties))
    assert f"penalties {pen}" in text
    assert text.count("\nDeal ") == len(replay.deals)
    assert "Result: limit, " in text


def test_text_survives_a_tampered_replay(classic3: Played) -> None:
    replay = replay_of(classic3)
    replay.deals[0].steps[0].action.cards[:] = ["ZZ"]
    del replay.deals[1].deck[:]
    text = replay_to_text(replay)
    assert "the engine refuses this step" in text
    assert "cannot re-play this deal" in text


# -- the command line --------------------------------------------------------------------------


def test_cli_show_and_verify(tmp_path: Path, classic3: Played) -> None:
    replay = replay_of(classic3)
    path = tmp_path / "m.kzr"
    write_replay(path, replay)
    res = kozel("replay", "verify", str(path))
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip() == f"replay OK: {len(replay.deals)} deals verified"
    res = kozel("replay", "show", str(path))
    assert res.returncode == 0, res.stderr
    assert res.stdout == replay_to_text(replay)
    res = kozel("replay", "show", "--json", str(path))
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["matchId"] == "m-1" and len(data["deals"]) == len(replay.deals)


def test_cli_verify_reports_problems(tmp_path: Path, classic3: Played) -> None:
    replay = replay_of(classic3)
    replay.deals[0].penalties[0] += 2
    path = tmp_path / "bad.kzr"
    write_replay(path, replay)
    res = kozel("replay", "verify", str(path))
    assert res.returncode == 1
    assert res.stdout.startswith("deal 0: the penalties are recorded as ")
    assert "replay OK" not in res.stdout


def test_cli_unreadable_files(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a replay")
    for cmd in ("verify", "show"):
        res = kozel("replay", cmd, str(path))
        assert res.returncode == 2
        assert "cannot read the replay: not a replay: not gzip-compressed" in res.stderr
    res = kozel("replay", "verify", str(tmp_path / "missing.kzr"))
    assert res.returncode == 2 and "No such file" in res.stderr
