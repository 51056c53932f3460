"""The Cassandra ``CustomIdentityStore`` meets the adapters' contract on James's ``custom_identity`` rows."""

from __future__ import annotations

import pytest

from mailserver.identities.cassandra import CassandraCustomIdentityStore
from tests.contract.custom_identity_store_contract import CustomIdentityStoreContract, identity, user

pytestmark = pytest.mark.integration


class TestCassandraCustomIdentityStore(CustomIdentityStoreContract):
    @pytest.fixture
    def store(self, cassandra) -> CassandraCustomIdentityStore:
        return CassandraCustomIdentityStore(cassandra)


def test_the_row_is_james_s(cassandra):
    owner = user()
    saved = identity(owner)
    CassandraCustomIdentityStore(cassandra).save(owner, saved)
    row = cassandra.one("SELECT name, email, reply_to, sort_order, may_delete FROM custom_identity "
                        "WHERE user = ? AND id = ?", (owner.value, saved.id))
    assert row is not None
    assert (row["name"], row["email"], row["sort_order"], row["may_delete"]) == ("Bob", owner.value, 7, True)
    assert [(a.name, a.email) for a in row["reply_to"]] == [("My Boss", "boss@identity.test")]
