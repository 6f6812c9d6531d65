"""Whose call it is behind proxies (kozel.server.peers): a forwarded address counts only from
a trusted proxy, or from a caller showing the key the referee gave its own web child."""

from __future__ import annotations

from kozel.server.peers import Proxies, client_host, trusted_addresses

PROXY = "ipv4:10.0.0.5:40000"
CLIENT = "ipv4:203.0.113.7:50000"
TRUSTED = trusted_addresses("10.0.0.0/8")


class Context:
    def __init__(self, peer: str, *metadata: tuple[str, str]) -> None:
        self._peer, self._metadata = peer, metadata

    def peer(self) -> str:
        return self._peer

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata


def test_a_forwarded_address_counts_from_a_trusted_proxy_only() -> None:
    fwd = [("x-forwarded-for", "198.51.100.1, 203.0.113.9, 10.0.0.9")]
    assert client_host(PROXY, fwd, TRUSTED) == "forwarded:203.0.113.9"  # the last untrusted
    assert client_host(CLIENT, fwd, TRUSTED) == "ipv4:203.0.113.7"  # anyone else: ignored
    assert client_host(PROXY, [], TRUSTED) == "ipv4:10.0.0.5"
    assert client_host(PROXY, [("x-forwarded-for", "10.0.0.1, ")], TRUSTED) == "forwarded:10.0.0.1"
    everyone = trusted_addresses("*")
    assert client_host(CLIENT, fwd, everyone) == "forwarded:198.51.100.1"  # all trusted: first


def test_the_web_childs_key_makes_it_a_proxy_whatever_its_address() -> None:
    proxies = Proxies(TRUSTED, key="s3cret-key")
    shown = Context(CLIENT, ("x-forwarded-for", "192.0.2.4"), ("kozel-proxy-key", "s3cret-key"))
    wrong = Context(CLIENT, ("x-forwarded-for", "192.0.2.4"), ("kozel-proxy-key", "guess"))
    assert proxies.host(shown) == "forwarded:192.0.2.4"
    assert proxies.host(wrong) == "ipv4:203.0.113.7"
    assert Proxies(TRUSTED).host(shown) == "ipv4:203.0.113.7"  # no key given: none accepted
