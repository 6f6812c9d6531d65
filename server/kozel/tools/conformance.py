"""The conformance checker: a scripted referee that puts one bot through the situations every
bot must handle, and says for each check whether the bot passed, failed or was not checked,
and why.

The bot connects as it would to a real referee (``Play`` stream, ``Hello`` with
``join_table``). The checker then plays one match with it: deals staged at real engine states
(a lead, a response, a declaration window, the longest legal action list, a refused answer that
must be retried, a dropped stream that must be resumed), then whole deals played out against
the checker until the bot has made at least ``MIN_DECISIONS`` decisions of every kind. Every
answer must be legal and come within ``move_ms``; a late answer is waited for (up to
``LATE_S`` more) so that its real time is reported. Then the bot is started a second time for
the redirect checks (:mod:`kozel.tools.conformance_redirect`). A bot started by the checker
must exit with status 0 after each run, and, when it keeps an SDK report (``KOZEL_REPORT``:
the Python SDK and the Node package do), its code must have raised no exception; it runs
strict (``KOZEL_STRICT=1``), so such an exception also ends it.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import secrets
import shlex
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from kozel.core import convert, messages
from kozel.core.messages import Outgoing
from kozel.engine import Match, Ruleset
from kozel.engine.deal import Deal
from kozel.tools.conformance_redirect import FALLBACK, FOLLOWS, redirect_script
from kozel.tools.conformance_wire import (
    KIND_NAMES,
    SEAT,
    SITUATIONS,
    TABLE,
    Check,
    Results,
    Session,
    Situation,
    deal_start,
    decision,
    end_match,
    judge,
    listen,
    match_start,
    no_reason,
    situations,
    stage,
)
from kozel.tools.play_diag import exit_text
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb

__all__ = ["CHECKS", "FALLBACK", "TABLE", "Check", "check_command", "run_checks"]

REJECTION = "rejection and retry"
RESUME = "resume after a dropped stream"
WHOLE = "whole deals"
DEADLINE = "deadline"
EXITS = "the bot exits after its match"
NO_EXCEPTION = "no exception in the bot's code"
CHECKS = (
    "hello",
    *SITUATIONS,
    REJECTION,
    RESUME,
    WHOLE,
    DEADLINE,
    FOLLOWS,
    FALLBACK,
    EXITS,
    NO_EXCEPTION,
)
LATE_S = 10.0  # how long past move_ms a late answer is still waited for, to time it
RESUME_WAIT_S = 15.0  # for the bot to come back after its stream is dropped
MIN_DECISIONS = 40  # whole deals go on until the bot made this many decisions of every kind
MAX_DEALS = 8
WHOLE_SEED = 11
EXIT_WAIT_S = 15.0  # for the bot to exit after its match and the end of its stream


class _Stop(Exception):
    """The script cannot go on; the checks not run yet are skipped with this reason."""


class _MatchScript:
    """The first run: one match of staged deals, then whole deals."""

    def __init__(self, session: Session, results: Results) -> None:
        self.s, self.r = session, results
        self.match_id = secrets.token_hex(8)
        self.request_id = 0
        self.deal_index = 0
        self.late = False  # an answer came after move_ms

    @property
    def move_s(self) -> float:
        return self.s.move_ms / 1000

    async def run(self, connect_timeout: float) -> None:
        hello = await self.hello(connect_timeout)
        self.s.send(messages.welcome("conformance", self.s.token, "conformance"))
        self.start = match_start(self.match_id, hello.bot_name, self.s.move_ms)
        self.s.send(self.start)
        staged = situations()
        for sit in staged:
            await self.situation(sit)
        await self.rejection(staged[0].deal)
        await self.resume(staged[1].deal)
        await self.whole_deals()
        slow = max(self.s.think_ms, default=0)
        self.r.add(
            DEADLINE,
            f"slowest answer {slow:.0f} ms of {self.s.move_ms} ms" if slow > self.s.move_ms else "",
            f"slowest answer {slow:.0f} ms of {self.s.move_ms} ms",
        )
        await end_match(self.s, self.match_id)

    async def hello(self, connect_timeout: float) -> rpb.Hello:
        try:
            req = await self.s.accept(connect_timeout)
        except (TimeoutError, ConnectionError) as exc:
            self.r.add("hello", str(exc))
            raise _Stop(str(exc)) from None
        hello = req.hello
        problems = []
        if req.WhichOneof("message") != "hello":
            problems.append("the first message is not Hello")
        if hello.protocol_version != messages.PROTOCOL_VERSION:
            problems.append(
                f"protocol_version is {hello.protocol_version}, not {messages.PROTOCOL_VERSION}"
            )
        if not 1 <= len(hello.bot_name) <= 64:
            problems.append("bot_name must be 1 to 64 characters")
        if hello.WhichOneof("want") != "join_table" or hello.join_table.table_id != TABLE:
            problems.append(f"Hello does not join table {TABLE!r}")
        self.r.add("hello", "; ".join(problems))
        if req.WhichOneof("message") != "hello":
            raise _Stop("the bot did not start with Hello")
        return hello

    async def ask(
        self, name: str, msgs: list[Outgoing], request_id: int, stop: bool = True
    ) -> tuple[rpb.ActionReply, float] | None:
        """Send ``msgs`` and wait for the answer to ``request_id`` and its time in ms; None
        (or, with ``stop``, the end of the script) when none came within move_ms + LATE_S."""
        for m in msgs:
            self.s.send(m)
        wait = self.move_s + LATE_S
        try:
            reply = await self.s.answer(self.match_id, request_id, wait)
        except TimeoutError:
            if not stop:
                return None
            self.r.add(name, f"no answer within {wait:g} s (move_ms {self.s.move_ms} ms)")
            raise _Stop(f"the bot did not answer request {request_id}") from None
        except ConnectionError as exc:
            self.r.add(name, f"no answer: {exc}")
            raise _Stop(str(exc)) from None
        return reply, self.s.think_ms[-1]

    def timing(self, ms: float) -> str | None:
        if ms <= self.s.move_ms:
            return None
        self.late = True
        return f"answered in {ms:.0f} ms, over move_ms ({self.s.move_ms} ms)"

    def next_request(self) -> int:
        self.request_id += 1
        return self.request_id

    def staged(self, deal: Deal) -> tuple[int, list[Outgoing]]:
        rid = self.next_request()
        msgs = stage(self.match_id, self.deal_index, deal, rid, self.s.move_ms)
        self.deal_index += 1
        return rid, msgs

    async def situation(self, sit: Situation) -> None:
        rid, msgs = self.staged(sit.deal)
        got = await self.ask(sit.name, msgs, rid)
        assert got is not None
        reply, ms = got
        why = judge(sit.deal, reply, rid, self.match_id) or self.timing(ms)
        note = ""
        if sit.name == "longest legal list":
            note = f"{len(sit.deal.legal_actions(SEAT))} actions"
        self.r.add(sit.name, why, note)

    async def rejection(self, deal: Deal) -> None:
        """A refused answer must be retried, for the same request, before the deadline."""
        rid, msgs = self.staged(deal)
        got = await self.ask(REJECTION, msgs, rid)
        assert got is not None
        self.s.send(
            messages.rejection(
                self.match_id,
                rid,
                pb.ERROR_CODE_DOES_NOT_BEAT,
                "conformance: refused on purpose; answer again",
                retries_left=1,
            )
        )
        retry = await self.ask(REJECTION, [], rid, stop=False)
        if retry is None:
            self.r.add(REJECTION, "no second answer after a Rejection with retry_allowed")
            return
        why = judge(deal, retry[0], rid, self.match_id) or self.timing(got[1])
        self.r.add(REJECTION, why or self.timing(retry[1]))

    async def resume(self, deal: Deal) -> None:
        """A dropped stream must be resumed with the resume token, and the resent request
        answered."""
        rid, msgs = self.staged(deal)
        for m in msgs:
            self.s.send(m)
        self.s.drop()
        wait = RESUME_WAIT_S + self.move_s
        try:
            resumed = await self.s.accept(wait)
        except (TimeoutError, ConnectionError) as exc:
            self.r.add(RESUME, f"the bot did not come back within {wait:g} s ({exc})")
            raise _Stop("the bot did not resume its session") from None
        if resumed.WhichOneof("message") != "hello" or resumed.hello.resume_token != self.s.token:
            self.r.add(RESUME, "the bot came back without Hello.resume_token from the Welcome")
            raise _Stop("the bot did not resume its session")
        self.s.send(
            messages.welcome(
                "conformance",
                self.s.token,
                "conformance",
                resumed=True,
                running_match_ids=[self.match_id],
            )
        )
        self.s.send(self.start)
        again = [messages.resent(m) if isinstance(m, messages.EncodedRequest) else m for m in msgs]
        got = await self.ask(RESUME, again, rid)
        assert got is not None
        self.r.add(RESUME, judge(deal, got[0], rid, self.match_id) or self.timing(got[1]))

    async def whole_deals(self) -> None:
        """Deals played out against the checker's random play, every answer judged, until the
        bot made MIN_DECISIONS decisions and met a lead and a response (at most MAX_DEALS)."""
        if self.late:
            self.r.skip(WHOLE, "not run: the bot already answered after move_ms (see deadline)")
            return
        match = Match(Ruleset.preset("classic"), 2, WHOLE_SEED)
        rng = random.Random(WHOLE_SEED)
        kinds: Counter[str] = Counter()
        deals = 0
        while not match.over and deals < MAX_DEALS:
            if sum(kinds.values()) >= MIN_DECISIONS and {"lead", "respond"} <= set(kinds):
                break
            deals += 1
            self.s.send(deal_start(self.match_id, self.deal_index, match.deal, match.board.totals))
            self.deal_index += 1
            if why := await self.play_deal(match, rng, kinds):
                self.r.add(WHOLE, f"deal {deals}, decision {sum(kinds.values()) + 1}: {why}")
                return
        counts = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))
        self.r.add(WHOLE, None, f"{deals} deals, {sum(kinds.values())} decisions ({counts})")

    async def play_deal(self, match: Match, rng: random.Random, kinds: Counter[str]) -> str | None:
        """One deal to its end; why an answer was not acceptable, or None."""
        before = len(match.records)
        while len(match.records) == before and not match.over:
            deal = match.deal
            if SEAT not in deal.to_act:
                seat = deal.to_act[0]
                match.apply(seat, rng.choice(deal.legal_actions(seat)))
                continue
            kind = KIND_NAMES[deal.decision]
            rid = self.next_request()
            got = await self.ask(WHOLE, [decision(self.match_id, deal, rid, self.s.move_ms)], rid)
            assert got is not None
            if why := judge(deal, got[0], rid, self.match_id) or self.timing(got[1]):
                return why
            kinds[kind] += 1
            _apply(match, deal, got[0])
        return None


def _apply(match: Match, deal: Deal, reply: rpb.ActionReply) -> None:
    if reply.WhichOneof("choice") == "legal_index":
        match.apply(SEAT, deal.legal_actions(SEAT)[reply.legal_index])
        return
    kind, cards, combo = convert.action_from_pb(reply.action)
    match.play(SEAT, kind, cards, combo)


async def run_checks(
    address_ready: Callable[[str], None],
    *,
    move_ms: int = 2000,
    connect_timeout: float = 30.0,
    gone: Callable[[], str | None] = no_reason,
) -> Results:
    """Serve on a free loopback port, call ``address_ready(address)`` (which starts or points
    the bot), run the match checks, then do the same for the redirect checks. ``gone()``
    says why the bot cannot come any more (its process ended), or None."""
    results = Results()
    server, servicer, address = await listen()
    try:
        address_ready(address)
        await _MatchScript(Session(servicer, move_ms, gone=gone), results).run(connect_timeout)
    except (_Stop, TimeoutError, ConnectionError) as exc:
        results.stopped = str(exc) or "no message within the time allowed"
    finally:
        await server.stop(0.5)
    first, second = await listen(), await listen()
    try:
        address_ready(first[2])
        session = Session(first[1], move_ms, gone=gone)
        await redirect_script(session, second, results, connect_timeout)
    except (TimeoutError, ConnectionError) as exc:
        why = str(exc) or "no message within the time allowed"
        for name in (FOLLOWS, FALLBACK):
            if name not in results.done:
                results.add(name, f"the redirected bot: {why}")
    finally:
        await first[0].stop(0.5)
        await second[0].stop(0.5)
    return results


class _Bot:
    """The bot's processes started by the checker: output to a log per run, strict, with an
    SDK report file."""

    def __init__(self, command: str, log_dir: Path) -> None:
        self.command, self.log_dir = command, log_dir
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []
        self.report = log_dir / "report.jsonl"
        log_dir.mkdir(parents=True, exist_ok=True)
        for old in [self.report, *log_dir.glob("run*.log")]:
            old.unlink(missing_ok=True)

    def start(self, address: str) -> None:
        if "{server}" in self.command:
            args = shlex.split(self.command.replace("{server}", address).replace("{table}", TABLE))
        else:
            args = shlex.split(self.command) + ["--server", address, "--table", TABLE]
        if args[0].endswith(".py"):
            args.insert(0, sys.executable)
        log = self.log_dir / f"run{len(self.procs) + 1}.log"
        env = {**os.environ, "KOZEL_STRICT": "1", "KOZEL_REPORT": str(self.report)}
        env["PYTHONUNBUFFERED"] = "1"
        with log.open("wb") as fh:
            self.procs.append(subprocess.Popen(args, stdout=fh, stderr=subprocess.STDOUT, env=env))
        self.logs.append(log)

    def gone(self) -> str | None:
        """Why the current run's process cannot connect any more."""
        if not self.procs or (code := self.procs[-1].poll()) is None:
            return None
        return f"its process ended ({exit_text(code) or 'exit status 0'})"

    def finish(self, results: Results) -> None:
        """The exit checks: every run exited 0 in time, and its code raised nothing."""
        why = []
        for run, proc in enumerate(self.procs, 1):
            try:
                code = proc.wait(timeout=EXIT_WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                why.append(f"run {run}: still running {EXIT_WAIT_S:g} s after its match")
                continue
            if text := exit_text(code):
                why.append(f"run {run}: {text} (log {self.logs[run - 1].resolve()})")
        if self.procs:
            results.add(EXITS, "; ".join(why))
        if not self.report.exists():
            results.skip(
                NO_EXCEPTION,
                "the bot keeps no SDK report (KOZEL_REPORT; the Python SDK and the Node "
                "package do): an exception shows only as its exit status",
            )
            return
        raised = [p for p in _report_lines(self.report) if p.get("kind") == "exception"]
        first = raised[0] if raised else {}
        results.add(
            NO_EXCEPTION,
            f"{len(raised)} raised, the first: {first.get('what')}: {first.get('text')} "
            f"({first.get('where')})"
            if raised
            else "",
        )


def _report_lines(path: Path) -> list[dict]:
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            out.append(item)
    return out


def check_command(
    command: str,
    *,
    move_ms: int = 2000,
    connect_timeout: float = 60.0,
    log_dir: Path = Path("data/conformance"),
) -> tuple[list[Check], list[Path]]:
    """Start ``command`` as the bot (``{server}`` and ``{table}`` are filled in, or
    ``--server ADDR --table conformance`` appended; a ``.py`` file first runs with this
    Python), once for the match and once for the redirect checks, and check it; returns the
    report and the logs of its runs (``log_dir``/run1.log, run2.log)."""
    bot = _Bot(command, log_dir)
    try:
        results = asyncio.run(
            run_checks(bot.start, move_ms=move_ms, connect_timeout=connect_timeout, gone=bot.gone)
        )
        bot.finish(results)
    finally:
        for proc in bot.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results.report(CHECKS, results.stopped), bot.logs
