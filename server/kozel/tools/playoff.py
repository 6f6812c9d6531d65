"""The match loop of ``kozel play``: many matches of one bot against others at tables of a
referee, seats rotated, each pair of two-sided matches dealt from the same seed with the
sides swapped (as fastchess plays an opening twice), several at once.

A bot is a house bot name (seated in-process by the referee through
``CreateTable.house_bots``) or a shell command started once per match with ``{server}``,
``{table}`` (and, optionally, ``{name}``) filled in; a command without ``{server}`` gets
``--server ADDR --table ID`` appended, and one that starts with a ``.py`` file is run by this
Python. Command bots run strict (``KOZEL_STRICT=1``) with an SDK report file
(``KOZEL_REPORT``); what went wrong is gathered by :mod:`kozel.tools.play_diag`."""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import secrets
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from kozel.analysis.luck import LUCK_VERSION
from kozel.tools.elo import (
    Estimate,
    Sprt,
    elo_interval,
    llr_normal,
    llr_pentanomial,
    llr_trinomial,
    score_interval,
    score_to_elo,
)
from kozel.tools.luck_stats import Unit, clustered
from kozel.tools.play_diag import (
    EXIT_WAIT_S,
    CannotStart,
    Failure,
    Incident,
    SeatRun,
    incidents,
    resolved,
)
from kozel.tools.play_diag import report as failure_report
from kozel.tools.replay_luck import SideLuck, replay_records, side_luck
from kozel.v1 import game_pb2 as pb
from kozel.v1 import match_pb2, match_pb2_grpc, referee_pb2_grpc, replay_pb2
from kozel.v1 import referee_pb2 as rpb

BOT, VS = "bot", "vs"


@dataclass(frozen=True)
class Entrant:
    """A house bot (``house``) or a command (``command``)."""

    label: str
    house: str = ""
    command: str = ""


def entrant(spec: str, house_bots: set[str]) -> Entrant:
    """A house bot when ``spec`` names one, else a command."""
    spec = spec.strip()
    if not spec:
        raise ValueError("an empty bot")
    if spec in house_bots:
        return Entrant(spec, house=spec)
    shlex.split(spec)  # ValueError on unbalanced quotes
    return Entrant(spec, command=spec)


def command_line(command: str, server: str, table: str, name: str) -> list[str]:
    """The command's argv with the placeholders filled in; a ``.py`` file first is run by
    this Python (the project's, with the SDK)."""
    argv = [
        a.replace("{server}", server).replace("{table}", table).replace("{name}", name)
        for a in shlex.split(command)
    ]
    if "{server}" not in command:
        argv += ["--server", server, "--table", table]
    if argv[0].endswith(".py"):
        argv.insert(0, sys.executable)
    return argv


@dataclass(frozen=True)
class Fixture:
    """One match to play: who sits where, and its seed."""

    index: int
    seats: tuple[str, ...]  # BOT or VS by seat
    seed: bytes
    pair: int  # matches sharing a seed and a pair number are scored as a pair (two sides)


def fixtures(players: int, teams: bool, matches: int, seed: bytes | None) -> Iterator[Fixture]:
    """Seat rotation: with two sides the bot takes side 0 then side 1 of the same deal
    sequence (one seed per pair); with three seats it takes seat 0, 1, 2 in turn, one seed per
    turn. ``seed`` makes the seeds repeatable."""
    two_sides = players == 2 or teams
    rotation = 2 if two_sides else players
    group_seed = b""
    for i in range(matches):
        group, turn = divmod(i, rotation)
        if turn == 0:
            group_seed = (
                hashlib.sha256(seed + group.to_bytes(8, "big")).digest()
                if seed
                else secrets.token_bytes(32)
            )
        if two_sides:
            seats = tuple(BOT if (s % 2 if teams else s) == turn else VS for s in range(players))
        else:
            seats = tuple(BOT if s == turn else VS for s in range(players))
        yield Fixture(i, seats, group_seed, group)


