"""deploy/referee.example.yaml: it passes ``kozel serve --check-config``, documents every key the
referee reads with its default value, and the environment overrides it as documented."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr

from kozel.ladder.config import load_ladders
from kozel.server.settings import Settings
from tests.deploy.deployfiles import DEPLOY, check_config, load_yaml

EXAMPLE = DEPLOY / "referee.example.yaml"


def _model_keys(model: type[BaseModel], prefix: str = "") -> dict[str, Any]:
    """Every leaf key of a settings model as dotted paths, with its default."""
    out: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        sub = field.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            out |= _model_keys(sub, f"{prefix}{name}.")
        elif isinstance(sub, type) and dataclasses.is_dataclass(sub):  # the clock
            out |= {f"{prefix}{name}.{f.name}": f.default for f in dataclasses.fields(sub)}
        else:
            default = field.get_default(call_default_factory=True)
            out[prefix + name] = (
                default.get_secret_value() if isinstance(default, SecretStr) else default
            )
    return out


def _file_keys(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out |= _file_keys(value, f"{prefix}{key}.")
        else:
            out[prefix + key] = value
    return out


def test_the_example_passes_check_config() -> None:
    res = check_config(EXAMPLE)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_example_documents_every_key_with_its_default() -> None:
    wanted = _model_keys(Settings)
    shown = _file_keys(load_yaml(EXAMPLE))
    assert sorted(shown) == sorted(wanted)
    for key, default in wanted.items():
        value = shown[key]
        if isinstance(default, Path):
            value = Path(value)
        assert value == default, f"{key}: the example shows {value!r}, the default is {default!r}"


def test_the_environment_overrides_the_file_and_errors_name_the_key(tmp_path: Path) -> None:
    ok = check_config(
        EXAMPLE,
        {
            "KOZEL_LISTEN": "127.0.0.1:6000",
            "KOZEL_LADDERS_FILE": str(DEPLOY / "ladders.example.yaml"),
        },
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "127.0.0.1:6000" in ok.stdout and "balkan-2p" in ok.stdout
    bad = check_config(EXAMPLE, {"KOZEL_STORAGE__DATABASE_URL": "mysql://x"})
    assert bad.returncode == 2
    assert "storage.database_url" in bad.stdout


def test_the_example_ladder_file_still_loads() -> None:
    assert [spec.name for spec in load_ladders(DEPLOY / "ladders.example.yaml")]


def test_the_advertised_address_comes_from_its_variable_and_is_checked() -> None:
    """advertise_address (KOZEL_ADVERTISE_ADDRESS): empty by default (redirects name the listen
    address); a bot must be able to connect to it, so it is host:port with a real port."""
    assert Settings().server_config().advertise_address == ""
    pod = "kozel-referee-1.kozel-referee-ops.kozel.svc:50051"
    ok = check_config(EXAMPLE, {"KOZEL_ADVERTISE_ADDRESS": pod})
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert f"advertised as {pod}" in ok.stdout
    for bad in ("kozel-referee-1", "10.0.0.7:0", "10.0.0.7:99999"):
        res = check_config(EXAMPLE, {"KOZEL_ADVERTISE_ADDRESS": bad})
        assert res.returncode == 2, bad
        assert "advertise_address" in res.stdout and "KOZEL_ADVERTISE_ADDRESS" in res.stdout
