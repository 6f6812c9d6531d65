"""Test certificates: a throwaway CA (trustme), a server certificate and a client one."""

from __future__ import annotations

from pathlib import Path

import trustme


def issue_pki(folder: Path, *server_names: str) -> dict[str, Path]:
    """Write ``ca``, server ``cert``/``key`` (for ``server_names``) and ``client_cert``/
    ``client_key`` PEM files into ``folder``; returns their paths by those names."""
    ca = trustme.CA()
    server = ca.issue_cert(*server_names)
    client = ca.issue_cert("bot@example.org")
    files = {
        "ca": folder / "ca.pem",
        "cert": folder / "server.pem",
        "key": folder / "server.key",
        "client_cert": folder / "client.pem",
        "client_key": folder / "client.key",
    }
    ca.cert_pem.write_to_path(str(files["ca"]))
    server.private_key_pem.write_to_path(str(files["key"]))
    server.cert_chain_pems[0].write_to_path(str(files["cert"]))
    client.private_key_pem.write_to_path(str(files["client_key"]))
    client.cert_chain_pems[0].write_to_path(str(files["client_cert"]))
    return files