@dataclass
class Outcome:
    """One finished match from the bot's point of view."""

    fixture: Fixture
    score: float | None  # 1, 0.5, 0; None when the match was aborted
    bot_total: int  # penalties (penalty game) or chips (money game) of the bot's side
    money: bool
    timeouts: int  # the bot's seats'
    forfeits: int  # the bot's seats'
    vs_timeouts: int
    vs_forfeits: int
    replay_path: str
    reason: str
    error: str = ""
    logs: list[str] = field(default_factory=list)
    match_id: str = ""
    incidents: list[Incident] = field(default_factory=list)
    luck: SideLuck | None = None  # the bot's side's luck, from the replay (penalty game)


@dataclass
class Tally:
    """Running totals and the statistics of ``kozel play``."""

    players: int
    two_sides: bool
    sprt: Sprt | None = None
    outcomes: list[Outcome] = field(default_factory=list)
    pair_scores: dict[int, list[float]] = field(default_factory=dict)
    verdict: str | None = None
    verdict_llr: float | None = None
    verdict_matches: int = 0
    sprt_luck: bool = False  # the SPRT runs on the luck-corrected pair scores
    roles: tuple[str, ...] = (BOT, VS)  # the bots whose failures are reported
    failures: dict[str, dict[str, Failure]] = field(default_factory=dict)
    stopped: CannotStart | None = None  # a bot that could not start stopped the run

    def add(self, out: Outcome) -> None:
        self.outcomes.append(out)
        if out.score is not None and self.two_sides:
            self.pair_scores.setdefault(out.fixture.pair, []).append(out.score)
        for inc in out.incidents:
            kinds = self.failures.setdefault(inc.role, {})
            kinds.setdefault(inc.kind, Failure()).add(inc, out.match_id, out.replay_path)

    def count(self, score: float) -> int:
        return sum(1 for o in self.outcomes if o.score == score)

    @property
    def wdl(self) -> tuple[int, int, int]:
        return self.count(1.0), self.count(0.5), self.count(0.0)

    def pentanomial(self) -> list[int]:
        """Finished pairs by half-points of 4: LL, LD, WL+DD, WD, WW."""
        out = [0] * 5
        for scores in self.pair_scores.values():
            if len(scores) == 2:
                out[round(2 * sum(scores))] += 1
        return out

    def llr(self) -> float | None:
        """Pentanomial over finished pairs with two sides (matches come in pairs), else
        trinomial."""
        if self.sprt is None:
            return None
        if self.sprt_luck:
            return llr_normal(self.corrected_pairs(), self.sprt.elo0, self.sprt.elo1)
        if self.two_sides:
            return llr_pentanomial(self.pentanomial(), self.sprt.elo0, self.sprt.elo1)
        return llr_trinomial(*self.wdl, self.sprt.elo0, self.sprt.elo1)

    def corrected_pairs(self) -> list[float]:
        """The luck-corrected mean score of every finished pair whose luck is known."""
        pairs: dict[int, list[float]] = {}
        for o in self.outcomes:
            if o.score is not None and o.luck is not None:
                pairs.setdefault(o.fixture.pair, []).append(o.score - o.luck.score_luck)
        return [sum(p) / 2 for p in pairs.values() if len(p) == 2]

    def decided(self) -> str | None:
        """The SPRT's verdict, kept from the first match that reached it (matches still
        under way then count in the totals, not in the verdict)."""
        if self.verdict is None and self.sprt is not None:
            llr = self.llr()
            if llr is not None and (verdict := self.sprt.decide(llr)) is not None:
                self.verdict, self.verdict_llr = verdict, llr
                self.verdict_matches = len(self.outcomes)
        return self.verdict

    def luck_summary(self) -> dict[str, object] | None:
        return _luck_summary(self.outcomes, self.two_sides)

    def summary(self) -> dict[str, object]:
        w, d, lo = self.wdl
        played = [o for o in self.outcomes if o.score is not None]
        score = score_interval(w, d, lo)
        out: dict[str, object] = {
            "matches": len(self.outcomes),
            "wins": w,
            "draws": d,
            "losses": lo,
            "aborted": len(self.outcomes) - len(played),
            "score": _est(score),
            "win_rate": w / len(played) if played else None,
            "timeouts": sum(o.timeouts for o in self.outcomes),
            "forfeits": sum(o.forfeits for o in self.outcomes),
            "opponent_timeouts": sum(o.vs_timeouts for o in self.outcomes),
            "opponent_forfeits": sum(o.vs_forfeits for o in self.outcomes),
            "losses_replays": [o.replay_path for o in self.outcomes if o.score == 0.0],
            "errors": [o.error for o in self.outcomes if o.error],
            "failures": failure_report({r: self.failures.get(r, {}) for r in self.roles}),
        }
        if self.stopped is not None:
            out["stopped"] = self.stopped.as_dict()
        if played:
            key = "average_chips" if played[0].money else "average_penalty"
            out[key] = sum(o.bot_total for o in played) / len(played)
        if (luck := self.luck_summary()) is not None:
            out["luck"] = luck
        if self.two_sides:
            out["elo"] = _est(elo_interval(w, d, lo))
            out["pentanomial"] = self.pentanomial()
        else:
            out["fair_share"] = 1 / self.players  # the win rate of an equal bot
        if self.sprt is not None:
            low, high = self.sprt.bounds
            out["sprt"] = {
                "elo0": self.sprt.elo0,
                "elo1": self.sprt.elo1,
                "alpha": self.sprt.alpha,
                "beta": self.sprt.beta,
                "llr": self.llr(),
                "bounds": [low, high],
                "result": self.decided(),
                "decided_llr": self.verdict_llr,
                "decided_after": self.verdict_matches or None,
                "statistic": "luck-corrected pairs" if self.sprt_luck else "results",
            }
        return out


