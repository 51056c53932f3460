"""The UsersRepository contract on James's ``user`` table, and what the rows look like."""

from __future__ import annotations

import base64
import hashlib
import uuid

import pytest

from mailserver.domains.cassandra import CassandraDomainList
from mailserver.model.address import Username
from mailserver.users.cassandra import CassandraUsersRepository
from mailserver.users.passwords import HashedPassword
from tests.contract.users_contract import UsersRepositoryContract

pytestmark = pytest.mark.integration


class TestCassandraUsersRepository(UsersRepositoryContract):
    @pytest.fixture
    def domain_list(self, cassandra):
        return CassandraDomainList(cassandra)

    @pytest.fixture
    def users(self, cassandra, domain_list):
        return CassandraUsersRepository(cassandra, domain_list)


@pytest.fixture
def repo(cassandra):
    return CassandraUsersRepository(cassandra, CassandraDomainList(cassandra))


@pytest.fixture
def user(repo) -> Username:
    domain = repo.domains.add(f"d{uuid.uuid4().hex[:12]}.test")
    return Username.of(f"carol@{domain}")


def test_row_holds_a_self_describing_pbkdf2_hash(cassandra, repo, user):
    # '!' and ' ' are outside the base64 alphabet, so the plaintext cannot
    # turn up inside a random salt or digest by chance.
    password = "not in base64!"
    repo.add_user(user, password)
    row = cassandra.one("SELECT name, realname, passwd, algorithm FROM user WHERE name = ?", (user.value,))
    assert row["name"] == row["realname"] == user.value
    assert row["algorithm"] == "PBKDF2-SHA512"
    name, iterations, salt, digest = row["passwd"].split(":")
    assert (name, int(iterations)) == ("PBKDF2-SHA512", 210_000)
    assert len(base64.b64decode(salt)) == 16 and len(base64.b64decode(digest)) == 64
    assert password not in row["passwd"]


def test_password_change_keeps_delegation_columns(cassandra, repo, user):
    repo.add_user(user, "old")
    cassandra.execute("UPDATE user SET authorized_users = {'x@y.test'} WHERE name = ?", (user.value,))
    repo.update_password(user, "new")
    row = cassandra.one("SELECT authorized_users FROM user WHERE name = ?", (user.value,))
    assert row["authorized_users"] == {"x@y.test"}


def test_a_james_sha512_row_still_verifies(cassandra, repo, user):
    # A row as James 3.8 writes it with the default algorithm: base64(SHA-512(password)), "/plain".
    james_hash = base64.b64encode(hashlib.sha512(b"legacy").digest()).decode()
    james_hash = james_hash[:76] + "\r\n" + james_hash[76:] + "\r\n"    # James's MIME line breaks
    cassandra.execute("INSERT INTO user (name, realname, passwd, algorithm) VALUES (?, ?, ?, ?)",
                      (user.value, user.value, james_hash, "SHA-512/plain"))
    assert repo.verify(user, "legacy")
    assert not repo.verify(user, "Legacy")
    row = cassandra.one("SELECT passwd, algorithm FROM user WHERE name = ?", (user.value,))
    assert repo.hasher.needs_rehash(HashedPassword(row["algorithm"], row["passwd"]))
