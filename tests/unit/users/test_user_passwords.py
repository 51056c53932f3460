"""Passwords hashed, stored and verified exactly as James does (``Algorithm``, ``DefaultUser``).

JAMES_DIGESTS is copied from James's own tests (apache/james-project, master):
server/data/data-library/src/test/java/org/apache/james/user/lib/model/AlgorithmTest.java
(every digest there is ``Algorithm.of(<algorithm>[, <mode>]).digest(password, "salt")``), and the
SHA-1 legacy hash of "secret" from DefaultUserTest.java in the same folder.
"""

from __future__ import annotations

import base64
import hashlib

import pytest

from mailserver.model.passwords import (
    DEFAULT_ALGORITHM,
    Algorithm,
    HashedPassword,
    PasswordHasher,
    UnknownAlgorithm,
)
from mailserver.users.memory import MemoryUsersRepository

# (algorithm column as James writes it, password, the passwd column James writes for user "salt")
JAMES_DIGESTS = [
    ("SHA-1/legacy", "myPassword", "VBPuJHI7uixaa6LQGWx4s+5G"),
    ("SHA-1/legacy", "a", "hvfkN/qlp/zhXR3cuerq6jd2"),
    ("SHA-512/legacy", "myPassword",
     "RQrQPbk5XfzLXgMGb9fxbPuith4j1RY3NxRHFFkFLskKmkvzoVHmAOqKrtNuO4who9OKsXBYOXSd\r\nEw2kOA8U"),
    ("SHA-512/legacy", "otherPassword",
     "6S2kG/b6oHgWBXQjKDKTayXWu2cs9374lxFrL9uVpmYUlq0lw/ZFU9svMtYVDV5aVjJqRbLWZ/df\r\neaaJwYxk"),
    ("SHA-1/plain", "myPassword", "VBPuJHI7uixaa6LQGWx4s+5GKNE=\r\n"),
    ("SHA-1/plain", "otherPassword", "ks40t+AjBnHsMaC1Is/6+mtb05s=\r\n"),
    ("SHA-512/plain", "myPassword",
     "RQrQPbk5XfzLXgMGb9fxbPuith4j1RY3NxRHFFkFLskKmkvzoVHmAOqKrtNuO4who9OKsXBYOXSd\r\nEw2kOA8USA==\r\n"),
    ("SHA-512/plain", "a",
     "H0D8ktokFpR1CXnubPWC8tXX0o4YM13gWrxU0FYOD1MChgxlK/CNVgJSql50IQVG82n7u86MEs/H\r\nlXsmUv6adQ==\r\n"),
    ("PBKDF2/plain", "myPassword",
     "Ag2g49zxor0w11yguLUMQ7EKBokU81LkvLyDqubWtQq7R5V21HVqZ+CEjEQxBLGfi35RFyesJtxb\r\nL5/VRCpI3g==\r\n"),
    ("PBKDF2-10/plain", "otherPassword",
     "e4+swbwo1s3X665INoRVsENXrgJtC7SMws9G3Y0GBoLZBkqZQzE2aT2WLd+hOlf3s/wwQe10MA0Q\r\nxMJQIcIosQ==\r\n"),
    ("PBKDF2-10-128/plain", "myPassword", "AoNuFZ7ZI6vHU8obYASuuA==\r\n"),
    ("PBKDF2-SHA512/plain", "myPassword",
     "uakKCXTKBGN1JxbE0bAuLKn8Bzkf+NU9J+2l50tqJlZYzXNe86EJ2jEXkI1Fp1uy2sXLfOrSxCFT\r\n/fQRPxgZmw==\r\n"),
    ("PBKDF2-SHA512/plain", "a",
     "q/vf4fTefNDayyTm9Vcc8AKU4lzuDgbG/nV+Dlkh9pGpfXI0qkJxFCnwxLt4WeKGKywgGAYx4LRX\r\nq0STMJiH2A==\r\n"),
    ("PBKDF2-SHA512-10-128/plain", "myPassword", "86eS500HIhM0zy0pMOZS2Q==\r\n"),
    ("PBKDF2-SHA512-10-128/plain", "otherPassword", "Ano/+SYcHd9QBIYGu8b4Ig==\r\n"),
]
SALT = "salt"   # James's tests salt with "salt"; DefaultUser salts with the username


@pytest.mark.parametrize(("algorithm", "password", "expected"), JAMES_DIGESTS)
def test_digest_is_james_s_string_byte_for_byte(algorithm, password, expected):
    assert Algorithm.of(algorithm).digest(password, SALT) == expected


@pytest.mark.parametrize(("algorithm", "password", "expected"), JAMES_DIGESTS)
def test_a_james_row_verifies_and_refuses(algorithm, password, expected):
    stored = HashedPassword(algorithm, expected)
    hasher = PasswordHasher()
    assert hasher.verify(password, stored, username=SALT)
    assert not hasher.verify(password + "x", stored, username=SALT)
    # PBKDF2 is always salted with the username; SHA digests only in the salted modes.
    assert hasher.verify(password, stored, username="other") is not algorithm.startswith("PBKDF2")


