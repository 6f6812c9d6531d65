"""deploy/compose: the compose file, the Prometheus configuration and alert rules, and the
Grafana provisioning and dashboard parse, reference files that exist, and agree with the
referee's configuration."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.deploy.deployfiles import (
    ALERTS,
    COMPOSE_DIR,
    DASHBOARD,
    ROOT,
    alert_rules,
    check_config,
    dashboard_queries,
    listen_port,
    load_yaml,
)

COMPOSE = COMPOSE_DIR / "docker-compose.yaml"
REFEREES = ("referee", "referee-2")  # two replicas sharing PostgreSQL
_VAR = re.compile(r"\$\{(\w+)(?::?[?-][^}]*)?\}")


def _compose() -> dict[str, Any]:
    return load_yaml(COMPOSE)


def _mounts(service: str) -> dict[str, str]:
    """Bind mounts of a service: container path -> host path (named volumes left out)."""
    out = {}
    for spec in _compose()["services"][service].get("volumes", []):
        source, target = spec.split(":")[:2]
        if source.startswith((".", "/")):
            out[target] = source
    return out


def _host(path: str) -> Path:
    return (COMPOSE_DIR / path).resolve()


def _balanced(expr: str) -> bool:
    stack = []
    pairs = {")": "(", "]": "[", "}": "{"}
    for ch in re.sub(r'"[^"]*"', '""', expr):
        if ch in "([{":
            stack.append(ch)
        elif ch in pairs and (not stack or stack.pop() != pairs[ch]):
            return False
    return not stack


def test_the_compose_file_has_its_services() -> None:
    compose = _compose()
    assert set(compose["services"]) == {*REFEREES, "web", "postgres", "prometheus", "grafana"}
    named = set(compose["volumes"])
    for name, service in compose["services"].items():
        assert "image" in service, name
        for spec in service.get("volumes", []):
            source = spec.split(":")[0]
            assert source.startswith((".", "/")) or source in named, f"{name}: {spec}"
    referee = compose["services"]["referee"]
    assert referee["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "healthcheck" in compose["services"]["postgres"]
    build = referee["build"]
    assert (_host(build["context"]) / build["dockerfile"]).is_file()
    assert _host(build["context"]) == ROOT
    second = compose["services"]["referee-2"]
    assert "build" not in second and second["image"] == referee["image"]
    # It starts after the first (one schema migration at a time).
    assert second["depends_on"]["referee"]["condition"] == "service_healthy"
    assert second["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_every_bind_mount_source_exists() -> None:
    for name in _compose()["services"]:
        for target, source in _mounts(name).items():
            assert _host(source).exists(), f"{name}: {source} -> {target}"


def test_only_the_bot_and_web_ports_are_published_beyond_loopback() -> None:
    for name, service in _compose()["services"].items():
        for port in service.get("ports", []):
            if not port.startswith("127.0.0.1:"):
                assert (name, port) in {
                    ("referee", "50051:50051"),
                    ("referee-2", "50061:50051"),
                    ("web", "8080:8080"),
                }, f"{name}: {port}"


def test_secrets_come_from_the_environment_and_are_documented() -> None:
    text = COMPOSE.read_text(encoding="utf-8")
    required = {m.group(1) for m in _VAR.finditer(text)}
    example = (COMPOSE_DIR / ".env.example").read_text(encoding="utf-8")
    documented = {
        line.split("=")[0] for line in example.splitlines() if line and not line.startswith("#")
    }
    assert (
        required
        == documented
        == {"POSTGRES_PASSWORD", "KOZEL_ADMIN_TOKEN", "GRAFANA_ADMIN_PASSWORD", "KOZEL_PUBLIC_HOST"}
    )


def test_referee_health_drain_and_scraping_follow_its_configuration() -> None:
    compose = _compose()
    config = load_yaml(_host(_mounts("referee")["/etc/kozel/referee.yaml"]))
    data_volumes = set()
    for name in REFEREES:
        referee = compose["services"][name]
        assert _mounts(name) == _mounts("referee"), "the same configuration and ladders"
        test = referee["healthcheck"]["test"]
        assert test[:3] == ["CMD", "kozel", "health"]
        assert listen_port(test[test.index("--address") + 1]) == listen_port(
            config["operator"]["listen"]
        )
        assert int(referee["stop_grace_period"].rstrip("s")) > config["drain_timeout_s"]
        inside = {int(p.rsplit(":", 1)[1]) for p in referee["ports"]}
        assert inside == {listen_port(config["listen"]), listen_port(config["operator"]["listen"])}
        # Redirects name the host port that publishes this referee's bot port.
        (bots,) = [p for p in referee["ports"] if p.endswith(f":{listen_port(config['listen'])}")]
        advertised = referee["environment"]["KOZEL_ADVERTISE_ADDRESS"]
        assert advertised == "${KOZEL_PUBLIC_HOST:-localhost}:" + bots.split(":")[-2]
        (data,) = [v.split(":")[0] for v in referee["volumes"] if v.endswith(":/var/lib/kozel")]
        data_volumes.add(data)
    assert len(data_volumes) == len(REFEREES), "each referee has a data folder of its own"
    urls = {compose["services"][n]["environment"]["KOZEL_STORAGE__DATABASE_URL"] for n in REFEREES}
    assert len(urls) == 1 and "@postgres:" in urls.pop(), "one shared PostgreSQL"
    prometheus = load_yaml(_host(_mounts("prometheus")["/etc/prometheus/prometheus.yml"]))
    (job,) = [j for j in prometheus["scrape_configs"] if j["job_name"] == "kozel-referee"]
    targets = [t for sc in job["static_configs"] for t in sc["targets"]]
    metrics = listen_port(config["metrics"]["listen"])
    assert targets == [f"{name}:{metrics}" for name in REFEREES]


def test_the_compose_referee_configuration_passes_check_config(tmp_path: Path) -> None:
    """The mounted referee.yaml with the compose environment, the container's mounted files
    replaced by the repository files they come from; variables at their defaults."""
    text = _host(_mounts("referee")["/etc/kozel/referee.yaml"]).read_text(encoding="utf-8")
    for inside, source in _mounts("referee").items():
        text = text.replace(inside, str(_host(source)))
    config = tmp_path / "referee.yaml"
    config.write_text(text, encoding="utf-8")

    def value(match: re.Match[str]) -> str:  # a required secret as openssl rand -hex 32 gives
        return match[0].split(":-", 1)[1].rstrip("}") if ":-" in match[0] else "0a1b2c3d" * 8

    for name, port in zip(REFEREES, (50051, 50061), strict=True):
        referee = _compose()["services"][name]
        env = {k: _VAR.sub(value, v) for k, v in referee["environment"].items()}
        res = check_config(config, env)
        assert res.returncode == 0, res.stdout + res.stderr
        assert "classic-2p" in res.stdout and f"advertised as localhost:{port}" in res.stdout
    # .env.example's placeholder token, copied unchanged, refuses the start.
    example = dict(
        line.split("=", 1)
        for line in (COMPOSE_DIR / ".env.example").read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    )
    env["KOZEL_OPERATOR__ADMIN_TOKEN"] = example["KOZEL_ADMIN_TOKEN"]
    res = check_config(config, env)
    assert res.returncode != 0 and "placeholder" in res.stdout + res.stderr


def test_prometheus_loads_the_mounted_alert_rules() -> None:
    prometheus = load_yaml(COMPOSE_DIR / "prometheus.yml")
    mounted = _mounts("prometheus")
    for rule_file in prometheus["rule_files"]:
        assert _host(mounted[rule_file]) == ALERTS.resolve()


def test_alert_rules_are_complete() -> None:
    rules = alert_rules()
    names = [r["alert"] for r in rules]
    assert len(names) == len(set(names))
    assert {
        "KozelRefereeDown",
        "KozelDecisionOverheadHigh",
        "KozelTimeoutRateHigh",
        "KozelEventLoopLagHigh",
        "KozelLadderStalled",
        "KozelDrainingTooLong",
    } <= set(names)
    for rule in rules:
        assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}, rule["alert"]
        assert re.fullmatch(r"\d+[smh]", rule["for"]), rule["alert"]
        assert rule["labels"]["severity"] in ("critical", "warning", "info"), rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
        assert _balanced(rule["expr"]), rule["alert"]
        assert _balanced(rule["annotations"]["summary"])


def test_grafana_provisioning_points_at_prometheus_and_the_dashboard() -> None:
    mounted = _mounts("grafana")
    provisioning = _host(mounted["/etc/grafana/provisioning"])
    (ds,) = load_yaml(provisioning / "datasources" / "prometheus.yaml")["datasources"]
    assert ds["type"] == "prometheus" and ds["url"] == "http://prometheus:9090"
    assert "9090:9090" in " ".join(_compose()["services"]["prometheus"]["ports"])
    (provider,) = load_yaml(provisioning / "dashboards" / "kozel.yaml")["providers"]
    assert _host(mounted[provider["options"]["path"]]) == DASHBOARD.parent.resolve()
    env = _compose()["services"]["grafana"]["environment"]
    home = env["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home == f"{provider['options']['path']}/{DASHBOARD.name}"


def test_the_dashboard_is_well_formed() -> None:
    dash = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert dash["uid"] and dash["title"] and dash["schemaVersion"] >= 36
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for panel in dash["panels"]:
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24, panel["title"]
        mine = {
            (x, y)
            for x in range(pos["x"], pos["x"] + pos["w"])
            for y in range(pos["y"], pos["y"] + pos["h"])
        }
        assert not mine & cells, f"panel {panel['title']!r} overlaps another"
        cells |= mine
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert target["expr"] and _balanced(target["expr"]), panel["title"]
    panels = [p for p in dash["panels"] if p["type"] != "row"]
    assert len(panels) >= 12
    descriptions = [p["description"] for p in panels]
    assert len(set(descriptions)) == len(descriptions), "a description copied to another panel"
    assert all(_balanced(q) for q in dashboard_queries(dash))


def test_the_web_service_reads_what_the_referee_writes() -> None:
    """The web mounts the referee's data volume read-only at the referee's replay folder,
    follows the referee's bot port, and uses the same database."""
    compose = _compose()
    web, referee = compose["services"]["web"], compose["services"]["referee"]
    config = load_yaml(_host(_mounts("referee")["/etc/kozel/referee.yaml"]))
    assert web["image"] == referee["image"]
    args = web["entrypoint"] + web["command"]
    assert args[:2] == ["kozel", "web"]
    data = next(v for v in referee["volumes"] if v.startswith("referee-data:"))
    mount = data.split(":")[1]
    assert f"referee-data:{mount}:ro" in web["volumes"]
    replays = Path(config["storage"]["data_dir"]) / "replays"
    assert args[args.index("--replays") + 1] == str(replays)
    host, port = args[args.index("--referee") + 1].split(":")
    assert host == "referee" and int(port) == listen_port(config["listen"])
    db = referee["environment"]["KOZEL_STORAGE__DATABASE_URL"]
    assert args[args.index("--db") + 1] == db
    assert config["web"]["listen"] == ""
