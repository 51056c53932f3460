"""``IdentityRepository``: James's merge of the server-set identities with the stored ones."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest

from mailserver.identities.api import Identity, server_set
from mailserver.identities.memory import MemoryCustomIdentityStore
from mailserver.identities.repository import ForbiddenDelete, ForbiddenSendFrom, IdentityNotFound, IdentityRepository
from mailserver.model.address import MailAddress, Username

BOB, SALES = Username("bob@d.tld"), MailAddress.of("sales@d.tld")


@pytest.fixture
def world():
    allowed = {MailAddress.of(BOB.value), SALES}
    store = MemoryCustomIdentityStore()
    return IdentityRepository(store, lambda user: allowed if user == BOB else set()), store, allowed


def test_the_server_set_identities_come_first_not_deletable(world):
    repository, _, _ = world
    assert repository.list(BOB) == [server_set(MailAddress.of(BOB.value)), server_set(SALES)]
    assert not any(i.may_delete for i in repository.list(BOB))


def test_a_created_identity_is_listed_deletable(world):
    repository, _, _ = world
    created = repository.create(BOB, Identity(uuid.uuid4(), "sales@d.tld", name="Sales"))
    assert repository.list(BOB)[-1] == created and created.may_delete


def test_an_address_the_user_may_not_send_from_is_refused(world):
    repository, _, _ = world
    with pytest.raises(ForbiddenSendFrom):
        repository.create(BOB, Identity(uuid.uuid4(), "boss@d.tld"))


def test_a_stored_identity_hides_when_its_address_is_no_longer_allowed(world):
    repository, _, allowed = world
    created = repository.create(BOB, Identity(uuid.uuid4(), "sales@d.tld"))
    allowed.discard(SALES)
    assert created not in repository.list(BOB)
    with pytest.raises(IdentityNotFound):
        repository.update(BOB, created.id, {"name": "x"})


def test_updating_a_server_set_identity_stores_its_change_under_its_id(world):
    repository, store, _ = world
    default = server_set(SALES)
    repository.update(BOB, default.id, {"name": "Sales team"})
    assert store.find(BOB, default.id) == replace(default, name="Sales team")
    assert replace(default, name="Sales team") in repository.list(BOB)
    assert len(repository.list(BOB)) == 2


def test_an_unknown_id_is_not_found(world):
    repository, _, _ = world
    with pytest.raises(IdentityNotFound):
        repository.update(BOB, uuid.uuid4(), {"name": "x"})


def test_a_server_set_identity_cannot_be_deleted(world):
    repository, _, _ = world
    with pytest.raises(ForbiddenDelete):
        repository.delete(BOB, [server_set(SALES).id])
