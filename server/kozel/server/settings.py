"""The referee's configuration file: one YAML file, overridden by ``KOZEL_*`` environment
variables and then by command-line flags, validated at start with errors that name the key.

``load_settings`` returns the validated ``Settings``; ``Settings.server_config()`` turns them into
the runtime ``ServerConfig``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from kozel.core.clock import DOCS as CLOCK_DOCS
from kozel.core.clock import Clock
from kozel.ladder.config import ConfigError, LadderSpec, load_ladders, parse_ladders, problem
from kozel.ladder.tournament_file import load_tournaments, parse
from kozel.server.config import ServerConfig, TlsFiles
from kozel.server.identity import check_id
from kozel.server.peers import trusted_addresses
from kozel.tournament.spec import TournamentSpec

ENV_PREFIX = "KOZEL_"
_DEFAULTS = ServerConfig()  # the runtime defaults: every key mapped onto it takes its default


def _check_listen(value: str) -> str:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{value!r} is not host:port (port 0-65535; 0 picks a free one)")
    return value


def _check_url(value: str) -> str:
    if value and not value.startswith(("sqlite", "postgresql")):
        raise ValueError("database_url must be a sqlite:// or postgresql+psycopg:// URL")
    return value


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TlsSettings(_Section):
    """TLS for one port; ``client_ca_file`` turns on mutual TLS."""

    cert_file: Path | None = None
    key_file: Path | None = None
    client_ca_file: Path | None = None

    @model_validator(mode="after")
    def _complete(self) -> TlsSettings:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")
        if self.client_ca_file is not None and self.cert_file is None:
            raise ValueError("client_ca_file (mutual TLS) needs cert_file and key_file")
        for name in ("cert_file", "key_file", "client_ca_file"):
            path = getattr(self, name)
            if path is not None and not path.is_file():
                raise ValueError(f"{name}: no such file: {path}")
        return self

    def files(self) -> TlsFiles | None:
        if self.cert_file is None or self.key_file is None:
            return None
        return TlsFiles(self.cert_file, self.key_file, self.client_ca_file)


MIN_ADMIN_TOKEN = 32  # characters: `openssl rand -hex 32` gives 64
# Words of the examples in deploy/ and the docs: a token holding one was never replaced.
PLACEHOLDERS = ("replace-me", "replaceme", "change-me", "changeme", "example", "placeholder")


def weak_token(token: str) -> str:
    """Why ``token`` cannot guard the admin API ("" when it can, or when it is unset: admin
    calls are then refused)."""
    if not token:
        return ""
    lowered = token.lower()
    if any(word in lowered for word in PLACEHOLDERS):
        return (
            "the admin token is still an example's placeholder: generate one (openssl rand -hex 32)"
        )
    if len(token) < MIN_ADMIN_TOKEN:
        return (
            f"the admin token has {len(token)} characters; at least {MIN_ADMIN_TOKEN} are "
            "needed (openssl rand -hex 32)"
        )
    return ""


class OperatorSettings(_Section):
    """The operator port: AdminService, health and reflection."""

    listen: str = Field(
        _DEFAULTS.operator_listen,
        description="operator port host:port (AdminService, health); '' = the bot port",
    )
    admin_token: SecretStr = SecretStr("")
    admin_token_file: Path | None = None
    tls: TlsSettings = Field(default_factory=TlsSettings)

    @field_validator("listen")
    @classmethod
    def _listen(cls, value: str) -> str:
        return _check_listen(value) if value else value

    @model_validator(mode="after")
    def _token(self) -> OperatorSettings:
        if self.admin_token_file is not None:
            if self.admin_token.get_secret_value():
                raise ValueError("give admin_token or admin_token_file, not both")
            if not self.admin_token_file.is_file():
                raise ValueError(f"admin_token_file: no such file: {self.admin_token_file}")
        if why := weak_token(self.token()):
            where = "admin_token_file" if self.admin_token_file is not None else "admin_token"
            raise ValueError(f"{where}: {why}")
        return self

    def token(self) -> str:
        if self.admin_token_file is not None:
            return self.admin_token_file.read_text(encoding="utf-8").strip()
        return self.admin_token.get_secret_value()


class WebLimitSettings(_Section):
    """Every bound of the web pages and HTTP API (docs/web.md): their one home; the web
    serves under them as ``kozel.web.api.WebLimits``."""

    max_page: int = Field(200, ge=1, le=10_000)  # matches per page of a match list
    max_standings: int = Field(1000, ge=1, le=100_000)  # rows of a standings table
    max_history: int = Field(1000, ge=1, le=100_000)  # points of a rating history
    opponents_window: int = Field(2000, ge=1, le=100_000)  # matches counted per opponent
    replay_cache: int = Field(16, ge=0, le=10_000)  # replays kept converted to JSON
    max_replay_bytes: int = Field(32 * 1024 * 1024, ge=1024)  # a bigger replay is refused
    recent_matches: int = Field(20, ge=1, le=1000)  # a bot page's latest matches
    # Connections (docs/web.md, "Hostile input"): at once, in all (also kept below the
    # process's descriptor limit) and from one address; seconds for a request's head, and
    # between requests on a kept-alive connection.
    max_connections: int = Field(1000, ge=1, le=1_000_000)
    max_connections_per_address: int = Field(64, ge=1, le=1_000_000)
    header_timeout_s: int = Field(10, ge=1, le=3600)
    idle_timeout_s: int = Field(5, ge=1, le=3600)
    max_live_per_address: int = Field(8, ge=1, le=10_000)  # live streams of a match, per address
    max_waiting_per_address: int = Field(32, ge=1, le=100_000)  # requests waiting under cpu_share
    # A match's analysis (GET /api/matches/{id}/analysis, docs/analysis.md): the budgets per
    # decision, analyses kept and queued, and the share of cpu_share its worker may use.
    analysis_budget_ms: int = Field(50, ge=1, le=60_000)
    analysis_open_nodes: int = Field(200_000, ge=1, le=10**9)
    analysis_cache: int = Field(16, ge=0, le=10_000)
    analysis_queue: int = Field(4, ge=1, le=1000)
    analysis_share: float = Field(0.5, gt=0, lt=1)
    gzip_min_bytes: int = Field(1024, ge=0, le=1 << 30)  # smaller answers go uncompressed
    # A person's seat (docs/web.md, "A seat for a person"): seats playing at once in all and
    # from one address, matches one address may start in an hour, seat API requests per
    # second of one address, and how long an ended seat still shows its result.
    max_seats: int = Field(32, ge=0, le=100_000)
    max_seats_per_address: int = Field(2, ge=1, le=10_000)
    seat_matches_per_hour: int = Field(30, ge=1, le=1_000_000)
    seat_requests_per_s: float = Field(20.0, gt=0, le=10_000)
    seat_keep_s: int = Field(900, ge=0, le=86_400)


class WebSettings(WebLimitSettings):
    """The web pages and HTTP API (kozel.web); an empty ``listen`` turns them off. Left at its
    default, a port already in use only logs a warning (several referees on one machine)."""

    listen: str = Field(
        "127.0.0.1:8080",  # (off in an embedded ServerConfig: kozel serve turns it on)
        description="web pages and HTTP API host:port ('' turns them off)",
    )
    # False: a child process (kozel web) at a lower CPU priority serves the pages, so they take
    # no time from match clocks; True: the referee's own event loop serves them.
    in_process: bool = _DEFAULTS.web_in_process
    nice: int = Field(_DEFAULTS.web_nice, ge=0, le=19)  # the child's niceness
    # True: the child also runs under SCHED_IDLE (Linux), so it gets only the CPU time the
    # referee leaves over; a saturated referee still answers pages, slowly.
    idle: bool = _DEFAULTS.web_idle
    # The child spends at most this share of one core on average (requests wait their turn
    # beyond it); 0: no cap. Not for web.in_process (the referee's own process).
    cpu_share: float = Field(_DEFAULTS.web_cpu_share, ge=0, le=64)
    # The store as the web reads it: a role that may only SELECT (PostgreSQL); "" = the
    # referee's own database_url, in read-only mode.
    database_url: SecretStr = SecretStr("")

    @field_validator("listen")
    @classmethod
    def _listen(cls, value: str) -> str:
        return _check_listen(value) if value else value

    @field_validator("database_url")
    @classmethod
    def _url(cls, value: SecretStr) -> SecretStr:
        _check_url(value.get_secret_value())
        return value


class MetricsSettings(_Section):
    """Prometheus ``/metrics`` over HTTP; an empty ``listen`` turns it off."""

    listen: str = Field(_DEFAULTS.metrics_listen, description="Prometheus /metrics host:port")

    @field_validator("listen")
    @classmethod
    def _listen(cls, value: str) -> str:
        return _check_listen(value) if value else value


class StorageSettings(_Section):
    """Where the store and the replays live."""

    data_dir: Path = Field(_DEFAULTS.data_dir, description="where the SQLite store is")
    replay_dir: Path | None = Field(
        None, description="the replay folder (default: <data_dir>/replays)"
    )
    database_url: str = Field(
        _DEFAULTS.database_url, description="database URL (PostgreSQL), instead of SQLite"
    )

    @field_validator("database_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return _check_url(value)


class RefereeSettings(_Section):
    """This referee's identity in a shared store."""

    id: str = Field(
        _DEFAULTS.referee_id,
        description="this referee's id in the store (default: kept in <data_dir>/referee-id)",
    )
    lease_s: float = Field(
        _DEFAULTS.lease_s, ge=1, le=3600, description="seconds of the referee's lease in the store"
    )
    standby: bool = Field(
        _DEFAULTS.ladder_standby,
        description="wait for ladders another live referee serves, and take them over when it "
        "stops or dies (default: refuse to start)",
    )
    # See docs/operations.md, "Several referees, one ladder".
    cluster: bool = Field(
        _DEFAULTS.cluster,
        description="share the ladders with every referee on the same store (bots are "
        "redirected to the referee hosting their match)",
    )
    cluster_poll_s: float = Field(_DEFAULTS.cluster_poll_s, ge=0.01, le=60)
    store_flush_timeout_s: float = Field(_DEFAULTS.store_flush_timeout_s, ge=0, le=3600)
    luck_batch: int = Field(
        _DEFAULTS.luck_batch,
        ge=1,
        le=10_000,
        description="finished ladder matches whose luck one pass of the luck worker computes",
    )
    luck_idle_s: float = Field(
        _DEFAULTS.luck_idle_s,
        gt=0,
        le=3600,
        description="how long the luck worker pauses when no finished match waits",
    )

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return check_id(value) if value else value


