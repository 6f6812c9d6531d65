"""The web as a referee's child process (``kozel serve``): started at a lower CPU priority on a
socket the referee keeps, supervised and started again when it exits; or, with
``web.in_process``, served in the referee's own event loop."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import structlog

from kozel.server.peers import PROXY_KEY_ENV
from kozel.web.api import WebLimits
from kozel.web.app import create_app
from kozel.web.ops import OPS_TOKEN_ENV, token_sha256
from kozel.web.readonly import DATABASE_URL_ENV
from kozel.web.repeats import Repeats
from kozel.web.serving import WebServer, bind, parse_listen


def idle_priority() -> None:
    """Run this process under SCHED_IDLE where the system has it (Linux): it gets only CPU time
    that no normal process wants."""
    if hasattr(os, "SCHED_IDLE"):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


# Of the referee's own KOZEL_* variables (which may hold its admin token and database URL),
# only these reach the web child.
CHILD_KEEPS = frozenset({"KOZEL_ENGINE_PURE"})


def inherited_env() -> dict[str, str]:
    """The referee's environment without its ``KOZEL_*`` settings (secrets among them)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("KOZEL_") or k in CHILD_KEEPS}


class WebChild:
    """``kozel web`` as a child process of a referee, at a lower CPU priority (``nice``), so
    pages and replay conversions never take CPU time from the match clocks: the referee's
    event loop only answers the child's gRPC calls (running matches, replays, spectating).
    A child that exits on its own is started again (after ``RESTART_S``, doubling up to
    ``RESTART_MAX_S``) on the same listening socket, which the referee keeps: meanwhile
    connections wait in its backlog."""

    RESTART_S = 1.0
    RESTART_MAX_S = 30.0
    STEADY_S = 60.0  # a child that ran this long resets the back-off

    def __init__(
        self, cmd: list[str], nice: int, idle: bool = False, env: dict[str, str] | None = None
    ) -> None:
        self.cmd = cmd
        self.env = env or {}  # for the child only (never on its command line)
        self.nice = nice
        self.idle = idle
        self.proc: subprocess.Popen[str] | None = None
        self.restarts = 0
        self._sock: socket.socket | None = None
        self._stopping = threading.Event()
        self._log = structlog.get_logger("kozel.web")

    def _preexec(self) -> None:
        import ctypes

        os.nice(self.nice)
        if self.idle:
            idle_priority()
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # die with the referee

    async def start(self, host: str, port: int) -> int:
        """Bind here (an ``OSError`` at once if the address is taken) and hand the listening
        socket to the child: the referee does not wait for the child to import and start;
        early connections wait in the backlog. Returns the bound port."""
        self._sock = bind(host, port)
        try:
            self._spawn()
        except OSError:
            self._sock.close()
            raise
        threading.Thread(target=self._supervise, daemon=True).start()
        return self._sock.getsockname()[1]

    def _spawn(self) -> subprocess.Popen[str]:
        assert self._sock is not None
        fd = self._sock.fileno()
        # Started, not awaited: its output is read by the supervising thread.
        self.proc = proc = subprocess.Popen(
            [*self.cmd, "--listen-fd", str(fd)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            preexec_fn=self._preexec,
            pass_fds=(fd,),
            env={**inherited_env(), **self.env, "PYTHONUNBUFFERED": "1"},
        )
        return proc

    def _supervise(self) -> None:
        """Pass the child's output to the log (it never fills a pipe); start it again when it
        exits while the referee runs."""
        delay = self.RESTART_S
        repeats = Repeats()  # a line repeated in a flood is logged once a minute, with a count
        while True:
            proc = self.proc
            assert proc is not None and proc.stdout is not None
            began = time.monotonic()
            for line in proc.stdout:
                text = line.rstrip()[:500]
                if line.startswith("web pages on ") or (left_out := repeats.admit(text)) is None:
                    continue
                if left_out:
                    self._log.warning("web_child_output", line=text, repeated=left_out)
                else:
                    self._log.warning("web_child_output", line=text)
            code = proc.wait()
            if self._stopping.is_set():
                return
            if time.monotonic() - began >= self.STEADY_S:
                delay = self.RESTART_S
            self._log.error("web_child_exited", returncode=code, restart_in_s=delay)
            if self._stopping.wait(delay):
                return
            delay = min(delay * 2, self.RESTART_MAX_S)
            try:
                started = self._spawn()
            except OSError as exc:
                self._log.error("web_child_not_started", error=str(exc))
                return
            self.restarts += 1
            if self._stopping.is_set():  # stop() came while it started: it saw the old one
                started.terminate()

    async def stop(self) -> None:
        self._stopping.set()
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                await asyncio.to_thread(proc.wait, 10)
            except subprocess.TimeoutExpired:
                proc.kill()
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _child_env(config: Any, ops_sha256: str) -> dict[str, str]:
    """What the web child is told through its environment (never on its command line, which
    any local user can read): the store's URL (a read-only role when ``web.database_url``
    names one) and the admin token's hash; never the admin token."""
    env = {OPS_TOKEN_ENV: ops_sha256} if ops_sha256 else {}
    if config.web_proxy_key:  # its visitors' addresses count for the referee's limits
        env[PROXY_KEY_ENV] = config.web_proxy_key
    if config.ladders or config.tournaments:
        from kozel.ladder.store import default_url

        env[DATABASE_URL_ENV] = (
            config.web_database_url or config.database_url or default_url(config.data_dir)
        )
    return env


def _child_command(config: Any, referee: str) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "kozel.cli.main",
        "web",
        "--listen",
        config.web_listen,
        "--replays",
        str(config.replay_dir),
        "--referee",
        referee,
    ]
    for spec in config.ladders:
        if spec.duplicate:
            cmd += ["--duplicate-ladder", spec.name]
    for key, value in [*config.web_limits, *config.replay_limits.pairs()]:
        cmd += ["--limit", f"{key}={value}"]
    if config.web_cpu_share:
        cmd += ["--cpu-share", str(config.web_cpu_share)]
    if config.trusted_proxies:
        cmd += ["--trusted-proxies", config.trusted_proxies]
    return cmd


