"""Referee settings with their defaults. Every limit is explicit here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kozel.core.clock import Clock
from kozel.server.replay.limits import ReplayLimits

_REPLAY = ReplayLimits()


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """PEM files for a TLS port; with ``client_ca`` clients must present a certificate."""

    cert: Path
    key: Path
    client_ca: Path | None = None


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Everything ``kozel serve`` can be told."""

    listen: str = "127.0.0.1:50051"
    advertise_address: str = ""  # the bot address redirects to this referee name; "" = listen
    tls: TlsFiles | None = None  # TLS (and mutual TLS) on the bot port
    operator_listen: str = ""  # AdminService + health on their own port; "" = the bot port
    operator_tls: TlsFiles | None = None
    admin_token: str = ""  # bearer token for AdminService; "" = admin RPCs refused
    metrics_listen: str = ""  # Prometheus /metrics over HTTP; "" = off
    web_listen: str = ""  # web pages and HTTP API (kozel.web); "" = off (kozel serve: on)
    web_optional: bool = False  # True: a web port in use is a warning, not an error
    web_limits: tuple[tuple[str, int], ...] = ()  # kozel.web.api.WebLimits fields to override
    web_in_process: bool = False  # serve the web in the referee's loop, not a niced child
    web_nice: int = 19  # the web child's niceness
    web_idle: bool = True  # ... and it runs under SCHED_IDLE (Linux)
    web_cpu_share: float = 0.25  # ... and spends at most this share of one core (0: no cap)
    web_database_url: str = ""  # the store as the web reads it (a read-only role); "" = ours
    drain_timeout_s: float = 60.0  # SIGTERM: running matches get this long to finish
    trusted_proxies: str = ""  # proxies whose forwarded address names the client ("*": any)
    # Shown by the referee's own web child (in PROXY_KEY_ENV) so that the addresses of its
    # visitors it forwards count; start_referee makes one up (never in a file).
    web_proxy_key: str = ""
    gc_thresholds: tuple[int, int, int] = (10_000, 20, 10)  # gc.set_threshold in serve()
    replay_dir: Path = Path("data/replays")
    clock: Clock = field(default_factory=Clock)
    hello_timeout_s: float = 10.0  # a stream must send Hello within this
    max_receive_message_bytes: int = 64 * 1024  # one bot message
    max_send_message_bytes: int = 4 * 1024 * 1024
    max_streams: int = 4096  # concurrent Play streams (gRPC maximum_concurrent_rpcs)
    max_matches_per_stream: int = 16  # Hello.max_matches is capped at this
    outbox_limit: int = 2048  # queued messages to one stream before it is closed as too slow
    max_refused_answers: int = 256  # stale or forged answers in a row before the stream is cut
    max_tables: int = 1024  # open tables at once
    max_running_matches: int = 1024  # queue and ladder matches wait beyond this many running
    # Queue and ladder matches wait while the event loop runs this late (smoothed), so the
    # clock of running matches stays honest under overload; 0 turns it off.
    admission_lag_ms: float = 25.0
    # The adaptive match cap also keeps the event loop's thread this busy at most (a share of
    # its wall time spent on the CPU), so bursts find room before they turn into lag; 0 = off.
    admission_busy: float = 0.75
    # At most this many queue and ladder matches start per second (refilled with each lag
    # sample), so the lag can rise before a burst of new matches has swamped the referee.
    max_match_starts_per_s: float = 64.0
    table_linger_s: float = 600.0  # a finished table stays for WaitTable this long
    session_linger_s: float = 60.0  # how long an idle detached session can still be resumed
    max_spectators_per_match: int = 64  # WatchMatch subscribers per match
    max_spectators: int = 1024  # WatchMatch subscribers in all
    max_spectators_per_peer: int = 8  # WatchMatch subscribers of one match from one address
    max_tables_per_peer: int = 64  # open tables created from one address
    # Queue matches start for a client address (a ladder bot: its identity) while it plays
    # fewer than this many matches; beyond, its queued bots wait and others go first.
    max_queue_matches_per_peer: int = 16
    empty_table_linger_s: float = 60.0  # a table no remote bot joined closes after this
    # A person's table waits this long for a busy ladder bot's next free match slot, then closes.
    people_wait_s: float = 120.0
    max_people_waiting_per_bot: int = 4  # tables waiting for one ladder bot at once
    max_match_deals: int = 1000  # a match ends (aborted) after this many deals; fixed_deals <= it
    max_idle_rpcs: int = 1024  # WaitTable, WatchMatch and health.Watch calls at once, in all
    max_idle_rpcs_per_peer: int = 256  # ... from one address
    max_idle_rpc_s: float = 1800.0  # such a call ends with DEADLINE_EXCEEDED after this
    operator_max_idle_rpcs: int = 32  # health.Watch calls at once on the operator port
    reserved_rpcs: int = 64  # gRPC slots above every cap, for short calls (health checks)
    max_reflection_rpcs: int = 16  # reflection streams at once, per port
    max_reflection_rpcs_per_peer: int = 4  # ... from one address
    reflection_idle_s: float = 30.0  # a reflection stream waiting this long for a request ends
    max_sessions_per_bot: int = 8  # connected sessions of one ladder bot
    max_lingering_sessions: int = 4096  # detached sessions kept for a resume, oldest go first
    keepalive_time_s: float = 10.0  # the referee pings a connection quiet for this long
    keepalive_timeout_s: float = 5.0  # ... and closes it when the ping is unanswered this long
    spectator_delay_s: float = 0.0  # full-information spectating after this delay; 0 = off
    # A replay file read (by the referee, its web, recovery) is refused past these
    # (kozel.server.replay.limits): its size, once decompressed too, its deals and steps, and
    # the bytes of fields the reader does not know.
    replay_max_bytes: int = _REPLAY.max_bytes
    replay_max_deals: int = _REPLAY.max_deals
    replay_max_steps: int = _REPLAY.max_steps
    replay_max_unknown_bytes: int = _REPLAY.max_unknown_bytes
    ladders: tuple = ()  # kozel.ladder.config.LadderSpec, served from the start
    tournaments: tuple = ()  # kozel.tournament.spec.TournamentSpec, served from the start
    data_dir: Path = Path("data")  # the SQLite store lives here unless database_url is given
    database_url: str = ""
    referee_id: str = ""  # this referee's name in the store; "" = kept in data_dir/referee-id
    lease_s: float = 10.0  # the referee's lease in the store: renewed every lease_s / 4
    # A ladder another live referee serves: False refuses to start; True waits as its standby
    # and takes it over (with its orphaned matches) once that referee's lease expires.
    ladder_standby: bool = False
    # Ladders shared with every referee on the same store: bots wait as tickets in the store,
    # one referee at a time schedules each ladder, and a match's bots are redirected to its host.
    cluster: bool = False
    cluster_poll_s: float = 0.25  # how often a referee publishes tickets and reads assignments
    store_flush_timeout_s: float = 10.0  # at stop, queued writes drain until none is done this long
    # The luck worker (docs/luck.md): finished ladder matches per pass, and the pause when
    # none waits.
    luck_batch: int = 20
    luck_idle_s: float = 5.0

    @property
    def replay_limits(self) -> ReplayLimits:
        """The bounds every replay read of this referee applies."""
        return ReplayLimits(
            self.replay_max_bytes,
            self.replay_max_deals,
            self.replay_max_steps,
            self.replay_max_unknown_bytes,
        )
