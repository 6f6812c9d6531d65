"""The bridge back: ``kozel bot --policy`` serves a policy written against the environment to a
real referee process, and at every decision the policy saw exactly the observation and mask the
environment produces for that seat; the replay re-simulates in the environment decision for
decision, to the same result."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import grpc
import numpy as np
import pytest

from kozel.env import aec
from kozel.sdk.encoding import action_index, hand_slots
from kozel.sdk.policy import PolicyBot, PolicyError, load_policy
from kozel.server.replay.file import read_replay
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc, replay_pb2
from tests.server.conftest import start_referee_process, stop_referee_process

HERE = Path(__file__).parent
CLOCK = pb.TimeControl(move_ms=30_000, bank_ms=60_000, max_strikes=2, max_retries=2, grace_ms=5000)


async def _table(address: str, preset: str, players: int, house: list[str]) -> str:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        made = await stub.CreateTable(
            rpb.CreateTableRequest(
                ruleset=pb.Ruleset(preset=preset),
                players=players,
                house_bots=house,
                time_control=CLOCK,
                # Fixed deals: a random deal can end a match in two deals, leaving a policy
                # seat too few decisions to check.
                seed=hashlib.sha256(f"bridge-{preset}".encode()).digest(),
            )
        )
        return made.table_id


async def _wait(address: str, table_id: str) -> rpb.WaitTableResponse:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        return await stub.WaitTable(rpb.WaitTableRequest(table_id=table_id), timeout=240)


def _serve_policy(address: str, table_id: str, log: Path, seed: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable, "-m", "kozel.cli.main", "bot", "--policy",
            f"{HERE / 'recording_policy.py'}:policy", "--server", address, "--table", table_id,
            "--name", f"policy{seed}", "--quiet",
        ],
        env={**os.environ, "KOZEL_TEST_POLICY_LOG": str(log), "KOZEL_TEST_POLICY_SEED": str(seed)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip


def _resimulate(
    replay: replay_pb2.Replay, logs: dict[int, list[dict]], preset: str
) -> aec.KozelEnv:
    """Play the replay's steps in the environment, checking each policy decision against its
    log; returns the environment at the end."""
    env = aec.env(preset=preset, players=replay.players)
    env.reset(options={"match_seed": replay.seed})
    at = dict.fromkeys(logs, 0)
    table = env.table
    assert table is not None
    for deal in replay.deals:
        for step in deal.steps:
            agent = env.possible_agents[step.seat]
            assert step.seat in table.asked, (step, table.asked)
            # A declaration window asks several seats at once: they answer in any order.
            env.agent_selection = agent
            obs = env.observe(agent)
            index = action_index(
                step.action, hand_slots(table.asked[step.seat].decision.observation.hand)
            )
            assert obs["action_mask"][index] == 1
            if step.seat in logs:
                seen = logs[step.seat][at[step.seat]]
                at[step.seat] += 1
                assert bytes.fromhex(seen["obs"]) == obs["observation"].tobytes()
                assert bytes.fromhex(seen["mask"]) == obs["action_mask"].tobytes()
                assert seen["action"] == index
            env.step(index)
    assert at == {seat: len(log) for seat, log in logs.items()}, "decisions left unchecked"
    return env


@pytest.mark.parametrize(
    ("preset", "players", "house"),
    [("classic", 2, ["greedy"]), ("courtyard", 4, ["greedy", "random"]), ("money", 3, ["random"])],
)
def test_a_served_policy_sees_what_the_environment_produces(
    tmp_path: Path, preset: str, players: int, house: list[str]
) -> None:
    ref = start_referee_process(tmp_path / "replays")
    try:
        table = asyncio.run(_table(ref.address, preset, players, house))
        procs = {
            i: _serve_policy(ref.address, table, tmp_path / f"policy{i}.jsonl", seed=i)
            for i in range(players - len(house))
        }
        done = asyncio.run(_wait(ref.address, table))
        for proc in procs.values():
            out, _ = proc.communicate(timeout=60)
            assert proc.returncode == 0, out
    finally:
        stop_referee_process(ref)
    assert not done.result.forfeits and not any(done.result.timeouts)
    replay = read_replay(done.replay_path)
    seat_of = {p.name: p.seat for p in done.seating}
    logs = {
        seat_of[f"policy{i}"]: [
            json.loads(line)
            for line in (tmp_path / f"policy{i}.jsonl").read_text(encoding="utf-8").splitlines()
        ]
        for i in procs
    }
    assert all(logs.values()) and sum(map(len, logs.values())) > 10, {
        s: len(v) for s, v in logs.items()
    }
    env = _resimulate(replay, logs, preset)
    assert env.table is not None and env.table.result is not None
    assert all(env.terminations.values())
    got, want = env.table.result, replay.result
    assert (got.reason, got.winner_side, got.draw) == (want.reason, want.winner_side, want.draw)
    assert list(got.penalty_totals) == list(want.penalty_totals)
    assert list(got.chips) == list(want.chips)


def test_policies_are_loaded_or_refused_clearly(tmp_path: Path) -> None:
    assert load_policy(f"{HERE / 'recording_policy.py'}:policy").__name__ == "policy"
    assert load_policy("operator:add")(2, 3) == 5
    with pytest.raises(PolicyError, match="module:callable"):
        load_policy("nocolon")
    with pytest.raises(PolicyError, match="has no callable 'nothing'"):
        load_policy("json:nothing")
    with pytest.raises(PolicyError, match="no policy file"):
        load_policy(f"{tmp_path / 'missing.py'}:policy")
    bot = PolicyBot(lambda obs, mask: int(np.flatnonzero(mask == 0)[0]))
    env = aec.env()
    env.reset(seed=1)
    request = env.infos[env.agent_selection]["request"]
    with pytest.raises(PolicyError, match="not legal now"):
        bot.choose(request)
