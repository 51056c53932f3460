"""Behaviour every ``UsersRepository`` adapter must have (memory and Cassandra).

Subclasses provide ``domain_list`` (the DomainList the repository checks domains against) and
``users`` (built on it, with virtual hosting). Every test creates its own ``d<uuid>.test``
domain, so a shared keyspace is fine. Each password hash costs ~0.2-0.5 s (210,000 PBKDF2
iterations, on purpose): tests create as few users as they need.
"""

from __future__ import annotations

import uuid

import pytest

from mailserver.domains.api import DomainList
from mailserver.model.address import Domain, InvalidAddress, Username
from mailserver.users.api import (
    InvalidPassword,
    InvalidUsername,
    UnknownDomain,
    UserAlreadyExists,
    UserNotFound,
    UsersRepository,
)


class UsersRepositoryContract:
    @pytest.fixture
    def domain_list(self) -> DomainList:
        raise NotImplementedError

    @pytest.fixture
    def users(self, domain_list) -> UsersRepository:
        raise NotImplementedError

    @pytest.fixture
    def domain(self, domain_list) -> Domain:
        return domain_list.add(f"d{uuid.uuid4().hex[:12]}.test")

    @pytest.fixture
    def bob(self, domain) -> Username:
        return Username.of(f"bob@{domain}")

    def test_added_user_exists_and_verifies(self, users, bob):
        assert users.add_user(bob, "s3cret!") == bob
        assert users.contains(bob)
        assert users.verify(bob, "s3cret!")
        assert not users.verify(bob, "S3cret!")

    def test_usernames_are_case_insensitive(self, users, bob):
        users.add_user(bob.value.upper(), "pw")
        assert users.contains(bob)
        assert users.contains(bob.value.title())
        assert users.verify(bob.value.upper(), "pw")
        assert bob in list(users.list_users())

    def test_adding_an_existing_user_fails(self, users, bob):
        users.add_user(bob, "first")
        with pytest.raises(UserAlreadyExists, match=f"user {bob.value} already exists"):
            users.add_user(bob.value.upper(), "second")
        assert users.verify(bob, "first")

    def test_user_of_a_domain_that_is_not_local_is_refused(self, users):
        stranger = Username.of(f"eve@nowhere-{uuid.uuid4().hex[:8]}.test")
        with pytest.raises(UnknownDomain, match="is not a local domain"):
            users.add_user(stranger, "pw")
        assert not users.contains(stranger)

    def test_virtual_hosting_needs_a_domain_part(self, users):
        with pytest.raises(InvalidUsername, match="local@domain"):
            users.add_user(f"nodomain{uuid.uuid4().hex[:8]}", "pw")

    @pytest.mark.parametrize("bad", ["", "  ", "a b@x.test", "a@b@x.test", "a/b@x.test", "@x.test"])
    def test_malformed_usernames_are_refused(self, users, bad):
        with pytest.raises(InvalidAddress):
            users.add_user(bad, "pw")

    @pytest.mark.parametrize("password", ["", None])
    def test_empty_password_is_refused(self, users, bob, password):
        with pytest.raises(InvalidPassword):
            users.add_user(bob, password)
        assert not users.contains(bob)

    def test_verify_never_raises_for_bad_credentials(self, users, bob):
        assert not users.verify(bob, "pw")                  # unknown user
        assert not users.verify("not a user name", "pw")    # malformed name
        users.add_user(bob, "pw")
        assert not users.verify(bob, "")

    def test_update_password(self, users, bob):
        users.add_user(bob, "old")
        users.update_password(bob, "new")
        assert users.verify(bob, "new")
        assert not users.verify(bob, "old")

    def test_update_password_of_unknown_user_fails_and_creates_nothing(self, users, bob):
        with pytest.raises(UserNotFound, match=f"user {bob.value} does not exist"):
            users.update_password(bob, "pw")
        assert not users.contains(bob)

    def test_update_password_refuses_empty_password(self, users, bob):
        with pytest.raises(InvalidPassword):
            users.update_password(bob, "")

    def test_removed_user_is_gone(self, users, bob):
        users.add_user(bob, "pw")
        users.remove_user(bob.value.upper())
        assert not users.contains(bob)
        assert bob not in list(users.list_users())

    def test_removing_an_unknown_user_fails(self, users, bob):
        with pytest.raises(UserNotFound):
            users.remove_user(bob)

    def test_a_removed_user_can_be_created_again_with_a_new_password(self, users, bob):
        users.add_user(bob, "first")
        users.remove_user(bob)
        users.add_user(bob, "second")
        assert users.verify(bob, "second")

    def test_list_and_count(self, users, domain):
        before = users.count()
        names = {Username.of(f"u{i}@{domain}") for i in range(2)}
        for name in names:
            users.add_user(name, "pw")
        assert users.count() == before + 2
        assert names <= set(users.list_users())

    def test_removing_the_domain_keeps_its_users(self, users, domain_list, domain, bob):
        # James allows removing a domain that still has users; they stay (and still authenticate).
        users.add_user(bob, "pw")
        domain_list.remove(domain)
        assert users.contains(bob)
        assert users.verify(bob, "pw")
