"""Whose call is it: the client's address, as the connection gives it or, behind a trusted
proxy, as the proxy forwards it.

Behind a load balancer every client may reach the referee (and the web) from the balancer's
own address, and a limit per address would then hold every client together. Where the
operator names the proxies (``trusted_proxies``), the address a proxy forwards
(``x-forwarded-for``: gRPC metadata, or the HTTP header) counts instead; from anyone else that
header is ignored, since a client could write any address into it. A bot that logs in (a
ladder token) is counted by its own identity where a limit allows it
(``max_sessions_per_bot``, its share of the running matches).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Sequence
from typing import Any

FORWARDED = "x-forwarded-for"


def peer_host(peer: str) -> str:
    """The host part of a gRPC peer string (ipv4:1.2.3.4:5, ipv6:[::1]:5)."""
    return peer.rsplit(":", 1)[0] if peer else ""


def trusted_addresses(spec: str) -> Callable[[str], bool]:
    """Whether an address is one of ``spec`` (comma-separated addresses and networks; ``*``
    for any); ``ValueError`` naming an entry that is neither."""
    items = [x.strip() for x in spec.split(",") if x.strip()]
    if "*" in items:
        return lambda _address: True
    networks = []
    for item in items:
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(f"{item!r} is not an address or a network (10.0.0.0/8)") from None

    def trusted(address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address.strip("[]"))
        except ValueError:
            return False
        return any(ip in net for net in networks if net.version == ip.version)

    return trusted


def grpc_address(host: str) -> str:
    """The bare address of a gRPC peer host (``ipv4:1.2.3.4`` -> ``1.2.3.4``)."""
    return host.partition(":")[2].strip("[]") if host.startswith(("ipv4:", "ipv6:")) else host


def client_host(
    peer: str, metadata: Sequence[tuple[str, str | bytes]] | None, trusted: Callable[[str], bool]
) -> str:
    """The host a gRPC call counts against: its peer's, or behind a trusted proxy the last
    address the proxies forward that is not itself a trusted proxy."""
    host = peer_host(peer)
    if not trusted(grpc_address(host)) or not metadata:
        return host
    forwarded = [v for k, v in metadata if k == FORWARDED]
    hops = [
        h.strip()
        for value in forwarded
        for h in (value.decode("latin-1") if isinstance(value, bytes) else value).split(",")
    ]
    for hop in reversed(hops):
        if not hop:
            continue
        if not trusted(hop):
            return f"forwarded:{hop[:64]}"
    return host


def trust_none(_address: str) -> bool:
    """No proxy is trusted (``trusted_proxies: ""``)."""
    return False


def call_host(context: Any, trusted: Callable[[str], bool] = trust_none) -> str:
    """The host a gRPC call (its ``ServicerContext``) counts against (:func:`client_host`)."""
    return client_host(context.peer(), context.invocation_metadata(), trusted)
