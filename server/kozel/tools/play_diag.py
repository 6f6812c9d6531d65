"""What went wrong with each bot in ``kozel play``: one failure report per bot.

Two sources are joined, match by match. The referee's record (the result and the replay) gives
forfeits with their reason, timeouts and refused answers (with the first refusal's code and
sentence). A command bot's process gives its exit status or signal, and, through the SDK's
report file (``KOZEL_REPORT``, see ``kozel.sdk.report``), the exceptions its code raised. Each
kind is counted per bot with the log and the replay of the first match where it happened."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kozel.v1 import game_pb2 as pb
from kozel.v1 import replay_pb2

KINDS = ("forfeits", "timeouts", "refusals", "exceptions", "exits")
LAST_LINES = 15  # of a log, shown when a bot could not start
EXIT_WAIT_S = 30  # a bot still running this long after its match ended is killed


@dataclass
class SeatRun:
    """A command bot's process at one seat of one match, and what it left behind."""

    seat: int
    role: str
    log: Path
    report: Path  # the SDK's KOZEL_REPORT file
    proc: subprocess.Popen[bytes]
    exit: str = ""  # how it ended, when not with status 0 ("exit status 3", "signal SIGKILL")
    problems: list[dict[str, object]] = field(default_factory=list)  # the report's lines

    def end(self, wait_s: float = EXIT_WAIT_S) -> None:
        """Wait for the process (kill it after ``wait_s``) and say how it ended."""
        try:
            code = self.proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.exit = f"still running {wait_s:g} s after its match ended (killed)"
            if not wait_s:
                self.exit = "killed: the run stopped"
            return
        self.exit = exit_text(code)

    def collect(self, match_id: str) -> None:
        """Read the SDK's report, then name the log after the match."""
        with contextlib.suppress(OSError):
            for line in self.report.read_text(encoding="utf-8", errors="replace").splitlines():
                with contextlib.suppress(ValueError):
                    if isinstance(item := json.loads(line), dict):
                        self.problems.append(item)
            self.report.unlink()
        if match_id:
            named = self.log.with_name(f"{match_id}-seat{self.seat}-{self.role}.log")
            with contextlib.suppress(OSError):
                self.log = self.log.rename(named)

    def first(self, kind: str) -> tuple[int, str]:
        """How many problems of ``kind`` ("exception", "refusal") and the first in one line."""
        found = [p for p in self.problems if p.get("kind") == kind]
        if not found:
            return 0, ""
        p = found[0]
        where = f" ({p['where']})" if p.get("where") else ""
        return len(found), f"{p.get('what', '')}: {p.get('text', '')}{where}"


def exit_text(code: int) -> str:
    """ "" for status 0, else "exit status N" or "signal NAME"."""
    if code == 0:
        return ""
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


class CannotStart(Exception):
    """A bot's process ended before its match started (or could not be run): the run stops."""

    def __init__(self, role: str, command: str, exit: str, log: Path) -> None:
        self.role, self.command, self.exit, self.log = role, command, exit or "exit status 0", log
        super().__init__(
            f"the {'bot' if role == 'bot' else 'opponent'} could not start: {command!r} "
            f"ended ({self.exit}) before its match started"
        )

    def as_dict(self) -> dict[str, object]:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        return {
            "role": self.role,
            "command": self.command,
            "exit": self.exit,
            "log": str(self.log.resolve()),
            "last_lines": text.rstrip().splitlines()[-LAST_LINES:],
        }


@dataclass(frozen=True)
class Incident:
    """Something that went wrong for one bot (``role``) in one match."""

    role: str
    kind: str  # one of KINDS
    count: int
    detail: str = ""  # a forfeit's reason, an exit status, the first refusal or exception
    log: str = ""  # the seat's log, for a command bot


