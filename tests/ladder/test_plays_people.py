"""A person's table seats a connected ladder bot that plays people (its author's opt-in), over
real gRPC: a referee process with a ladder and a store, real bot processes on the ladder and at
the table. The bot is lent one free match slot; the match is a table match (never rated, not
in the store); the bot is back on its ladder after it, and plays rated matches there again.
Refusals: a bot that does not play people, is not connected, or a token of another account."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from kozel.ladder.store import Store
from kozel.v1 import game_pb2, referee_pb2, referee_pb2_grpc
from tests.server.conftest import RefereeProcess, start_ladder_referee, stop_referee_process

pytestmark = pytest.mark.timeout(300)
LADDER = "classic-2p"
LADDERS = {
    "ladders": [
        {
            "name": LADDER,
            "players": 2,
            "ruleset": {"preset": "classic"},
            "time_control": {"move_ms": 3000, "bank_ms": 6000},
        }
    ]
}
BOTS = ["lad-a", "lad-b", "lad-c"]  # lad-a plays people; lad-b and lad-c do not


def kozel(*args: str, token: str = "") -> subprocess.Popen[str]:
    env = {"KOZEL_BOT_TOKEN": token} if token else {}
    return subprocess.Popen(
        [sys.executable, "-m", "kozel.cli.main", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **env},
    )


def on_ladder(ref: RefereeProcess, name: str, token: str) -> subprocess.Popen[str]:
    return kozel(
        "bot", "greedy", "--server", ref.address, "--ladder", LADDER, "--name", name, "--quiet",
        token=token,
    )  # fmt: skip


def until(check: Callable[[], object], what: str, limit_s: float = 60) -> None:
    deadline = time.monotonic() + limit_s
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


@pytest.fixture
def arena(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[RefereeProcess, Store, dict[str, str], referee_pb2_grpc.RefereeServiceStub]]:
    monkeypatch.setenv("KOZEL_LIMITS__EMPTY_TABLE_LINGER_S", "6")  # an unjoined table goes soon
    monkeypatch.setenv("KOZEL_LIMITS__MAX_PEOPLE_WAITING_PER_BOT", "1")
    ref, store, tokens = start_ladder_referee(tmp_path, LADDERS, BOTS)
    channel = grpc.insecure_channel(ref.address)
    try:
        yield ref, store, dict(zip(BOTS, tokens)), referee_pb2_grpc.RefereeServiceStub(channel)
    finally:
        channel.close()
        stop_referee_process(ref)
        store.close()


def opponents(stub: referee_pb2_grpc.RefereeServiceStub) -> dict[str, bool]:
    got = stub.ListOpponents(referee_pb2.ListOpponentsRequest(), timeout=10)
    assert "greedy" in got.house_bots
    assert all((b.players, b.ruleset) == (2, "classic") for b in got.ladder_bots)
    return {b.name: b.free for b in got.ladder_bots if b.ladder == LADDER}


def table(*ladder_bots: str, players: int = 2) -> referee_pb2.CreateTableRequest:
    ruleset = game_pb2.Ruleset(preset="classic")
    ruleset.options.update({"fixed_deals": 1})
    return referee_pb2.CreateTableRequest(
        ruleset=ruleset, players=players, ladder_bots=["", *ladder_bots]
    )


def refusal(call: Callable[[], object]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as got:
        call()
    return got.value


def test_a_person_plays_an_opted_in_ladder_bot_unrated_and_it_goes_back_to_its_ladder(
    arena: tuple[RefereeProcess, Store, dict[str, str], referee_pb2_grpc.RefereeServiceStub],
) -> None:
    ref, store, tokens, stub = arena
    author = kozel("account", "plays-people", "lad-a", "on", "--server", ref.address,
                   token=tokens["lad-a"])  # fmt: skip
    assert author.wait(timeout=60) == 0, author.stdout.read() if author.stdout else ""
    bots = [on_ladder(ref, "lad-a", tokens["lad-a"])]
    try:
        until(lambda: opponents(stub).get("lad-a") is True, "lad-a connected and free")
        before = [(s.name, s.mu, s.sigma, s.matches) for s in store.standings(LADDER)]
        # A table nobody joins gives the lent slot back when it closes.
        stub.CreateTable(table("lad-a"), timeout=10)
        assert opponents(stub)["lad-a"] is False  # its one slot is the table's
        until(lambda: opponents(stub).get("lad-a") is True, "the slot given back", 30)
        # The person (here a bot process at the table's remote seat) plays the match out.
        got = stub.CreateTable(table("lad-a"), timeout=10)
        person = kozel("bot", "random", "--server", ref.address, "--table", got.table_id,
                       "--name", "<b>person</b>", "--quiet")  # fmt: skip
        assert person.wait(timeout=120) == 0
        done = stub.WaitTable(referee_pb2.WaitTableRequest(table_id=got.table_id), timeout=60)
        assert [p.name for p in done.seating] == ["<b>person</b>", "lad-a"]
        assert done.result.reason == game_pb2.MATCH_END_REASON_FIXED_DEALS
        assert store.match_detail(done.match_id) is None  # never a ladder match
        assert store.match_counts(LADDER) == {}
        assert [(s.name, s.mu, s.sigma, s.matches) for s in store.standings(LADDER)] == before
        until(lambda: opponents(stub).get("lad-a") is True, "lad-a back on its ladder", 30)
        # Its ladder play goes on: with an opponent it plays rated matches again.
        bots.append(on_ladder(ref, "lad-c", tokens["lad-c"]))
        until(lambda: store.match_counts(LADDER).get("finished", 0) >= 1, "a rated match", 120)
        assert "lad-c" not in opponents(stub)  # connected, but it does not play people
    finally:
        for bot in bots:
            bot.terminate()
        for bot in bots:
            bot.wait(timeout=30)


def test_a_table_for_a_busy_bot_waits_for_its_next_free_slot(
    arena: tuple[RefereeProcess, Store, dict[str, str], referee_pb2_grpc.RefereeServiceStub],
) -> None:
    ref, store, tokens, stub = arena
    store.set_plays_people("lad-a", True)
    bots = [on_ladder(ref, "lad-a", tokens["lad-a"])]
    try:
        until(lambda: opponents(stub).get("lad-a") is True, "lad-a connected and free")
        first = stub.CreateTable(table("lad-a"), timeout=10)  # nobody joins: its slot is held
        assert opponents(stub)["lad-a"] is False
        second = stub.CreateTable(table("lad-a"), timeout=10)  # waits for the next free slot
        err = refusal(lambda: stub.CreateTable(table("lad-a"), timeout=10))
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err.details()
        assert "max_people_waiting_per_bot" in str(err.details())
        person = kozel("bot", "random", "--server", ref.address, "--table", second.table_id,
                       "--name", "person", "--quiet")  # fmt: skip
        # The first table closes unplayed; its slot goes to the waiting table, not the ladder.
        done = stub.WaitTable(referee_pb2.WaitTableRequest(table_id=second.table_id), timeout=90)
        assert [p.name for p in done.seating] == ["person", "lad-a"]
        assert person.wait(timeout=60) == 0
        err = refusal(
            lambda: stub.WaitTable(
                referee_pb2.WaitTableRequest(table_id=first.table_id), timeout=10
            )
        )
        assert err.code() in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.NOT_FOUND)
        assert store.match_counts(LADDER) == {}
        until(lambda: opponents(stub).get("lad-a") is True, "lad-a back on its ladder", 30)
    finally:
        for bot in bots:
            bot.terminate()
        for bot in bots:
            bot.wait(timeout=30)


def test_refusals(
    arena: tuple[RefereeProcess, Store, dict[str, str], referee_pb2_grpc.RefereeServiceStub],
) -> None:
    ref, store, tokens, stub = arena
    bot = on_ladder(ref, "lad-b", tokens["lad-b"])
    try:
        until(lambda: store.bot("lad-b") and _connected(stub, "lad-b"), "lad-b connected")
        err = refusal(lambda: stub.CreateTable(table("lad-b"), timeout=10))
        assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "does not play people" in str(err.details())
        # Another account's token may not change it; its own may.
        wrong = referee_pb2.SetPlaysPeopleRequest(
            bot_name="lad-b", token=tokens["lad-a"], plays_people=True
        )
        err = refusal(lambda: stub.SetPlaysPeople(wrong, timeout=30))
        assert err.code() == grpc.StatusCode.PERMISSION_DENIED
        assert store.bot("lad-b").plays_people is False  # type: ignore[union-attr]
        mine = referee_pb2.SetPlaysPeopleRequest(
            bot_name="lad-b", token=tokens["lad-b"], plays_people=True
        )
        assert stub.SetPlaysPeople(mine, timeout=30).plays_people
        until(lambda: opponents(stub).get("lad-b") is True, "lad-b offered")
        # It plays 2-player classic: another ruleset or player count is refused.
        for other in (table("lad-b", players=3), table("lad-b")):
            if other.players == 2:
                other.ruleset.preset = "balkan"
            err = refusal(functools.partial(stub.CreateTable, other, timeout=10))
            assert "plays 2-player 'classic'" in str(err.details()), err.details()
    finally:
        bot.terminate()
        bot.wait(timeout=30)
    # Not connected now: refused, and no table is left behind.
    until(lambda: "lad-b" not in opponents(stub), "lad-b gone")
    err = refusal(lambda: stub.CreateTable(table("lad-b"), timeout=10))
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "not connected" in str(err.details())
    ghost = referee_pb2.SetPlaysPeopleRequest(bot_name="ghost", token="kzb_x", plays_people=True)
    assert refusal(lambda: stub.SetPlaysPeople(ghost, timeout=30)).code() == (
        grpc.StatusCode.NOT_FOUND
    )
    for bad in (table("lad-b", "lad-b", players=3), table("x" * 65), table("a\u202eb")):
        err = refusal(functools.partial(stub.CreateTable, bad, timeout=10))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err.details()
    full = referee_pb2.CreateTableRequest(
        ruleset=game_pb2.Ruleset(preset="classic"), players=2, ladder_bots=["lad-a", "lad-b"]
    )
    err = refusal(lambda: stub.CreateTable(full, timeout=10))
    assert "keeps a seat" in str(err.details())


def _connected(stub: referee_pb2_grpc.RefereeServiceStub, name: str) -> bool:
    """Whether ``name`` is connected (seen by what a table refuses about it)."""
    try:
        stub.CreateTable(table(name), timeout=10)
    except grpc.RpcError as exc:
        return "not connected" not in str(exc.details())
    return True
