"""Password hashing: our PBKDF2 format and the James formats we can still verify."""

from __future__ import annotations

import base64
import hashlib

import pytest

from mailserver.users.passwords import (
    ALGORITHM,
    DEFAULT_ITERATIONS,
    HashedPassword,
    PasswordHasher,
)


@pytest.fixture(scope="module")
def hasher() -> PasswordHasher:
    return PasswordHasher()


@pytest.fixture(scope="module")
def hashed(hasher) -> HashedPassword:
    return hasher.hash("correct horse ✓")


def test_format_is_self_describing(hashed):
    assert hashed.algorithm == ALGORITHM == "PBKDF2-SHA512"
    name, iterations, salt, digest = hashed.value.split(":")
    assert name == "PBKDF2-SHA512" and int(iterations) == DEFAULT_ITERATIONS >= 210_000
    assert len(base64.b64decode(salt)) == 16
    assert len(base64.b64decode(digest)) == 64


def test_verify(hasher, hashed):
    assert hasher.verify("correct horse ✓", hashed)
    assert not hasher.verify("correct horse", hashed)
    assert not hasher.verify("", hashed)


def test_salt_is_random(hasher, hashed):
    again = hasher.hash("correct horse ✓")
    assert again.value != hashed.value
    assert hasher.verify("correct horse ✓", again)


def test_repr_hides_the_hash(hashed):
    assert hashed.value not in repr(hashed)


def test_iterations_below_owasp_are_refused():
    with pytest.raises(ValueError, match="iterations"):
        PasswordHasher(iterations=1000)


def test_needs_rehash(hasher, hashed):
    assert not hasher.needs_rehash(hashed)
    assert PasswordHasher(iterations=DEFAULT_ITERATIONS + 1).needs_rehash(hashed)
    assert hasher.needs_rehash(HashedPassword("SHA-512/plain", "x"))


@pytest.mark.parametrize("value", ["PBKDF2-SHA512:abc:AAAA:AAAA", "PBKDF2-SHA512:1000:!!:AAAA",
                                   "PBKDF2-SHA512:1000", "PBKDF2-SHA512:0:AAAA:AAAA", ""])
def test_corrupt_values_do_not_verify(hasher, value):
    assert not hasher.verify("pw", HashedPassword(ALGORITHM, value))


def test_a_lower_iteration_count_in_the_row_is_honoured(hasher):
    # Rows keep verifying when the policy changes: the count is read from the row.
    salt = b"0123456789abcdef"
    digest = hashlib.pbkdf2_hmac("sha512", b"pw", salt, 1000)
    value = f"PBKDF2-SHA512:1000:{base64.b64encode(salt).decode()}:{base64.b64encode(digest).decode()}"
    assert hasher.verify("pw", HashedPassword(ALGORITHM, value))
    assert hasher.needs_rehash(HashedPassword(ALGORITHM, value))


# -- James's own formats --------------------------------------------------------------------------
def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def test_james_sha512_plain(hasher):
    digest = hashlib.sha512(b"secret").digest()
    for algorithm in ("SHA-512", "SHA-512/plain", "SHA-512/PLAIN"):
        assert hasher.verify("secret", HashedPassword(algorithm, b64(digest)))
    assert hasher.verify("secret", HashedPassword("SHA-512", b64(digest)[:76] + "\r\n" + b64(digest)[76:]))
    assert hasher.verify("secret", HashedPassword("SHA-512", digest.hex()))
    assert not hasher.verify("Secret", HashedPassword("SHA-512", b64(digest)))


def test_james_salted_uses_the_username_as_salt(hasher):
    digest = hashlib.sha256(b"bob@d.test" + b"secret").digest()
    stored = HashedPassword("SHA-256/salted", b64(digest))
    assert hasher.verify("secret", stored, username="bob@d.test")
    assert not hasher.verify("secret", stored, username="eve@d.test")


def test_james_sha1_legacy_sample(hasher):
    # James's own DefaultUserTest: "5en6G6MezRroT3XKqkdPOmY/" is the SHA-1 legacy hash of "secret".
    assert hasher.verify("secret", HashedPassword("SHA-1/legacy", "5en6G6MezRroT3XKqkdPOmY/"))
    assert not hasher.verify("secret2", HashedPassword("SHA-1/legacy", "5en6G6MezRroT3XKqkdPOmY/"))


def test_james_pbkdf2_sha512(hasher):
    digest = hashlib.pbkdf2_hmac("sha512", b"secret", b"bob@d.test", 1000, 64)
    assert hasher.verify("secret", HashedPassword("PBKDF2-SHA512/plain", b64(digest)), username="bob@d.test")
    digest = hashlib.pbkdf2_hmac("sha512", b"secret", b"bob@d.test", 2000, 32)
    assert hasher.verify("secret", HashedPassword("PBKDF2-SHA512-2000-256", b64(digest)), username="bob@d.test")


@pytest.mark.parametrize("algorithm", ["WHIRLPOOL", "SHA-512/weird", "", "PBKDF2-x-y"])
def test_unknown_algorithms_never_verify(hasher, algorithm):
    assert not hasher.verify("secret", HashedPassword(algorithm, b64(hashlib.sha512(b"secret").digest())))
