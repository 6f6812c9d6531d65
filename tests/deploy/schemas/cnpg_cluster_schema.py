"""Write cnpg-cluster.json, the JSON Schema the manifest test validates deploy/k8s/database.yaml
against, from a CloudNativePG release manifest (its Cluster CRD):

    python tests/deploy/schemas/cnpg_cluster_schema.py cnpg-1.30.0.yaml > \\
        tests/deploy/schemas/cnpg-cluster.json

The CRD's own openAPIV3Schema, trimmed to the spec fields deploy/k8s uses (``KEPT``; any
other field is refused, as a typo would be), descriptions dropped, and every object with
listed properties closed (``additionalProperties: false``: the API server would prune unknown
fields silently, the test refuses them). CEL rules (x-kubernetes-validations) are not checked.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

KEPT = (
    "affinity",
    "bootstrap",
    "enableSuperuserAccess",
    "imageName",
    "instances",
    "postgresql",
    "primaryUpdateStrategy",
    "resources",
    "storage",
)


def _json_schema(node: Any) -> Any:
    """An OpenAPI v3 (structural) schema as JSON Schema: closed objects, no descriptions."""
    if isinstance(node, list):
        return [_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {
        k: _json_schema(v)
        for k, v in node.items()
        if k != "description" and not k.startswith("x-kubernetes-")
    }
    if node.get("x-kubernetes-int-or-string") and "anyOf" not in out:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if (
        "properties" in node
        and "additionalProperties" not in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def cluster_schema(release: Path) -> dict[str, Any]:
    """The Cluster schema of a CloudNativePG release manifest, trimmed to ``KEPT``."""
    docs = yaml.safe_load_all(release.read_text(encoding="utf-8"))
    (crd,) = [
        d
        for d in docs
        if d and d["kind"] == "CustomResourceDefinition" and d["spec"]["names"]["kind"] == "Cluster"
    ]
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"] = {k: v for k, v in spec["properties"].items() if k in KEPT}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": (
            f"CloudNativePG's Cluster (postgresql.cnpg.io/v1) from {release.name}, trimmed to the "
            f"spec fields deploy/k8s uses ({', '.join(KEPT)}); made by cnpg_cluster_schema.py."
        ),
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "additionalProperties": False,
        "properties": {
            "apiVersion": {"const": "postgresql.cnpg.io/v1"},
            "kind": {"const": "Cluster"},
            "metadata": {
                "type": "object",
                "required": ["name", "namespace"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
                    "namespace": {"type": "string", "minLength": 1},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
            "spec": _json_schema(spec),
        },
    }


if __name__ == "__main__":
    print(json.dumps(cluster_schema(Path(sys.argv[1])), indent=1, sort_keys=True))