class LoggingSettings(_Section):
    """Log level and rendering (JSON lines for machines, console for humans)."""

    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", description="DEBUG, INFO, WARNING or ERROR"
    )
    format: Literal["json", "console"] = Field(
        "json", description="json (lines for machines) or console (for people)"
    )

    @field_validator("level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value


class LimitsSettings(_Section):
    """Every limit of the referee (see docs/referee.md)."""

    hello_timeout_s: float = Field(
        _DEFAULTS.hello_timeout_s,
        gt=0,
        le=600,
        description="seconds a new stream has to send Hello",
    )
    max_receive_message_bytes: int = Field(
        _DEFAULTS.max_receive_message_bytes,
        ge=1024,
        le=64 * 1024 * 1024,
        description="largest message accepted from a bot",
    )
    max_send_message_bytes: int = Field(
        _DEFAULTS.max_send_message_bytes, ge=64 * 1024, le=256 * 1024 * 1024
    )
    max_streams: int = Field(
        _DEFAULTS.max_streams, ge=1, le=1_000_000, description="concurrent Play streams"
    )
    max_matches_per_stream: int = Field(_DEFAULTS.max_matches_per_stream, ge=1, le=1024)
    outbox_limit: int = Field(_DEFAULTS.outbox_limit, ge=16, le=1_000_000)
    max_refused_answers: int = Field(_DEFAULTS.max_refused_answers, ge=1, le=1_000_000)
    max_tables: int = Field(_DEFAULTS.max_tables, ge=1, le=1_000_000)
    max_running_matches: int = Field(_DEFAULTS.max_running_matches, ge=1, le=1_000_000)
    admission_lag_ms: float = Field(_DEFAULTS.admission_lag_ms, ge=0, le=60_000)
    admission_busy: float = Field(_DEFAULTS.admission_busy, ge=0, le=1)
    max_match_starts_per_s: float = Field(_DEFAULTS.max_match_starts_per_s, gt=0, le=1_000_000)
    table_linger_s: float = Field(_DEFAULTS.table_linger_s, ge=0)
    session_linger_s: float = Field(_DEFAULTS.session_linger_s, ge=0)
    max_spectators_per_match: int = Field(_DEFAULTS.max_spectators_per_match, ge=0, le=10_000)
    max_spectators: int = Field(_DEFAULTS.max_spectators, ge=0, le=1_000_000)
    max_spectators_per_peer: int = Field(_DEFAULTS.max_spectators_per_peer, ge=1, le=10_000)
    max_tables_per_peer: int = Field(_DEFAULTS.max_tables_per_peer, ge=1, le=1_000_000)
    max_queue_matches_per_peer: int = Field(
        _DEFAULTS.max_queue_matches_per_peer, ge=1, le=1_000_000
    )
    empty_table_linger_s: float = Field(_DEFAULTS.empty_table_linger_s, ge=0)
    people_wait_s: float = Field(_DEFAULTS.people_wait_s, ge=0, le=86_400)
    max_people_waiting_per_bot: int = Field(_DEFAULTS.max_people_waiting_per_bot, ge=0, le=1024)
    max_match_deals: int = Field(_DEFAULTS.max_match_deals, ge=1, le=1_000_000)
    max_idle_rpcs: int = Field(_DEFAULTS.max_idle_rpcs, ge=1, le=1_000_000)
    max_idle_rpcs_per_peer: int = Field(_DEFAULTS.max_idle_rpcs_per_peer, ge=1, le=1_000_000)
    max_idle_rpc_s: float = Field(_DEFAULTS.max_idle_rpc_s, gt=0, le=86_400)
    operator_max_idle_rpcs: int = Field(_DEFAULTS.operator_max_idle_rpcs, ge=1, le=100_000)
    reserved_rpcs: int = Field(_DEFAULTS.reserved_rpcs, ge=1, le=100_000)
    max_reflection_rpcs: int = Field(_DEFAULTS.max_reflection_rpcs, ge=1, le=100_000)
    max_reflection_rpcs_per_peer: int = Field(
        _DEFAULTS.max_reflection_rpcs_per_peer, ge=1, le=100_000
    )
    reflection_idle_s: float = Field(_DEFAULTS.reflection_idle_s, gt=0, le=86_400)
    max_sessions_per_bot: int = Field(_DEFAULTS.max_sessions_per_bot, ge=1, le=100_000)
    max_lingering_sessions: int = Field(_DEFAULTS.max_lingering_sessions, ge=0, le=10_000_000)
    keepalive_time_s: float = Field(_DEFAULTS.keepalive_time_s, ge=1, le=7200)
    keepalive_timeout_s: float = Field(_DEFAULTS.keepalive_timeout_s, ge=1, le=600)
    spectator_delay_s: float = Field(_DEFAULTS.spectator_delay_s, ge=0, le=86_400)
    replay_max_bytes: int = Field(_DEFAULTS.replay_max_bytes, ge=64 * 1024, le=2**31)
    replay_max_deals: int = Field(_DEFAULTS.replay_max_deals, ge=1, le=1_000_000)
    replay_max_steps: int = Field(_DEFAULTS.replay_max_steps, ge=1, le=100_000_000)
    replay_max_unknown_bytes: int = Field(_DEFAULTS.replay_max_unknown_bytes, ge=0, le=2**31)

    @model_validator(mode="after")
    def _replays_readable(self) -> LimitsSettings:
        if self.replay_max_deals < self.max_match_deals:
            raise ValueError(
                f"replay_max_deals ({self.replay_max_deals}) is below max_match_deals "
                f"({self.max_match_deals}): the referee could not read its own replays"
            )
        return self


class Settings(BaseSettings):
    """The whole referee configuration (see deploy/referee.example.yaml)."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", frozen=True
    )

    listen: str = Field(
        _DEFAULTS.listen, description="bot port host:port (port 0 picks a free one)"
    )
    # A pod's DNS name or IP, reachable by bots.
    advertise_address: str = Field(
        _DEFAULTS.advertise_address,
        description="host:port other referees redirect bots to (default: the listen address)",
    )
    tls: TlsSettings = Field(default_factory=TlsSettings)
    operator: OperatorSettings = Field(default_factory=OperatorSettings)
    metrics: MetricsSettings = Field(default_factory=MetricsSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    referee: RefereeSettings = Field(default_factory=RefereeSettings)
    logging: LoggingSettings = Field(default_factory=LoggingSettings)
    drain_timeout_s: float = Field(
        _DEFAULTS.drain_timeout_s,
        ge=0,
        le=86_400,
        description="seconds matches get to finish on SIGTERM",
    )
    # Proxies and load balancers (addresses or networks, comma-separated; "*" any) whose
    # forwarded address names the client (gRPC metadata and HTTP header X-Forwarded-For):
    # per-address limits then count clients, not the proxy. "" trusts none
    # (docs/operations.md, "Behind a load balancer").
    trusted_proxies: str = _DEFAULTS.trusted_proxies
    # Python's garbage collector (gc.set_threshold). A first threshold well above the 700 of
    # CPython lets the many short-lived objects of each decision die before a collection, so
    # objects rarely reach the older generations and full collections (100-250 ms pauses with
    # a thousand streams) become rare; BENCHMARKS.md has the figures.
    gc_thresholds: list[int] = Field(default_factory=lambda: list(_DEFAULTS.gc_thresholds))
    clock: Clock = Field(default_factory=Clock)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    ladders: list[dict[str, Any]] = Field(default_factory=list)
    ladders_file: Path | None = Field(None, description="YAML file of ladders to serve")
    tournaments: list[dict[str, Any]] = Field(default_factory=list)
    tournaments_file: Path | None = Field(
        None, description="YAML file of tournaments to serve (docs/tournaments.md)"
    )

    @field_validator("listen")
    @classmethod
    def _listen(cls, value: str) -> str:
        return _check_listen(value)

    @field_validator("gc_thresholds")
    @classmethod
    def _gc(cls, value: list[int]) -> list[int]:
        if len(value) != 3 or not all(0 <= t <= 10_000_000 for t in value):
            raise ValueError("gc_thresholds are three whole numbers from 0 to 10000000")
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies(cls, value: str) -> str:
        trusted_addresses(value)  # ValueError naming a bad entry
        return value

    @field_validator("advertise_address")
    @classmethod
    def _advertise(cls, value: str) -> str:
        if value and int(_check_listen(value).rpartition(":")[2]) == 0:
            raise ValueError(f"{value!r}: a bot cannot connect to port 0")
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Flags beat the environment, which beats the file.
        return init_settings, env_settings, YamlConfigSettingsSource(settings_cls)

    def ladder_specs(self) -> list[LadderSpec]:
        """The ladders from ``ladders`` and ``ladders_file`` (names unique across both)."""
        specs = parse_ladders({"ladders": self.ladders}, "ladders") if self.ladders else []
        if self.ladders_file is not None:
            specs += load_ladders(self.ladders_file)
        names = [s.name for s in specs]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ConfigError(f"ladders: names must be unique: {', '.join(dup)}")
        return specs

    def tournament_specs(self) -> list[TournamentSpec]:
        """The tournaments from ``tournaments`` and ``tournaments_file``; their names are
        unique, and shared with no ladder (bots join either by name)."""
        specs = parse({"tournaments": self.tournaments}, "tournaments") if self.tournaments else []
        if self.tournaments_file is not None:
            specs += load_tournaments(self.tournaments_file)
        names = [s.name for s in specs]
        taken = {s.name for s in self.ladder_specs()}
        dup = sorted({n for n in names if names.count(n) > 1 or n in taken})
        if dup:
            raise ConfigError(
                f"tournaments: names must be unique, and not a ladder's: {', '.join(dup)}"
            )
        return specs

    def server_config(self) -> ServerConfig:
        """The runtime configuration (reads the admin token file and the ladder file)."""
        st = self.storage
        return ServerConfig(
            listen=self.listen,
            advertise_address=self.advertise_address,
            tls=self.tls.files(),
            operator_listen=self.operator.listen,
            operator_tls=self.operator.tls.files(),
            admin_token=self.operator.token(),
            metrics_listen=self.metrics.listen,
            web_listen=self.web.listen,
            web_optional="listen" not in self.web.model_fields_set,
            web_limits=tuple(
                self.web.model_dump(include=set(WebLimitSettings.model_fields)).items()
            ),
            web_database_url=self.web.database_url.get_secret_value(),
            trusted_proxies=self.trusted_proxies,
            web_in_process=self.web.in_process,
            web_nice=self.web.nice,
            web_idle=self.web.idle,
            web_cpu_share=self.web.cpu_share,
            replay_dir=st.replay_dir or st.data_dir / "replays",
            data_dir=st.data_dir,
            database_url=st.database_url,
            drain_timeout_s=self.drain_timeout_s,
            gc_thresholds=(self.gc_thresholds[0], self.gc_thresholds[1], self.gc_thresholds[2]),
            referee_id=self.referee.id,
            lease_s=self.referee.lease_s,
            ladder_standby=self.referee.standby,
            cluster=self.referee.cluster,
            cluster_poll_s=self.referee.cluster_poll_s,
            store_flush_timeout_s=self.referee.store_flush_timeout_s,
            luck_batch=self.referee.luck_batch,
            luck_idle_s=self.referee.luck_idle_s,
            clock=self.clock,
            **self.limits.model_dump(),  # limits share their names
            ladders=tuple(self.ladder_specs()),
            tournaments=tuple(self.tournament_specs()),
        )


def load_settings(path: Path | None = None, overrides: dict[str, Any] | None = None) -> Settings:
    """Read ``path`` (optional), apply ``KOZEL_*`` variables and ``overrides`` (nested dicts,
    from flags), and validate. Raises ``ConfigError`` naming every bad key."""
    source = str(path) if path is not None else "configuration"
    cls: type[Settings] = Settings
    if path is not None:
        try:
            data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"{path}: cannot read: {exc}") from None
        if data is not None and not isinstance(data, dict):
            raise ConfigError(f"{path}: the top level must be a mapping of keys")
        cls = type(
            "FileSettings",
            (Settings,),
            {
                "model_config": SettingsConfigDict(
                    **{**Settings.model_config, "yaml_file": str(path)}
                )
            },
        )
    try:
        settings = cls(**(overrides or {}))
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"]) or "(top)"
            env = ENV_PREFIX + "__".join(str(p) for p in err["loc"]).upper()
            lines.append(f"{source}: {where}: {problem(err)} (key {where} or env {env})")
        raise ConfigError("\n".join(lines)) from None
    settings.ladder_specs()  # ladder errors surface now, not at start
    settings.tournament_specs()
    return settings


def describe(path: tuple[str, ...]) -> str:
    """The description of the setting at ``path`` (for a flag's help), with its key and
    default."""
    model: Any = Settings
    for key in path[:-1]:
        model = model.model_fields[key].annotation
    if dataclasses.is_dataclass(model):  # the clock
        default = next(f.default for f in dataclasses.fields(model) if f.name == path[-1])
        text = CLOCK_DOCS[path[-1]]
    else:
        field = model.model_fields[path[-1]]
        default = field.get_default(call_default_factory=True)
        text = field.description or ""
    shown = repr(default) if isinstance(default, str) else str(default).lower()
    return f"{text} (key {'.'.join(path)}; default {shown})"
