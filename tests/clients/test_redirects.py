"""The four example bots on a ladder shared by several referees: scripted fake referees on
loopback (tests/sdk/fake_referee.py) redirect a bot process twice, the second time to a closed
port. The bot must bring the same Hello plus the ticket to the redirect target, and then go back
to its FIRST address (not the referee that redirected it last) with its first Hello, and play
its match there. The bots are built by the per-language test modules' fixtures."""

from __future__ import annotations

import asyncio

import pytest

from tests.clients.test_go_bot import go_bot  # noqa: F401  (fixtures)
from tests.clients.test_java_bot import java_bot  # noqa: F401
from tests.clients.test_node_bot import BOT_DIR as NODE_DIR
from tests.clients.test_node_bot import node_bot  # noqa: F401
from tests.clients.test_rust_bot import rust_bot  # noqa: F401
from tests.sdk.fake_referee import assert_same_hello, dead_address, start_fake, stop_fake

pytestmark = pytest.mark.timeout(1800)  # first builds of four toolchains
BOT_TIMEOUT_S = 120


@pytest.fixture(params=["node", "go", "rust", "java"])
def bot_cmd(request: pytest.FixtureRequest) -> list[str]:
    lang = request.param
    if lang == "node":
        return [request.getfixturevalue("node_bot"), str(NODE_DIR / "bot.js")]
    if lang == "java":
        return list(request.getfixturevalue("java_bot"))
    return [str(request.getfixturevalue(f"{lang}_bot"))]


def test_a_ladder_bot_follows_a_chained_redirect_and_falls_back_to_its_first_address(
    bot_cmd: list[str],
) -> None:
    async def main() -> tuple[int, str, str, list]:
        server_b, ref_b, address_b = await start_fake(redirect_to=dead_address())
        server_a, ref_a, address_a = await start_fake(redirect_to=address_b)
        try:
            proc = await asyncio.create_subprocess_exec(
                *bot_cmd,
                *("--server", address_a, "--ladder", "main", "--token", "tok-1"),
                *("--name", "redir", "--matches", "1"),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            try:
                out, err = await asyncio.wait_for(proc.communicate(), BOT_TIMEOUT_S)
            finally:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
            return proc.returncode or 0, out.decode(), err.decode(), [ref_a, ref_b]
        finally:
            await stop_fake(server_a, ref_a)
            await stop_fake(server_b, ref_b)

    code, out, err, (ref_a, ref_b) = asyncio.run(main())
    assert code == 0, f"{out}\n{err}"
    first = ref_a.hellos[0]
    assert (first.bot_name, first.token, first.join_ladder.ladder) == ("redir", "tok-1", "main")
    assert not first.redirect_ticket
    # At the redirect target: the same Hello, the ticket A issued, no resume token.
    assert len(ref_b.hellos) == 1, err
    there = ref_b.hellos[0]
    assert there.redirect_ticket == ref_a.tickets[0] and not there.resume_token
    assert_same_hello(there, first)
    # B redirected it to a closed port: back to A (its first address), with its first Hello.
    assert len(ref_a.hellos) == 2, err
    back = ref_a.hellos[1]
    assert not back.redirect_ticket and not back.resume_token
    assert_same_hello(back, first)
    assert sum(s.started for s in ref_a.sessions.values()) == 1  # and played its match there
    assert ref_a.deals > 0