def _luck_summary(outcomes: list[Outcome], two_sides: bool) -> dict[str, object] | None:
    """The luck-corrected match score (and its Elo with two sides) and card points per deal,
    with this run's effective-games multipliers (docs/luck.md), over the matches whose luck
    is known, grouped by seed; None under two such matches."""
    known = [(o, o.luck) for o in outcomes if o.luck is not None and o.score is not None]
    if len(known) < 2:
        return None
    scores: dict[int, list[Unit]] = {}
    deals: dict[int, list[Unit]] = {}
    for o, luck in known:
        assert o.score is not None
        scores.setdefault(o.fixture.pair, []).append((o.score, o.score - luck.score_luck))
        deals.setdefault(o.fixture.pair, []).extend(luck.points)
    score = clustered(list(scores.values()), seed=0)
    out: dict[str, object] = {"version": LUCK_VERSION, "matches": len(known), "score": score}
    out["deal_points"] = clustered(list(deals.values()), seed=0)
    corrected = score["corrected"]
    if two_sides and isinstance(corrected, dict) and None not in corrected.values():
        elo = {k: score_to_elo(min(1.0, max(0.0, v))) for k, v in corrected.items()}
        out["elo"] = _est(Estimate(elo["value"], elo["low"], elo["high"]))
    return out


def _est(e: Estimate) -> dict[str, float | None]:
    def clean(x: float) -> float | None:
        return x if math.isfinite(x) else None  # strict JSON has no NaN or infinity

    return {"value": clean(e.value), "low": clean(e.low), "high": clean(e.high)}


@dataclass
class PlaySpec:
    """What ``kozel play`` was asked to do."""

    bot: Entrant
    vs: Entrant
    ruleset: pb.Ruleset
    players: int
    teams: bool
    clock: pb.TimeControl | None
    log_dir: Path
    timeout_s: float = 1800


def play_fixture(
    spec: PlaySpec, address: str, fx: Fixture, halt: threading.Event | None = None
) -> Outcome | None:
    """Open the table, start the command bots, wait for the result; None when ``halt`` was
    set meanwhile. Raises :class:`CannotStart` when a bot ends before its match starts."""
    table_id = _create(address, spec, fx, [(spec.bot, spec.vs)[r == VS].house for r in fx.seats])
    runs: list[SeatRun] = []
    named: dict[str, str] = {}
    done = None
    try:
        runs = _start(spec, address, table_id, fx, named, runs)
        done = _wait(address, table_id, runs, spec, halt or threading.Event())
    except grpc.RpcError as exc:
        why = f"{exc.code().name}: {exc.details()}"
        logs = [str(r.log) for r in runs]
        return Outcome(
            fx, None, 0, False, 0, 0, 0, 0, "", "error", error=f"table {table_id}: {why}", logs=logs
        )
    finally:
        for run in runs:
            run.end(0 if done is None else EXIT_WAIT_S)
    if done is None:
        return None
    return _outcome(spec, fx, done, named, runs, _replay(address, done))


