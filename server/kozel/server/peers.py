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

import hmac
import ipaddress
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

FORWARDED = "x-forwarded-for"
# Metadata by which the referee's own web child shows it is one (a secret it is given in
# PROXY_KEY_ENV): it follows live matches for its visitors and forwards their addresses.
PROXY_KEY = "kozel-proxy-key"
PROXY_KEY_ENV = "KOZEL_WEB_PROXY_KEY"
FORWARDED_PEER = "forwarded:"  # how a forwarded address is told from a connection's


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
    peer: str,
    metadata: Sequence[tuple[str, str | bytes]] | None,
    trusted: Callable[[str], bool],
    from_proxy: bool = False,
) -> str:
    """The host a gRPC call counts against: its peer's, or behind a trusted proxy (the peer's
    address is trusted, or ``from_proxy``) the last address the proxies forward that is not
    itself a trusted proxy (the first one forwarded when all are)."""
    host = peer_host(peer)
    if not (from_proxy or trusted(grpc_address(host))) or not metadata:
        return host
    forwarded = [v for k, v in metadata if k == FORWARDED]
    hops = [
        h.strip()
        for value in forwarded
        for h in (value.decode("latin-1") if isinstance(value, bytes) else value).split(",")
    ]
    hops = [h for h in hops if h]
    for hop in reversed(hops):
        if not trusted(hop):
            return f"{FORWARDED_PEER}{hop[:64]}"
    return f"{FORWARDED_PEER}{hops[0][:64]}" if hops else host


def trust_none(_address: str) -> bool:
    """No proxy is trusted (``trusted_proxies: ""``)."""
    return False


@dataclass(frozen=True, slots=True)
class Proxies:
    """Whose ``x-forwarded-for`` counts on a gRPC port: the proxies ``trusted_proxies`` names,
    and a caller showing ``key`` (the referee's own web child) whatever its address."""

    addresses: Callable[[str], bool] = trust_none
    key: str = ""

    def host(self, context: Any) -> str:
        """The host a call (its ``ServicerContext``) counts against (:func:`client_host`)."""
        metadata = context.invocation_metadata()
        trusted = self.addresses
        if self.key and metadata:
            shown = next((v for k, v in metadata if k == PROXY_KEY), "")
            given = shown.encode("latin-1") if isinstance(shown, str) else shown
            if hmac.compare_digest(given, self.key.encode()):
                return client_host(context.peer(), metadata, trusted, from_proxy=True)
        return client_host(context.peer(), metadata, trusted)
