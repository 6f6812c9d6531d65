"""One home per knob: the referee's settings (kozel.server.settings) hold every key's type,
default and description; the runtime config, the web's limits and ``kozel serve``'s flags
agree with them, and ``--help`` shows what the settings say."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import pytest
from pydantic import ValidationError

from kozel.cli import serve_cmd
from kozel.server.config import ServerConfig
from kozel.server.settings import Settings, WebLimitSettings, describe, load_settings
from kozel.web.api import WebLimits

# Where kozel serve differs from a referee embedded with ServerConfig() (tests, kozel play):
# it serves the web pages, and a web port in use is then only a warning.
SERVE_DIFFERS = {"web_listen", "web_optional", "web_limits"}


def test_the_settings_defaults_are_the_runtime_defaults() -> None:
    served, embedded = Settings().server_config(), ServerConfig()
    differ = {
        f.name
        for f in dataclasses.fields(ServerConfig)
        if getattr(served, f.name) != getattr(embedded, f.name)
    }
    assert differ == SERVE_DIFFERS


def test_the_web_limits_are_declared_once_in_the_settings() -> None:
    assert not WebLimits.__annotations__  # the web adds no field of its own
    limits = dict(Settings().server_config().web_limits)
    assert set(limits) == set(WebLimits.model_fields) == set(WebLimitSettings.model_fields)
    assert all(getattr(WebLimits(), k) == v for k, v in limits.items())


def test_a_web_limit_out_of_its_range_is_refused_by_the_web_too() -> None:
    with pytest.raises(ValidationError, match="max_page"):
        WebLimits(max_page=0)


def _serve_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kozel")
    serve_cmd.add_parser(parser.add_subparsers())
    return parser


@pytest.mark.parametrize(("flag", "path"), serve_cmd.FLAGS.items())
def test_every_flag_sets_a_described_key(flag: str, path: tuple[str, ...]) -> None:
    text = describe(path)
    assert text.split(" (key ")[0].strip(), f"--{flag}: {'.'.join(path)} has no description"
    argv = ["serve", f"--{flag.replace('_', '-')}"]
    switch = flag in serve_cmd.SWITCHES
    args = _serve_parser().parse_args(argv if switch else [*argv, "given"])
    node: Any = serve_cmd.overrides_from_args(args)
    for key in path:
        node = node[key]
    assert node == (True if switch else "given")


def test_flags_are_typed_by_the_settings() -> None:
    argv = "serve --move-ms 3000 --lease 5 --standby --log-level debug --max-message-bytes 2048"
    args = _serve_parser().parse_args(argv.split())
    settings = load_settings(None, serve_cmd.overrides_from_args(args))
    config = settings.server_config()
    assert (config.clock.move_ms, config.lease_s, config.ladder_standby) == (3000, 5.0, True)
    assert (config.max_receive_message_bytes, settings.logging.level) == (2048, "DEBUG")


def test_help_shows_each_settings_description() -> None:
    parser = _serve_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    shown = " ".join(sub.choices["serve"].format_help().split())
    for path in serve_cmd.FLAGS.values():
        assert " ".join(describe(path).split()) in shown
    assert "(key limits.max_streams; default 4096)" in shown


def test_a_bad_flag_value_names_its_key() -> None:
    args = _serve_parser().parse_args(["serve", "--max-streams", "many"])
    with pytest.raises(Exception, match=r"limits\.max_streams: .*integer"):
        load_settings(None, serve_cmd.overrides_from_args(args))
