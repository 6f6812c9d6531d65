"""What ``kozel serve`` hands the referee to play tournaments' bots (a composition root's
parts, as the house bots are): house bots with their budget and seed, and command bots started
per game as ``kozel play`` starts them (``{server}``, ``{table}``, ``{name}``; strict, with an
SDK report beside the log)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from kozel.sdk.house_bots import make
from kozel.server.house import HousePlayer
from kozel.server.tournament_seats import TournamentParts
from kozel.tools.play_diag import EXIT_WAIT_S
from kozel.tools.playoff import command_line


class CommandProcess:
    """One command bot's process for one game."""

    def __init__(self, command: str, server: str, table: str, name: str, log: Path) -> None:
        env = {
            **os.environ,
            "KOZEL_STRICT": "1",
            "KOZEL_REPORT": str(log.with_suffix(".report.jsonl")),
            "PYTHONUNBUFFERED": "1",
        }
        with log.open("wb") as fh:
            self.proc = subprocess.Popen(
                command_line(command, server, table, name),
                stdout=fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env=env,
            )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def end(self) -> None:
        """(Blocking.) Its game is over: SIGTERM, then SIGKILL after a grace time."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def house(kind: str, budget_s: float | None, seed: int) -> HousePlayer:
    return make(kind, budget_s=budget_s, seed=seed)


PARTS = TournamentParts(house=house, launch=CommandProcess)
