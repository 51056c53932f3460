"""DnsResolver classification with dnspython's resolver replaced by a stub (no network)."""

from __future__ import annotations

from types import SimpleNamespace

import dns.exception
import dns.resolver
import pytest

from mailserver.delivery import DnsResolver, DomainNotFound, MxHost, ResolutionError
from mailserver.delivery.resolver import order


def stub(answers):
    def resolve(name, rdtype):
        outcome = answers.get((name, rdtype))
        if isinstance(outcome, Exception):
            raise outcome
        if outcome is None:
            raise dns.resolver.NoAnswer()
        return outcome
    return resolve


def mx(name, pref):
    return SimpleNamespace(exchange=name + ".", preference=pref)


@pytest.fixture
def resolver():
    return DnsResolver(nameservers=["127.0.0.1"])


def test_mx_records_by_preference(resolver):
    resolver.resolver.resolve = stub({("example.com", "MX"): [mx("mx2.example.com", 20), mx("mx1.example.com", 10)]})
    assert resolver.resolve("example.com.") == [MxHost("mx1.example.com", 10, "mx1.example.com"),
                                                MxHost("mx2.example.com", 20, "mx2.example.com")]


def test_implicit_mx_when_there_is_no_mx_record(resolver):
    resolver.resolver.resolve = stub({("example.com", "A"): ["192.0.2.1"]})
    assert resolver.resolve("example.com") == [MxHost("example.com", 0, "example.com")]


def test_nxdomain_and_null_mx_are_permanent(resolver):
    resolver.resolver.resolve = stub({("gone.test", "MX"): dns.resolver.NXDOMAIN()})
    with pytest.raises(DomainNotFound):
        resolver.resolve("gone.test")
    resolver.resolver.resolve = stub({("nomail.test", "MX"): [mx("", 0)]})
    with pytest.raises(DomainNotFound):
        resolver.resolve("nomail.test")


def test_timeouts_are_temporary(resolver):
    resolver.resolver.resolve = stub({("slow.test", "MX"): dns.exception.Timeout()})
    with pytest.raises(ResolutionError) as raised:
        resolver.resolve("slow.test")
    assert not isinstance(raised.value, DomainNotFound)


def test_equal_preferences_are_shuffled_but_preference_order_kept():
    hosts = [MxHost(f"mx{i}", 10 if i < 5 else 20, f"mx{i}") for i in range(10)]
    seen = {tuple(h.name for h in order(hosts, shuffle=True)[:5]) for _ in range(50)}
    assert len(seen) > 1
    assert all(h.preference == 10 for h in order(hosts, shuffle=True)[:5])
