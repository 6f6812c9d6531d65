"""A ``kozel serve --config`` process for tests: written config, parsed ports, clean stop."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families

PORT_LINES = {
    "bot": r"kozel referee listening on \S+:(\d+)",
    "operator": r"operator port listening on \S+:(\d+)",
    "metrics": r"metrics on http://\S+:(\d+)/metrics",
}


@dataclass
class Served:
    """A running referee process and the ports it printed (bot, operator, metrics)."""

    proc: subprocess.Popen[str]
    ports: dict[str, int]
    lines: list[str] = field(default_factory=list)

    def addr(self, which: str = "bot") -> str:
        return f"127.0.0.1:{self.ports[which]}"

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise


def serve(
    config: dict,
    tmp_path: Path,
    *flags: str,
    env: dict | None = None,
    want: tuple[str, ...] = ("bot",),
) -> Served:
    """Start ``kozel serve --config`` and wait until the wanted ports are printed."""
    path = tmp_path / f"referee-{time.monotonic_ns()}.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kozel.cli.main", "serve", "--config", str(path), *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )
    served = Served(proc, {})
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and set(want) - set(served.ports):
        line = proc.stdout.readline()
        if not line:
            break
        served.lines.append(line)
        for name, pattern in PORT_LINES.items():
            if m := re.search(pattern, line):
                served.ports[name] = int(m.group(1))
    if set(want) - set(served.ports):
        proc.kill()
        raise RuntimeError(
            "the referee did not start:\n" + "".join(served.lines) + proc.stdout.read()
        )
    return served


def base_config(tmp_path: Path, **extra) -> dict:
    """A minimal config: any free bot port, data under ``tmp_path``, quiet logs."""
    return {
        "listen": "127.0.0.1:0",
        "storage": {"data_dir": str(tmp_path / "data")},
        "logging": {"level": "WARNING"},
        "drain_timeout_s": 30,
        "web": {"listen": ""},
        **extra,
    }


def luck_config(tmp_path: Path, store_url: str, **extra) -> dict:
    """:func:`base_config` on the store ``store_url`` with replays in ``tmp_path/replays`` and
    a luck worker that pauses only 0.2 s between passes (docs/luck.md)."""
    config = base_config(tmp_path, **extra)
    config["storage"]["database_url"] = store_url
    config["storage"]["replay_dir"] = str(tmp_path / "replays")
    config["referee"] = {"luck_idle_s": 0.2}
    return config


def scrape(port: int) -> dict[str, float]:
    """A referee's /metrics on ``port``: each sample by its name and labels
    (``name{label=value}``)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return {
        s.name + "".join(f"{{{k}={v}}}" for k, v in sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
