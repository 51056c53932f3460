"""Where to deliver a domain's mail: the ``Resolver`` port, a static table and DNS (dnspython).

A target is ``MxHost(name, preference, address)`` where ``address`` is ``host`` or
``host:port`` (port 25 when absent); lower preference first, equal preferences shuffled when
load balancing. ``DomainNotFound`` is permanent (NXDOMAIN, null MX); ``ResolutionError`` is
temporary (timeouts, SERVFAIL).
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

DEFAULT_SMTP_PORT = 25


class ResolutionError(Exception):
    """Temporary: try again later."""


class DomainNotFound(ResolutionError):
    """Permanent: the domain does not exist or accepts no mail (null MX, RFC 7505)."""


@dataclass(frozen=True)
class MxHost:
    name: str
    preference: int
    address: str

    @property
    def host_port(self) -> tuple[str, int]:
        """``host``, ``host:port``, ``[v6]:port`` or a bare IPv6 literal."""
        address = self.address
        if address.startswith("["):
            host, _, rest = address[1:].partition("]")
            return host, int(rest[1:]) if rest.startswith(":") else DEFAULT_SMTP_PORT
        if address.count(":") == 1:
            host, port = address.split(":")
            return host, int(port)
        return address, DEFAULT_SMTP_PORT


def order(hosts: Sequence[MxHost], *, shuffle: bool, rng: random.Random | None = None) -> list[MxHost]:
    hosts = list(hosts)
    if shuffle:
        (rng or random.Random()).shuffle(hosts)  # noqa: S311 - load balancing, not security
    return sorted(hosts, key=lambda h: h.preference)  # stable: shuffled order kept within a preference


class Resolver(ABC):
    @abstractmethod
    def resolve(self, domain: str) -> list[MxHost]:
        """Targets for ``domain`` by preference; raises DomainNotFound or ResolutionError."""


class StaticResolver(Resolver):
    """``{"example.com": [("mx1.example.com", 10, "127.0.0.1:2526")]}``; ``"*"`` matches any domain."""

    def __init__(self, table: Mapping[str, Sequence[tuple[str, int, str] | MxHost]]) -> None:
        self.table = {domain.lower().rstrip("."): [h if isinstance(h, MxHost) else MxHost(*h) for h in hosts]
                      for domain, hosts in table.items()}

    def resolve(self, domain: str) -> list[MxHost]:
        key = domain.lower().rstrip(".")
        hosts = self.table.get(key, self.table.get("*"))
        if not hosts:
            raise DomainNotFound(f"no route to domain {domain}")
        return sorted(hosts, key=lambda h: h.preference)


class DnsResolver(Resolver):
    """MX lookup with dnspython; no MX record -> the domain itself (implicit MX, RFC 5321 5.1)."""

    def __init__(self, *, timeout: float = 10.0, nameservers: Sequence[str] | None = None) -> None:
        import dns.resolver

        self._dns = dns
        self.resolver = dns.resolver.Resolver()
        self.resolver.lifetime = timeout
        if nameservers:
            self.resolver.nameservers = list(nameservers)

    def resolve(self, domain: str) -> list[MxHost]:
        import dns.exception
        import dns.resolver

        name = domain.rstrip(".")
        try:
            answer = self.resolver.resolve(name, "MX")
        except dns.resolver.NXDOMAIN as exc:
            raise DomainNotFound(f"domain {domain} does not exist") from exc
        except dns.resolver.NoAnswer:
            return self._implicit(name)
        except (dns.resolver.NoNameservers, dns.exception.Timeout) as exc:
            raise ResolutionError(f"MX lookup for {domain} failed: {exc}") from exc
        hosts = [MxHost(str(r.exchange).rstrip("."), int(r.preference), str(r.exchange).rstrip("."))
                 for r in answer]
        if len(hosts) == 1 and hosts[0].name in ("", "."):
            raise DomainNotFound(f"domain {domain} accepts no mail (null MX)")
        return sorted((h for h in hosts if h.name), key=lambda h: h.preference)

    def _implicit(self, name: str) -> list[MxHost]:
        import dns.exception
        import dns.resolver

        for rdtype in ("A", "AAAA"):
            try:
                self.resolver.resolve(name, rdtype)
                return [MxHost(name, 0, name)]
            except (dns.resolver.NoAnswer, dns.resolver.NXDOMAIN):
                continue
            except (dns.resolver.NoNameservers, dns.exception.Timeout) as exc:
                raise ResolutionError(f"address lookup for {name} failed: {exc}") from exc
        raise DomainNotFound(f"domain {name} has neither MX nor address records")