async def start_in_referee(
    lobby: Any, config: Any, referee: str
) -> tuple[WebServer | WebChild | None, int]:
    """Serve the web for a referee (``kozel serve``): by default as a niced child process
    (``kozel web`` following this referee over gRPC at ``referee``, a plaintext address); in
    the referee's own event loop with ``web.in_process``. A port in use is an error unless the
    address was left at its default (then a warning)."""
    from kozel.web.sources import LobbySources

    log = structlog.get_logger("kozel.web")
    server: WebServer | WebChild
    ops = token_sha256(config.admin_token) if config.admin_token else ""
    if config.web_in_process:
        store = None
        if lobby.store is not None:  # the same database, opened for reading only
            from kozel.web.readonly import ReadOnlyStore

            store = ReadOnlyStore(
                config.web_database_url
                or lobby.store.engine.url.render_as_string(hide_password=False)
            )
        server = WebServer(
            create_app(
                LobbySources(lobby, store),
                WebLimits(**dict(config.web_limits)),
                ops_token_sha256=ops,
                referee=referee,
                proxy_key=config.web_proxy_key,
            ),
            config.web_listen,
            WebLimits(**dict(config.web_limits)),
            config.trusted_proxies,
        )
    else:
        server = WebChild(
            _child_command(config, referee),
            config.web_nice,
            config.web_idle,
            env=_child_env(config, ops),
        )
    try:
        if isinstance(server, WebChild):
            host, port = parse_listen(config.web_listen)
            return server, await server.start(host, port)
        return server, await server.start()
    except OSError as exc:
        if not config.web_optional:
            raise
        log.warning("web_not_served", error=str(exc))
        print(f"web pages not served: {exc} (set web.listen or --web-listen)", flush=True)
        return None, 0