def incidents(
    roles: list[str],
    result: pb.MatchResult,
    replay: replay_pb2.Replay | None,
    runs: list[SeatRun],
) -> list[Incident]:
    """What went wrong in one match for each seat; ``roles`` by seat."""
    by_seat = {r.seat: r for r in runs}
    first_refusal = _first_refusals(replay)
    out: list[Incident] = []
    for f in result.forfeits:
        why = pb.ForfeitReason.Name(f.reason).removeprefix("FORFEIT_REASON_").lower()
        out.append(Incident(roles[f.seat], "forfeits", 1, why, _log(by_seat, f.seat)))
    for seat, role in enumerate(roles):
        log, run = _log(by_seat, seat), by_seat.get(seat)
        if seat < len(result.timeouts) and result.timeouts[seat]:
            out.append(Incident(role, "timeouts", result.timeouts[seat], "", log))
        refused = result.rejections[seat] if seat < len(result.rejections) else 0
        reported, first = run.first("refusal") if run is not None else (0, "")
        if refused or reported:
            detail = first_refusal.get(seat) or first or "(the first refusal was not recorded)"
            out.append(Incident(role, "refusals", max(refused, reported), detail, log))
        if run is None:
            continue
        raised, first = run.first("exception")
        if raised:
            out.append(Incident(role, "exceptions", raised, first, log))
        if run.exit:
            out.append(Incident(role, "exits", 1, run.exit, log))
    return out


def _log(by_seat: dict[int, SeatRun], seat: int) -> str:
    run = by_seat.get(seat)
    return str(run.log.resolve()) if run is not None else ""


def _first_refusals(replay: replay_pb2.Replay | None) -> dict[int, str]:
    """The first refused answer of each seat in the replay: "CODE: sentence"."""
    first: dict[int, str] = {}
    for deal in replay.deals if replay is not None else ():
        for step in deal.steps:
            if step.rejections and step.seat not in first:
                r = step.rejections[0]
                first[step.seat] = f"{pb.ErrorCode.Name(r.code)}: {r.message}"
    return first


@dataclass
class Failure:
    """One kind of failure of one bot over the run."""

    count: int = 0
    matches: int = 0
    details: Counter[str] = field(default_factory=Counter)  # forfeit reasons, exit statuses
    first: dict[str, str] = field(default_factory=dict)  # its match, replay, log, detail

    def add(self, inc: Incident, match_id: str, replay: str) -> None:
        self.count += inc.count
        self.matches += 1
        if inc.kind in ("forfeits", "exits"):
            self.details[inc.detail] += inc.count
        if not self.first:
            self.first = {"match_id": match_id, "replay": replay, "log": inc.log}
            if inc.kind in ("refusals", "exceptions"):
                self.first["detail"] = inc.detail

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"count": self.count, "matches": self.matches}
        if self.details:
            out["by"] = dict(self.details)
        if self.first:
            out["first"] = self.first
        return out


def report(failures: dict[str, dict[str, Failure]]) -> dict[str, dict[str, object]]:
    """The JSON form: by role, every kind (count 0 when it never happened)."""
    return {
        role: {kind: kinds.get(kind, Failure()).as_dict() for kind in KINDS}
        for role, kinds in failures.items()
    }


def render_lines(failures: dict[str, dict[str, object]], labels: dict[str, str]) -> list[str]:
    """The report as plain lines (never cut: paths are printed whole)."""
    lines: list[str] = []
    for role, kinds in failures.items():
        happened = {k: v for k, v in kinds.items() if v["count"]}  # type: ignore[index]
        label = labels.get(role, role)
        if not happened:
            lines.append(f"{label}: no forfeit, timeout, refusal, exception or early exit")
            continue
        lines.append(f"{label}:")
        for kind, f in happened.items():
            lines.extend(_kind_lines(kind, f))  # type: ignore[arg-type]
    return lines


def _kind_lines(kind: str, f: dict) -> list[str]:
    count, first = f["count"], f.get("first", {})
    what = {
        "forfeits": "matches lost by forfeit",
        "timeouts": "timeouts",
        "refusals": "refused answers",
        "exceptions": "exceptions the SDK caught",
        "exits": "processes that ended badly",
    }[kind]
    text = f"    {what}: {count} in {f['matches']} match{'' if f['matches'] == 1 else 'es'}"
    if f.get("by"):
        text += " (" + ", ".join(f"{why}: {n}" for why, n in f["by"].items()) + ")"
    lines = [text]
    if first.get("detail"):
        lines.append(f"      first: {first['detail']}")
    if first.get("log"):
        lines.append(f"      first log:    {first['log']}")
    if first.get("replay"):
        lines.append(f"      first replay: {first['replay']}")
    return lines


def resolved(path: str) -> str:
    """An absolute path when the file is on this machine, else the path as given."""
    return str(Path(path).resolve()) if path and os.path.exists(path) else path
