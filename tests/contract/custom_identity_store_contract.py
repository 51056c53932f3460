"""Behaviour every ``CustomIdentityStore`` adapter must have (memory and Cassandra).

Subclasses provide the ``store`` fixture; each test uses its own user, so a shared keyspace is fine.
"""

from __future__ import annotations

import uuid
from dataclasses import replace

from mailserver.identities.api import CustomIdentityStore, EmailAddress, Identity
from mailserver.model.address import Username


def user() -> Username:
    return Username(f"{uuid.uuid4().hex[:12]}@identity.test")


def identity(owner: Username, **overrides: object) -> Identity:
    base = Identity(uuid.uuid4(), owner.value, name="Bob", reply_to=(EmailAddress("boss@identity.test", "My Boss"),),
                    bcc=(EmailAddress("bcc@identity.test"),), text_signature="text", html_signature="<p>html</p>",
                    may_delete=True, sort_order=7)
    return replace(base, **overrides)   # type: ignore[arg-type]


class CustomIdentityStoreContract:
    def test_a_saved_identity_is_found_and_listed_as_saved(self, store: CustomIdentityStore):
        owner = user()
        saved = identity(owner)
        store.save(owner, saved)
        assert store.find(owner, saved.id) == saved
        assert store.list(owner) == [saved]

    def test_no_reply_to_nor_bcc_reads_back_as_none(self, store: CustomIdentityStore):
        owner = user()
        saved = identity(owner, reply_to=None, bcc=None, name="", text_signature="", html_signature="")
        store.save(owner, saved)
        assert store.find(owner, saved.id) == saved

    def test_saving_again_replaces(self, store: CustomIdentityStore):
        owner = user()
        saved = identity(owner)
        store.save(owner, saved)
        store.save(owner, replace(saved, name="Robert", bcc=None, may_delete=False))
        assert store.list(owner) == [replace(saved, name="Robert", bcc=None, may_delete=False)]

    def test_delete_removes_only_the_ids_given(self, store: CustomIdentityStore):
        owner = user()
        first, second = identity(owner), identity(owner)
        store.save(owner, first)
        store.save(owner, second)
        store.delete(owner, [first.id, uuid.uuid4()])
        assert store.list(owner) == [second]
        assert store.find(owner, first.id) is None

    def test_users_are_apart(self, store: CustomIdentityStore):
        owner = user()
        store.save(owner, identity(owner))
        assert store.list(user()) == []
