"""What happened in a bot's run, counted and told: the matches it won, drew and lost, the
exceptions its own code raised and the answers the referee refused.

Every problem is logged for the author. With ``KOZEL_REPORT`` set to a file (``kozel play``
and ``kozel conformance`` set it for each bot process they start) each one is also appended
there as a JSON line, which those tools read to report the bot's failures:

    {"kind": "exception", "match_id": "...", "request_id": 15, "what": "choose",
     "text": "ZeroDivisionError: division by zero", "where": "mybot.py, line 9, in choose"}
    {"kind": "refusal", "match_id": "...", "request_id": 7, "what": "ERROR_CODE_NOT_HELD",
     "text": "you do not hold AS", "where": ""}
"""

from __future__ import annotations

import json
import os
import traceback
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import IO

REPORT_ENV = "KOZEL_REPORT"  # a file to append each problem to, as a JSON line
STRICT_ENV = "KOZEL_STRICT"  # "1": an exception in the bot's code ends the run; "0": it does not


class BotError(Exception):
    """The bot's own code raised while strict (the default off ladders): the run stopped.
    ``__cause__`` is the exception the bot raised."""


@dataclass(frozen=True)
class Problem:
    """One exception or refused answer."""

    kind: str  # "exception" or "refusal"
    match_id: str
    request_id: int
    what: str  # the method that raised ("choose", "on_deal_start"), or the refusal's code
    text: str  # "ZeroDivisionError: division by zero", or the referee's sentence
    where: str = ""  # the innermost frame of an exception: "mybot.py, line 9, in choose"

    def line(self) -> str:
        """One line for a log or a terminal."""
        where = f" ({self.where})" if self.where else ""
        return f"{self.what}: {self.text}{where}"


def strict_from_env(default: bool) -> bool:
    """``KOZEL_STRICT`` when set ("1"/"0", "true"/"false"), else ``default``."""
    value = os.environ.get(STRICT_ENV, "").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    return default


@dataclass
class Report:
    """A run's tally. Pass one to :func:`kozel.sdk.play` (``report=``) to read it afterwards,
    whichever way the run ended."""

    wins: int = 0
    draws: int = 0
    losses: int = 0
    aborted: int = 0
    counts: Counter[str] = field(default_factory=Counter)  # problems by kind
    first: dict[str, Problem] = field(default_factory=dict)  # the first problem of each kind
    verdicts: dict[str, str] = field(default_factory=dict)  # by match id, in the order ended
    path: str | None = field(default_factory=lambda: os.environ.get(REPORT_ENV) or None)
    _file: IO[str] | None = field(default=None, repr=False)

    def exception(self, match_id: str, request_id: int, what: str, exc: BaseException) -> Problem:
        """Count an exception raised by the bot's ``what`` (a method name)."""
        frames = traceback.extract_tb(exc.__traceback__)
        where = ""
        if frames:
            f = frames[-1]
            where = f"{os.path.basename(f.filename)}, line {f.lineno}, in {f.name}"
        text = "".join(traceback.format_exception_only(exc)).strip().splitlines()[-1]
        return self._add(Problem("exception", match_id, request_id, what, text, where))

    def refusal(self, match_id: str, request_id: int, code: str, sentence: str) -> Problem:
        """Count an answer the referee refused."""
        return self._add(Problem("refusal", match_id, request_id, code, sentence))

    def result(self, match_id: str, verdict: str) -> None:
        """Count a finished match: "won", "drawn", "lost" or "aborted"."""
        name = {"won": "wins", "drawn": "draws", "lost": "losses"}.get(verdict, "aborted")
        setattr(self, name, getattr(self, name) + 1)
        self.verdicts[match_id] = verdict

    def summary(self) -> str:
        """One line: the matches and, if any, the problems with the first of each kind."""
        played = self.wins + self.draws + self.losses
        text = f"{played} match{'' if played == 1 else 'es'}: {self.wins} won, "
        text += f"{self.draws} drawn, {self.losses} lost"
        if self.aborted:
            text += f", {self.aborted} aborted"
        for kind, label in (("exception", "exceptions in the bot"), ("refusal", "refused")):
            if self.counts[kind]:
                text += f"; {self.counts[kind]} {label} (first: {self.first[kind].line()})"
        return text

    def open(self) -> None:
        """Create the report file (empty until a problem): a tool reading it then knows the
        bot keeps a report and raised nothing."""
        self._write("")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _add(self, problem: Problem) -> Problem:
        self.counts[problem.kind] += 1
        self.first.setdefault(problem.kind, problem)
        self._write(json.dumps(asdict(problem)) + "\n")
        return problem

    def _write(self, text: str) -> None:
        if not self.path:
            return
        try:
            if self._file is None:
                self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open
            self._file.write(text)
            self._file.flush()
        except OSError:
            self.path = None  # a report that cannot be written must not stop the bot
