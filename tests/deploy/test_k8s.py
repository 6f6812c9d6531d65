"""deploy/k8s: every core manifest validates against the Kubernetes schemas (strict); the
objects of operators (the Prometheus Operator's, CloudNativePG's Cluster) are not core
Kubernetes, so kubernetes_validate cannot check them: they are validated against schemas in
tests/deploy/schemas instead (hand-written for the Prometheus Operator, trimmed from the CRD
for CloudNativePG). The manifests agree with each other and with the referee's configuration
(ports, probes, drain, mounted files, the database and the advertised addresses)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from sqlalchemy.engine import make_url

from tests.deploy.deployfiles import (
    ALERTS,
    K8S_DIR,
    check_config,
    final_stage_user,
    k8s_files,
    k8s_objects,
    listen_port,
    load_docs,
    load_yaml,
)

# The oldest Kubernetes the manifests are meant for (native gRPC probes, PDB
# unhealthyPodEvictionPolicy) and a recent one the package ships offline.
K8S_VERSIONS = ("1.31", "1.35")
CRD_KINDS = {
    "ServiceMonitor": "servicemonitor.json",
    "PrometheusRule": "prometheusrule.json",
    "Cluster": "cnpg-cluster.json",  # CloudNativePG 1.30's CRD, trimmed: cnpg_cluster_schema.py
}
# A misspelt spec field per operator kind, which its schema must refuse.
TYPOS = {"ServiceMonitor": "selectr", "PrometheusRule": "grups", "Cluster": "instancs"}
SCHEMAS = Path(__file__).with_name("schemas")

WEB_SERVICES = {"kozel-web"}  # the web's own Deployment (web.yaml), checked apart below
CORE = [
    (path, i, doc)
    for path in k8s_files()
    for i, doc in enumerate(load_docs(path))
    if doc["kind"] not in CRD_KINDS
]


def _referee() -> tuple[dict, dict, dict]:
    """The StatefulSet, its pod spec and the referee container."""
    sts = k8s_objects()["StatefulSet", "kozel-referee"]
    pod = sts["spec"]["template"]["spec"]
    (container,) = [c for c in pod["containers"] if c["name"] == "referee"]
    return sts, pod, container


def _config() -> dict[str, Any]:
    config_map = k8s_objects()["ConfigMap", "kozel-referee-config"]
    return yaml.safe_load(config_map["data"]["referee.yaml"])


def _pod_env(container: dict, pod: str = "kozel-referee-0") -> dict[str, str]:
    """The environment the kubelet would give ``container`` in the pod named ``pod``: values
    from the manifests' Secrets and the downward API, ``$(VAR)`` of earlier variables
    expanded."""
    objects = k8s_objects()
    fields = {"metadata.name": pod, "metadata.namespace": "kozel", "status.podIP": "10.0.0.7"}
    env: dict[str, str] = {}
    for var in container.get("env", []):
        source = var.get("valueFrom", {})
        if "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            value = objects["Secret", ref["name"]]["stringData"][ref["key"]]
        elif "fieldRef" in source:
            value = fields[source["fieldRef"]["fieldPath"]]
        else:
            value = re.sub(r"\$\((\w+)\)", lambda m: env.get(m[1], m[0]), var["value"])
        env[var["name"]] = value
    return env


def _crd_validator(kind: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / CRD_KINDS[kind]).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize(
    ("path", "index", "doc"),
    CORE,
    ids=[f"{p.relative_to(K8S_DIR)}#{i}-{d['kind']}" for p, i, d in CORE],
)
def test_core_manifests_validate_strictly(path: Path, index: int, doc: dict, version: str) -> None:
    kubernetes_validate.validate(doc, version, strict=True)


def test_strict_validation_refuses_an_unknown_field() -> None:
    sts = copy.deepcopy(k8s_objects()["StatefulSet", "kozel-referee"])
    container = sts["spec"]["template"]["spec"]["containers"][0]
    container["readinesProbe"] = container.pop("readinessProbe")  # a typo
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(sts, K8S_VERSIONS[-1], strict=True)


def test_every_kind_is_core_or_a_known_crd() -> None:
    kinds = {doc["kind"] for path in k8s_files() for doc in load_docs(path)}
    assert {
        "Namespace",
        "ConfigMap",
        "Secret",
        "Service",
        "StatefulSet",
        "PodDisruptionBudget",
        "ServiceMonitor",
        "PrometheusRule",
        "Deployment",
        "Cluster",
        "NetworkPolicy",
    } == kinds


@pytest.mark.parametrize("kind", sorted(CRD_KINDS))
def test_operator_objects_match_their_schema(kind: str) -> None:
    validator = _crd_validator(kind)
    (doc,) = [d for k, d in k8s_objects().items() if k[0] == kind]
    validator.validate(doc)
    broken = copy.deepcopy(doc)
    broken["spec"][TYPOS[kind]] = {}
    assert list(validator.iter_errors(broken)), "the schema must refuse unknown fields"


def test_prometheusrule_carries_the_alerts_of_alerts_yml() -> None:
    rule = k8s_objects()["PrometheusRule", "kozel-referee"]
    assert rule["spec"]["groups"] == load_yaml(ALERTS)["groups"]


@pytest.mark.parametrize(
    "kustomization",
    sorted(K8S_DIR.rglob("kustomization.yaml")),
    ids=lambda p: str(p.relative_to(K8S_DIR)),
)
def test_kustomizations_list_every_manifest_of_their_folder(kustomization: Path) -> None:
    data = load_yaml(kustomization)
    here = {p.name for p in kustomization.parent.glob("*.yaml")} - {"kustomization.yaml"}
    assert sorted(data["resources"]) == sorted(here)
    _, _, container = _referee()
    for image in data.get("images", []):
        assert container["image"].rsplit(":", 1)[0] == image["name"]


def test_namespaced_objects_live_in_the_namespace_defined() -> None:
    objects = k8s_objects()
    (ns,) = [name for kind, name in objects if kind == "Namespace"]
    for (kind, name), doc in objects.items():
        if kind != "Namespace":
            assert doc["metadata"].get("namespace") == ns, f"{kind}/{name}"


def test_selectors_match_the_referee_pods() -> None:
    objects = k8s_objects()
    sts, _, _ = _referee()
    pod_labels = sts["spec"]["template"]["metadata"]["labels"]
    selected = sts["spec"]["selector"]["matchLabels"]
    assert selected.items() <= pod_labels.items()
    pdb = objects["PodDisruptionBudget", "kozel-referee"]
    assert pdb["spec"]["selector"]["matchLabels"] == selected
    services = {
        name: doc
        for (kind, name), doc in objects.items()
        if kind == "Service" and name not in WEB_SERVICES
    }
    for name, svc in services.items():
        assert svc["spec"]["selector"].items() <= pod_labels.items(), name
    # The governing Service of the set is headless, so every pod has a stable DNS name.
    assert services[sts["spec"]["serviceName"]]["spec"].get("clusterIP") == "None"
    # Several replicas, of which a voluntary disruption (a node drain) takes one at a time.
    assert sts["spec"]["replicas"] == 3
    assert pdb["spec"] == {
        "maxUnavailable": 1,
        "unhealthyPodEvictionPolicy": "AlwaysAllow",
        "selector": {"matchLabels": selected},
    }
    assert sts["spec"]["updateStrategy"]["type"] == "RollingUpdate"
    assert "partition" not in sts["spec"]["updateStrategy"].get("rollingUpdate", {})
    (spread,) = sts["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert spread["labelSelector"]["matchLabels"] == selected
    # Bots reach any ready replica through one balanced Service.
    bots = services["kozel-referee"]["spec"]
    assert bots.get("clusterIP") != "None" and not bots.get("publishNotReadyAddresses")

    monitor = objects["ServiceMonitor", "kozel-referee"]
    wanted = monitor["spec"]["selector"]["matchLabels"]
    scraped = [
        svc for svc in services.values() if wanted.items() <= svc["metadata"]["labels"].items()
    ]
    assert len(scraped) == 1, "the ServiceMonitor must select exactly one Service"
    (svc,) = scraped
    assert svc["metadata"]["namespace"] in monitor["spec"]["namespaceSelector"]["matchNames"]
    port_names = {p["name"] for p in svc["spec"]["ports"]}
    assert {e["port"] for e in monitor["spec"]["endpoints"]} <= port_names
    # Alerts and the dashboard select job="kozel-referee": the job comes from jobLabel.
    assert svc["metadata"]["labels"][monitor["spec"]["jobLabel"]] == "kozel-referee"


def test_ports_and_probes_follow_the_configuration() -> None:
    config = _config()
    _, _pod, container = _referee()
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {
        "bots": listen_port(config["listen"]),
        "operator": listen_port(config["operator"]["listen"]),
        "metrics": listen_port(config["metrics"]["listen"]),
    }
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        # The kubelet's gRPC probe speaks plaintext: it must ask the operator port, and
        # that port must not have TLS.
        assert container[probe]["grpc"]["port"] == ports["operator"], probe
        assert container[probe]["grpc"].get("service", "") in (
            "",
            "kozel.v1.RefereeService",
            "kozel.liveness",
        )
    assert not (config["operator"].get("tls") or {}).get("cert_file")
    for (kind, name), svc in k8s_objects().items():
        if kind == "Service" and name not in WEB_SERVICES:
            for port in svc["spec"]["ports"]:
                assert port["targetPort"] in ports, f"{name}: {port}"
                assert port["port"] == ports[port["targetPort"]], f"{name}: {port}"


def test_the_drain_fits_in_the_grace_period() -> None:
    config = _config()
    _, pod, container = _referee()
    grace = pod["terminationGracePeriodSeconds"]
    assert grace > config["drain_timeout_s"]
    # A kubelet that probes terminating pods must not restart a draining referee: liveness
    # asks the name that stays SERVING during a drain.
    assert container["livenessProbe"]["grpc"]["service"] == "kozel.liveness"


def test_the_pod_runs_unprivileged_as_the_image_user() -> None:
    _, pod, container = _referee()
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert str(pod["securityContext"]["runAsUser"]) == final_stage_user().split(":")[0]
    sec = container["securityContext"]
    assert sec["allowPrivilegeEscalation"] is False and sec["readOnlyRootFilesystem"] is True
    assert sec["capabilities"]["drop"] == ["ALL"]
    assert pod["enableServiceLinks"] is False


def test_referenced_configmaps_and_secrets_exist_with_their_keys() -> None:
    objects = k8s_objects()
    _, pod, container = _referee()

    def keys(kind: str, name: str) -> set[str]:
        doc = objects[kind, name]
        return set(doc.get("data", {})) | set(doc.get("stringData", {}))

    for volume in pod["volumes"]:
        if "configMap" in volume:
            assert keys("ConfigMap", volume["configMap"]["name"])
        if "secret" in volume:
            have = keys("Secret", volume["secret"]["secretName"])
            assert {item["key"] for item in volume["secret"].get("items", [])} <= have
    for env in container.get("env", []):
        ref = env.get("valueFrom", {}).get("secretKeyRef")
        if ref:
            assert ref["key"] in keys("Secret", ref["name"]), env["name"]
            assert not ref.get("optional"), "the referees need PostgreSQL: no SQLite fallback"
    mounted = {m["name"] for m in container["volumeMounts"]}
    claims = {c["metadata"]["name"] for c in _referee()[0]["spec"]["volumeClaimTemplates"]}
    assert mounted == {v["name"] for v in pod["volumes"]} | claims


def _mounted_files(tmp_path: Path) -> dict[str, Path]:
    """The files the referee container sees from its ConfigMap and Secret volumes, written
    to ``tmp_path``: container path -> local copy."""
    objects = k8s_objects()
    _, pod, container = _referee()
    volumes = {v["name"]: v for v in pod["volumes"]}
    files: dict[str, Path] = {}
    for mount in container["volumeMounts"]:
        volume = volumes.get(mount["name"], {})
        if "configMap" in volume:
            content = objects["ConfigMap", volume["configMap"]["name"]]["data"]
            items = {k: k for k in content}
        elif "secret" in volume:
            content = objects["Secret", volume["secret"]["secretName"]]["stringData"]
            items = {i["key"]: i["path"] for i in volume["secret"]["items"]}
        else:
            continue
        for key, rel in items.items():
            local = tmp_path / mount["name"] / rel
            local.parent.mkdir(parents=True, exist_ok=True)
            local.write_text(content[key], encoding="utf-8")
            files[f"{mount['mountPath']}/{rel}"] = local
    return files


def test_the_configmap_configuration_passes_check_config(tmp_path: Path) -> None:
    _, _, container = _referee()
    files = _mounted_files(tmp_path)
    token = files["/etc/kozel/secret/admin-token"]
    placeholder = token.read_text(encoding="utf-8")
    res = _check_mounted(tmp_path, container, files)
    assert res.returncode != 0 and "placeholder" in res.stdout + res.stderr  # refused as it is
    assert placeholder not in res.stdout + res.stderr
    token.write_text("0123456789abcdef" * 4, encoding="utf-8")  # what openssl rand -hex 32 gives
    res = _check_mounted(tmp_path, container, files)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "classic-2p" in res.stdout
    assert "advertised as kozel-referee-0.kozel-referee-ops.kozel.svc:50051" in res.stdout


def test_upgrades_never_apply_the_secrets() -> None:
    """`kubectl apply -k deploy/k8s` (install and every upgrade) holds no Secret: they are
    created once, so an upgrade cannot put a placeholder back over a real token."""
    main = load_yaml(K8S_DIR / "kustomization.yaml")["resources"]
    for name in main:
        assert all(doc["kind"] != "Secret" for doc in load_docs(K8S_DIR / name)), name


def test_only_operators_reach_the_admin_port() -> None:
    objects = k8s_objects()
    policy = objects["NetworkPolicy", "kozel-referee"]
    _, _, container = _referee()
    labels = objects["StatefulSet", "kozel-referee"]["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    named = {p["name"] for p in container["ports"]}
    rules = policy["spec"]["ingress"]
    by_port = {p["port"]: rule for rule in rules for p in rule["ports"]}
    assert set(by_port) == named  # every port of the referee has exactly one rule
    assert "from" not in by_port["bots"]  # bots come from anywhere
    (peer,) = by_port["operator"]["from"]
    assert peer["podSelector"]["matchLabels"] == {"kozel.io/operator": "true"}
    assert peer["namespaceSelector"]["matchLabels"] == {"kozel.io/operators": "true"}


def _check_mounted(tmp_path: Path, container: dict, files: dict[str, Path]):
    config_path = container["command"][container["command"].index("--config") + 1]
    text = files[config_path].read_text(encoding="utf-8")
    for inside, local in files.items():  # paths in the config must be mounted files
        text = text.replace(inside, str(local))
    config = tmp_path / "referee.yaml"
    config.write_text(text, encoding="utf-8")
    return check_config(config, {k: v for k, v in _pod_env(container).items() if "KOZEL_" in k})


def test_the_web_deployment_reaches_the_referee_and_its_own_pods() -> None:
    """kozel-web: its Service selects its pods on its port, its command names the referee's
    bot Service and port, its probes ask /healthz, its secret and config keys exist."""
    objects = k8s_objects()
    web = objects["Deployment", "kozel-web"]
    pod = web["spec"]["template"]
    assert web["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    (container,) = pod["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    cmd = container["command"]
    assert cmd[:2] == ["kozel", "web"]
    assert listen_port(cmd[cmd.index("--listen") + 1]) == ports["http"]
    host, port = cmd[cmd.index("--referee") + 1].split(":")
    referee_svc = objects["Service", host]
    assert int(port) in {p["port"] for p in referee_svc["spec"]["ports"]}
    svc = objects["Service", "kozel-web"]
    assert svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    for p in svc["spec"]["ports"]:
        assert p["targetPort"] in ports and p["port"] == ports[p["targetPort"]]
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "http"}
    env = _pod_env(container)
    (db,) = [name for name in env if f"$({name})" in cmd]
    assert make_url(env[db]) == make_url(_pod_env(_referee()[2])["KOZEL_STORAGE__DATABASE_URL"])
    config = objects["ConfigMap", pod["spec"]["volumes"][0]["configMap"]["name"]]
    mount = container["volumeMounts"][0]["mountPath"]
    assert cmd[cmd.index("--ladders") + 1].removeprefix(mount + "/") in config["data"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert _config()["web"]["listen"] == ""  # the referee pod serves no pages of its own


def test_the_pods_reach_the_cloudnativepg_cluster_as_its_owner() -> None:
    """The referees and the web connect to the read-write Service of the Cluster, to its
    database, with the owner's credentials from the Secret the Cluster bootstraps with."""
    objects = k8s_objects()
    ((_, name), cluster), *others = [(k, d) for k, d in objects.items() if k[0] == "Cluster"]
    assert not others
    initdb = cluster["spec"]["bootstrap"]["initdb"]
    secret = objects["Secret", initdb["secret"]["name"]]
    assert secret["type"] == "kubernetes.io/basic-auth"
    owner = secret["stringData"]
    assert owner["username"] == initdb["owner"]
    assert re.fullmatch(r"[A-Za-z0-9]+", owner["password"]), "goes into a URL unescaped"
    web = objects["Deployment", "kozel-web"]
    for container, var in (
        (_referee()[2], "KOZEL_STORAGE__DATABASE_URL"),
        (web["spec"]["template"]["spec"]["containers"][0], "KOZEL_DATABASE_URL"),
    ):
        url = make_url(_pod_env(container)[var])
        assert url.drivername == "postgresql+psycopg"
        assert url.host == f"{name}-rw.{cluster['metadata']['namespace']}.svc"
        assert (url.port, url.database) == (5432, initdb["database"])
        assert (url.username, url.password) == (owner["username"], owner["password"])
    # SQLAlchemy's default pool: 5 connections and 10 overflow per referee or web pod.
    pods = _referee()[0]["spec"]["replicas"] + web["spec"]["replicas"]
    assert 15 * pods <= int(cluster["spec"]["postgresql"]["parameters"]["max_connections"])


def test_each_replica_advertises_its_own_stable_address() -> None:
    """Redirects name a pod's DNS name under the headless governing Service, on the bot port;
    each replica its own, and its referee id is its pod name."""
    objects = k8s_objects()
    sts, _, container = _referee()
    headless = objects["Service", sts["spec"]["serviceName"]]["spec"]
    assert headless["clusterIP"] == "None" and headless["publishNotReadyAddresses"] is True
    assert "bots" in {p["targetPort"] for p in headless["ports"]}
    bots = {p["name"]: p["containerPort"] for p in container["ports"]}["bots"]
    pods = [f"kozel-referee-{i}" for i in range(sts["spec"]["replicas"])]
    advertised = []
    for pod in pods:
        env = _pod_env(container, pod)
        address = env["KOZEL_ADVERTISE_ADDRESS"]
        assert address == f"{pod}.{sts['spec']['serviceName']}.kozel.svc:{bots}"
        assert env["KOZEL_REFEREE__ID"] == pod
        advertised.append(address)
    assert len(set(advertised)) == len(pods)