def test_james_default_user_test_sample():
    # DefaultUserTest: "5en6G6MezRroT3XKqkdPOmY/" is the SHA-1 legacy hash of "secret" for user joe.
    stored = HashedPassword("SHA-1/legacy", "5en6G6MezRroT3XKqkdPOmY/")
    assert PasswordHasher().verify("secret", stored, username="joe")
    assert not PasswordHasher().verify("secret2", stored, username="joe")


def test_a_column_without_mode_is_plain_as_james_s_default_hashing_mode():
    assert Algorithm.of("PBKDF2-SHA512") == Algorithm("PBKDF2-SHA512", "plain")
    assert Algorithm.of("SHA-1/LEGACY").as_string() == "SHA-1/legacy"


def test_salted_mode_prefixes_the_username():
    expected = base64.encodebytes(hashlib.sha256(b"bob@d.test" + b"secret").digest()).decode()
    assert Algorithm.of("SHA-256/salted").digest("secret", "bob@d.test") == expected.replace("\n", "\r\n")


@pytest.mark.parametrize("name", ["PBKDF2-bad", "PBKDF2-", "PBKDF2--1", "PBKDF2-1-", "PBKDF2-1-bad", "PBKDF2-0",
                                  "PBKDF2-1-0", "PBKDF2-1--1", "WHIRLPOOL", "SHA-512/weird", ""])
def test_what_james_refuses_is_refused(name):
    # AlgorithmTest's ofShouldThrow* cases, and names no MessageDigest knows.
    with pytest.raises(UnknownAlgorithm):
        Algorithm.of(name)
    assert not PasswordHasher().verify("secret", HashedPassword(name, "anything"), username="joe")


def test_a_hex_digest_or_a_value_without_line_breaks_verifies():
    digest = hashlib.sha512(b"secret").digest()
    for value in (digest.hex(), base64.b64encode(digest).decode()):
        assert PasswordHasher().verify("secret", HashedPassword("SHA-512", value), username="joe")


def test_the_old_random_salt_format_still_verifies_and_needs_rehash():
    salt = b"0123456789abcdef"
    digest = hashlib.pbkdf2_hmac("sha512", b"pw", salt, 1000)
    old = HashedPassword("PBKDF2-SHA512", f"PBKDF2-SHA512:1000:{base64.b64encode(salt).decode()}:"
                                          f"{base64.b64encode(digest).decode()}")
    hasher = PasswordHasher()
    assert hasher.verify("pw", old, username="joe")
    assert not hasher.verify("pw2", old, username="joe")
    assert hasher.needs_rehash(old)


def test_needs_rehash_when_not_in_the_configured_algorithm():
    hasher = PasswordHasher("PBKDF2-SHA512-10")
    assert not hasher.needs_rehash(HashedPassword("PBKDF2-SHA512-10/plain", "x"))
    assert hasher.needs_rehash(HashedPassword("PBKDF2-SHA512/plain", "x"))
    assert hasher.needs_rehash(HashedPassword("SHA-512/plain", "x"))


@pytest.mark.production_password_cost
def test_default_is_james_pbkdf2_sha512_with_owasp_iterations():
    assert DEFAULT_ALGORITHM == "PBKDF2-SHA512-210000"
    assert PasswordHasher().algorithm.as_string() == "PBKDF2-SHA512-210000/plain"


def test_repr_hides_the_hash():
    assert "secret-hash" not in repr(HashedPassword("SHA-512/plain", "secret-hash"))


# -- the users repository writes James's rows and upgrades others at login -------------------------
def test_a_user_created_here_has_james_s_row_for_james_s_sample():
    # James's own PBKDF2-SHA512 digest of "myPassword" for user "salt": the row is what James writes.
    users = MemoryUsersRepository(None, virtual_hosting=False, hasher=PasswordHasher("PBKDF2-SHA512"))
    user = users.add_user("salt", "myPassword")
    assert users.stored_password(user) == HashedPassword(
        "PBKDF2-SHA512/plain",
        "uakKCXTKBGN1JxbE0bAuLKn8Bzkf+NU9J+2l50tqJlZYzXNe86EJ2jEXkI1Fp1uy2sXLfOrSxCFT\r\n/fQRPxgZmw==\r\n")
    assert users.verify("salt", "myPassword")


def test_a_login_upgrades_a_row_in_another_algorithm():
    users = MemoryUsersRepository(None, virtual_hosting=False, hasher=PasswordHasher("SHA-512"))
    user = users.add_user("salt", "myPassword")
    users.hasher = PasswordHasher("PBKDF2-SHA512")

    assert not users.verify(user, "wrong")
    assert users.stored_password(user) == HashedPassword("SHA-512/plain", JAMES_DIGESTS[6][2])   # unchanged
    assert users.verify(user, "myPassword")
    assert users.stored_password(user) == HashedPassword("PBKDF2-SHA512/plain", JAMES_DIGESTS[11][2])
    assert users.verify(user, "myPassword")
