"""The rows James reads: ``droplist`` entries, the ``user`` table's delegation sets and the Sieve
limits in ``quotaLimit`` (component SIEVE), written by the Cassandra adapters."""

from __future__ import annotations

import uuid

import pytest

from mailserver.droplist.api import DeniedEntityType, DropListEntry, OwnerScope
from mailserver.droplist.cassandra import CassandraDropList
from mailserver.model.address import MailAddress, Username
from mailserver.sieve.cassandra_quota import CassandraSieveQuotas
from mailserver.users.cassandra_delegation import CassandraDelegationStore

pytestmark = pytest.mark.integration


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


def test_droplist_rows_are_james_s_and_block_the_sender(cassandra):
    droplist, owner = CassandraDropList(cassandra), f"{unique('o')}.tld"
    entry = DropListEntry(OwnerScope.DOMAIN, owner, DeniedEntityType.DOMAIN, "evil.com")
    droplist.add(entry)
    droplist.add(entry)   # IF NOT EXISTS: still one row
    row = cassandra.one("SELECT denied_entity_type FROM droplist WHERE owner_scope = ? AND owner = ? "
                        "AND denied_entity = ?", ("DOMAIN", owner, "evil.com"))
    assert row == {"denied_entity_type": "DOMAIN"}
    assert droplist.list(OwnerScope.DOMAIN, owner) == [entry]
    assert droplist.blocks(OwnerScope.DOMAIN, owner, MailAddress.of("x@evil.com"))
    droplist.remove(entry)
    assert droplist.list(OwnerScope.DOMAIN, owner) == []
    assert not droplist.blocks(OwnerScope.DOMAIN, owner, MailAddress.of("x@evil.com"))


def test_delegation_sets_both_sides_of_the_user_rows(cassandra):
    base, delegate = Username(f"{unique('a')}@d.tld"), Username(f"{unique('b')}@d.tld")
    store = CassandraDelegationStore(cassandra, lambda user: user == delegate)
    store.add_authorized_user(base, delegate)
    assert cassandra.one("SELECT authorized_users FROM user WHERE name = ?", (base.value,)) == {
        "authorized_users": {delegate.value}}
    assert store.delegated_users(delegate) == [base]
    store.clear(base)
    assert store.authorized_users(base) == [] and store.delegated_users(delegate) == []


def test_sieve_limits_are_quota_limit_rows_of_component_sieve(cassandra):
    quotas, user = CassandraSieveQuotas(cassandra), Username(f"{unique('s')}@d.tld")
    quotas.set(user, 2048)
    assert cassandra.one("SELECT quotaLimit FROM quotaLimit WHERE quotaScope = 'user' AND identifier = ? "
                         "AND quotaComponent = 'SIEVE' AND quotaType = 'size'", (user.value,)) == {"quotalimit": 2048}
    assert quotas.of(user) == 2048
    quotas.remove(user)
    assert quotas.of(user) is None