def _start(
    spec: PlaySpec,
    address: str,
    table_id: str,
    fx: Fixture,
    named: dict[str, str],
    runs: list[SeatRun],
) -> list[SeatRun]:
    """Start the command bots of a fixture, their output to a log each, into ``runs`` (so
    that those started are ended if a later one cannot be run)."""
    for seat, role in enumerate(fx.seats):
        ent = spec.bot if role == BOT else spec.vs
        if not ent.command:
            continue
        name = f"{role}-{fx.index}-{seat}"
        named[name] = role
        log = spec.log_dir / f"{table_id}-seat{seat}-{role}.log"
        report = log.with_suffix(".report.jsonl")
        report.unlink(missing_ok=True)
        env = {**os.environ, "KOZEL_STRICT": "1", "KOZEL_REPORT": str(report)}
        env["PYTHONUNBUFFERED"] = "1"  # a log complete up to a crash
        with log.open("wb") as fh:
            try:
                proc = subprocess.Popen(
                    command_line(ent.command, address, table_id, name),
                    stdout=fh,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    env=env,
                )
            except OSError as exc:  # no such program, not executable
                fh.write(f"cannot run {ent.command!r}: {exc}\n".encode())
                fh.flush()
                raise CannotStart(role, ent.command, "could not be run", log) from None
        runs.append(SeatRun(seat, role, log, report, proc))
        if spec.bot.command and spec.vs.command and "{name}" not in ent.command:
            time.sleep(0.5)  # join order is seat order, as well as it can be without {name}
    return runs


def _wait(
    address: str, table_id: str, runs: list[SeatRun], spec: PlaySpec, halt: threading.Event
) -> rpb.WaitTableResponse | None:
    """The table's result, watching the bots meanwhile: one that ends before the match has
    started could not start (:class:`CannotStart`); None once ``halt`` is set."""
    with grpc.insecure_channel(address) as channel:
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        fut = stub.WaitTable.future(rpb.WaitTableRequest(table_id=table_id), timeout=spec.timeout_s)
        watched = list(runs)
        try:
            while True:
                with contextlib.suppress(grpc.FutureTimeoutError):
                    return fut.result(timeout=0.2)
                if halt.is_set():
                    return None
                for run in [r for r in watched if r.proc.poll() is not None]:
                    watched.remove(run)
                    with contextlib.suppress(grpc.FutureTimeoutError):
                        return fut.result(timeout=2)  # it may have just played its match
                    if not _started(channel, table_id):
                        run.end(0)
                        cmd = (spec.bot if run.role == BOT else spec.vs).command
                        raise CannotStart(run.role, cmd, run.exit, run.log)
        finally:
            fut.cancel()


def _started(channel: grpc.Channel, table_id: str) -> bool:
    """Whether the table's match is running."""
    live = match_pb2_grpc.MatchServiceStub(channel).ListLiveMatches(
        match_pb2.ListLiveMatchesRequest(limit=1000), timeout=30
    )
    return any(m.table_id == table_id for m in live.matches)


def _replay(address: str, done: rpb.WaitTableResponse) -> replay_pb2.Replay | None:
    """The match's replay: the referee's file when it is on this machine, else GetReplay."""
    from kozel.server.replay.file import decode_replay, read_replay

    try:
        if os.path.exists(done.replay_path):
            return read_replay(done.replay_path)
        with grpc.insecure_channel(address) as channel:
            stub = referee_pb2_grpc.RefereeServiceStub(channel)
            got = stub.GetReplay(rpb.GetReplayRequest(replay_id=done.replay_id), timeout=30)
        return decode_replay(got.replay_gz)
    except (OSError, ValueError, grpc.RpcError):
        return None


