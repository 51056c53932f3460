"""The UsersRepository contract on James's ``user`` table, and what the rows look like."""

from __future__ import annotations

import base64
import hashlib
import uuid

import pytest

from mailserver.domains.cassandra import CassandraDomainList
from mailserver.model.address import Username
from mailserver.model.passwords import HashedPassword
from mailserver.users.cassandra import CassandraUsersRepository
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


@pytest.mark.production_password_cost
def test_row_holds_james_s_algorithm_and_mime_base64_digest(cassandra, repo, user):
    password = "not in base64!"
    repo.add_user(user, password)
    row = cassandra.one("SELECT name, realname, passwd, algorithm FROM user WHERE name = ?", (user.value,))
    assert row["name"] == row["realname"] == user.value
    # James's Algorithm.asString() and DefaultUser's digest: PBKDF2-HMAC-SHA512 salted with the
    # username, MIME base64 (76-character lines, each ended by CRLF), as the standard library encodes it.
    assert row["algorithm"] == "PBKDF2-SHA512-210000/plain"
    digest = hashlib.pbkdf2_hmac("sha512", password.encode(), user.value.encode(), 210_000, 64)
    assert row["passwd"] == base64.encodebytes(digest).decode().replace("\n", "\r\n")


@pytest.mark.production_password_cost
def test_a_row_james_wrote_with_its_default_algorithm_logs_in_and_is_upgraded(cassandra):
    # AlgorithmTest's PBKDF2-SHA512 digest of "myPassword" salted with "salt": user "salt", no virtual hosting.
    repo = CassandraUsersRepository(cassandra, None, virtual_hosting=False)
    name = "salt"
    cassandra.execute("DELETE FROM user WHERE name = ?", (name,))
    james = ("uakKCXTKBGN1JxbE0bAuLKn8Bzkf+NU9J+2l50tqJlZYzXNe86EJ2jEXkI1Fp1uy2sXLfOrSxCFT\r\n"
             "/fQRPxgZmw==\r\n")
    cassandra.execute("INSERT INTO user (name, realname, passwd, algorithm) VALUES (?, ?, ?, ?)",
                      (name, name, james, "PBKDF2-SHA512/plain"))
    try:
        assert not repo.verify(name, "otherPassword")
        assert cassandra.one("SELECT passwd FROM user WHERE name = ?", (name,))["passwd"] == james
        assert repo.verify(name, "myPassword")
        row = cassandra.one("SELECT passwd, algorithm FROM user WHERE name = ?", (name,))
        assert row["algorithm"] == "PBKDF2-SHA512-210000/plain" and row["passwd"] != james
        assert repo.verify(name, "myPassword")
    finally:
        cassandra.execute("DELETE FROM user WHERE name = ?", (name,))


def test_password_change_keeps_delegation_columns(cassandra, repo, user):
    repo.add_user(user, "old")
    cassandra.execute("UPDATE user SET authorized_users = {'x@y.test'} WHERE name = ?", (user.value,))
    repo.update_password(user, "new")
    row = cassandra.one("SELECT authorized_users FROM user WHERE name = ?", (user.value,))
    assert row["authorized_users"] == {"x@y.test"}


@pytest.mark.production_password_cost
def test_a_james_sha512_row_still_verifies(cassandra, repo, user):
    # A row as James 3.8 writes it with the default algorithm: base64(SHA-512(password)), "/plain".
    james_hash = base64.b64encode(hashlib.sha512(b"legacy").digest()).decode()
    james_hash = james_hash[:76] + "\r\n" + james_hash[76:] + "\r\n"    # James's MIME line breaks
    cassandra.execute("INSERT INTO user (name, realname, passwd, algorithm) VALUES (?, ?, ?, ?)",
                      (user.value, user.value, james_hash, "SHA-512/plain"))
    assert repo.verify(user, "legacy")
    assert not repo.verify(user, "Legacy")
    row = cassandra.one("SELECT passwd, algorithm FROM user WHERE name = ?", (user.value,))
    assert row["algorithm"] == "PBKDF2-SHA512-210000/plain"   # upgraded by the successful login
    assert not repo.hasher.needs_rehash(HashedPassword(row["algorithm"], row["passwd"]))