def _create(address: str, spec: PlaySpec, fx: Fixture, house: list[str]) -> str:
    with grpc.insecure_channel(address) as channel:
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        req = rpb.CreateTableRequest(
            ruleset=spec.ruleset, players=spec.players, seed=fx.seed, house_bots=house
        )
        if spec.clock is not None:
            req.time_control.CopyFrom(spec.clock)
        return stub.CreateTable(req, timeout=30).table_id


def _outcome(
    spec: PlaySpec,
    fx: Fixture,
    done: rpb.WaitTableResponse,
    named: dict[str, str],
    runs: list[SeatRun],
    replay: replay_pb2.Replay | None,
) -> Outcome:
    res = done.result
    roles = list(fx.seats)
    for p in done.seating:  # commands given {name} say where they really sat
        if p.name in named:
            roles[p.seat] = named[p.name]
    side_of = {p.seat: p.side for p in done.seating}
    bot_seats = [s for s, r in enumerate(roles) if r == BOT]
    bot_sides = {side_of[s] for s in bot_seats}
    money = not res.penalty_totals
    reason = pb.MatchEndReason.Name(res.reason).removeprefix("MATCH_END_REASON_").lower()
    if res.reason == pb.MATCH_END_REASON_ABORTED:
        score = None
    elif res.draw:
        score = 0.5
    else:
        score = (
            1.0
            if (res.winner_side in bot_sides if not money else res.winner_side in bot_seats)
            else 0.0
        )
    if money:
        total = sum(res.chips[s] for s in bot_seats)
    else:
        total = res.penalty_totals[next(iter(bot_sides))]
    forfeited = [f.seat for f in res.forfeits]
    timeouts = list(res.timeouts) or [0] * spec.players
    for run in runs:
        run.collect(done.match_id)
    return Outcome(
        fx,
        score,
        total,
        money,
        timeouts=sum(timeouts[s] for s in bot_seats),
        forfeits=sum(1 for s in forfeited if s in bot_seats),
        vs_timeouts=sum(t for s, t in enumerate(timeouts) if s not in bot_seats),
        vs_forfeits=sum(1 for s in forfeited if s not in bot_seats),
        replay_path=resolved(done.replay_path),
        reason=reason,
        logs=[str(r.log.resolve()) for r in runs],
        match_id=done.match_id,
        incidents=incidents(roles, res, replay, runs),
        luck=_luck(replay, next(iter(bot_sides)), score, money, spec.players),
    )


def _luck(
    replay: replay_pb2.Replay | None, side: int, score: float | None, money: bool, players: int
) -> SideLuck | None:
    """The bot's side's luck in a finished penalty match with one bot side (None when it
    cannot be had: no replay, aborted, the money game, or a replay the engine refuses)."""
    if replay is None or score is None or money:
        return None
    try:
        rules, n, records = replay_records(replay)
    except ValueError:
        return None
    return side_luck(rules, n, records, side) if n == players else None


def run(
    spec: PlaySpec,
    addresses: list[str],
    todo: Iterator[Fixture],
    concurrency: int,
    tally: Tally,
    on_done: Callable[[Outcome], None],
    max_time_s: float | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Play fixtures ``concurrency`` at a time (spread over ``addresses``) until they run out,
    the SPRT is decided, ``max_time_s`` has passed or ``stop`` is set; matches under way then
    still count. A bot that could not start stops everything at once (``tally.stopped``)."""
    lock = threading.Lock()
    stop = stop or threading.Event()
    halt = threading.Event()  # stop at once: a bot could not start
    deadline = time.monotonic() + max_time_s if max_time_s else None

    def worker(k: int) -> None:
        address = addresses[k % len(addresses)]
        while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
            with lock:
                fx = next(todo, None)
            if fx is None:
                return
            try:
                out = play_fixture(spec, address, fx, halt)
            except CannotStart as exc:
                with lock:
                    tally.stopped = tally.stopped or exc
                halt.set()
                stop.set()
                return
            if out is None:
                return
            with lock:
                tally.add(out)
                on_done(out)
                if tally.decided() is not None:
                    stop.set()

    threads = [
        threading.Thread(target=worker, args=(k,), daemon=True) for k in range(max(1, concurrency))
    ]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(0.5)  # wakes for signals
