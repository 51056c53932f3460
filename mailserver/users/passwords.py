"""Password hashing: salted, slow PBKDF2-HMAC-SHA512 from the standard library.

What we write (``user.passwd`` / ``user.algorithm``)::

    passwd    = "PBKDF2-SHA512:<iterations>:<salt base64>:<hash base64>"
    algorithm = "PBKDF2-SHA512"

The stored string describes itself (iterations and salt travel with the hash), so raising the
iteration count later keeps every existing password verifiable; ``needs_rehash`` says which
ones are below the current policy. The salt is 16 random bytes per password; the iteration
count follows OWASP's recommendation for PBKDF2-HMAC-SHA512 (210,000). Comparisons are
constant-time (``hmac.compare_digest``).

What we can still verify (rows written by James): James names its algorithms
``<name>/<mode>``, e.g. ``SHA-512/plain``, ``SHA-512/salted``, ``SHA-1/legacy``,
``PBKDF2-SHA512/plain`` (``Algorithm.asString()``), and the mode defaults to ``plain`` when the
column has no ``/``. James computes:

* plain:  ``base64(SHA-x(password))``
* salted: ``base64(SHA-x(username + password))`` (the salt is the username)
* legacy / legacy_salted: the same, with James's truncated base64 (the encoder stream was not
  closed, so only complete 3-byte groups were written)
* ``PBKDF2[-SHA512][-<iterations>[-<key bits>]]``: ``base64(PBKDF2(password, salt=username))``
  with HMAC-SHA1 (``PBKDF2``) or HMAC-SHA512 (``PBKDF2-SHA512``), 1000 iterations and 512 bits
  by default.

Digest input is ISO-8859-1 (unmappable characters become ``?``, as Java's ``getBytes`` does),
PBKDF2 passwords are UTF-8 (as Java's ``PBEKeySpec``). James's MIME base64 wraps lines at 76
characters, so whitespace in the stored value is ignored. A hex digest of the same bytes is
accepted too (how hand-made migration scripts usually store ``SHA-512``): same digest, other
spelling, so it makes nothing easier to guess. Those James formats are unsalted or salted with
a guessable value and fast: ``needs_rehash`` is True for them, so a caller that has just
verified the clear password can rewrite it in our format.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass

ALGORITHM = "PBKDF2-SHA512"
DEFAULT_ITERATIONS = 210_000       # OWASP Password Storage Cheat Sheet, PBKDF2-HMAC-SHA512
MIN_ITERATIONS = DEFAULT_ITERATIONS
MAX_ITERATIONS = 10_000_000        # a corrupt row must not pin a CPU for minutes
SALT_BYTES = 16
_PREFIX = ALGORITHM + ":"

# Java MessageDigest names James accepts -> hashlib names.
_JAMES_DIGESTS = {"SHA-512": "sha512", "SHA-384": "sha384", "SHA-256": "sha256", "SHA-224": "sha224",
                  "SHA-1": "sha1", "SHA1": "sha1", "SHA": "sha1", "MD5": "md5"}
_JAMES_MODES = {"plain", "salted", "legacy", "legacy_salted"}


@dataclass(frozen=True)
class HashedPassword:
    """The two columns James keeps for a password."""

    algorithm: str   # user.algorithm
    value: str       # user.passwd

    def __repr__(self) -> str:  # keep hashes out of logs and tracebacks
        return f"HashedPassword(algorithm={self.algorithm!r}, value=<redacted>)"


class PasswordHasher:
    def __init__(self, iterations: int = DEFAULT_ITERATIONS) -> None:
        if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            raise ValueError(f"iterations must be within [{MIN_ITERATIONS}, {MAX_ITERATIONS}], got {iterations}")
        self.iterations = iterations

    def hash(self, password: str) -> HashedPassword:
        salt = secrets.token_bytes(SALT_BYTES)
        digest = _pbkdf2("sha512", password.encode("utf-8"), salt, self.iterations, 64)
        value = f"{_PREFIX}{self.iterations}:{_b64(salt)}:{_b64(digest)}"
        return HashedPassword(ALGORITHM, value)

    def verify(self, password: str, stored: HashedPassword, *, username: str = "") -> bool:
        """True when ``password`` matches; ``username`` is the salt of James's own formats."""
        if stored.value.startswith(_PREFIX):
            return _verify_ours(password, stored.value)
        return _verify_james(password, stored.value, stored.algorithm or "", username)

    def needs_rehash(self, stored: HashedPassword) -> bool:
        """True for James formats and for our format below the current iteration count."""
        parsed = _parse_ours(stored.value)
        return parsed is None or parsed[0] < self.iterations

    def burn(self, password: str) -> None:
        """Spend the time of one verification, so an unknown user answers as slowly as a known one."""
        _pbkdf2("sha512", password.encode("utf-8"), b"\0" * SALT_BYTES, self.iterations, 64)


def _pbkdf2(digest: str, password: bytes, salt: bytes, iterations: int, length: int) -> bytes:
    return hashlib.pbkdf2_hmac(digest, password, salt, iterations, dklen=length)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _parse_ours(value: str) -> tuple[int, bytes, bytes] | None:
    parts = value.split(":")
    if len(parts) != 4 or parts[0] != ALGORITHM:
        return None
    try:
        iterations = int(parts[1])
        salt = base64.b64decode(parts[2], validate=True)
        digest = base64.b64decode(parts[3], validate=True)
    except (ValueError, binascii.Error):
        return None
    if not 1 <= iterations <= MAX_ITERATIONS or not salt or not digest:
        return None
    return iterations, salt, digest


def _verify_ours(password: str, value: str) -> bool:
    parsed = _parse_ours(value)
    if parsed is None:
        return False
    iterations, salt, expected = parsed
    actual = _pbkdf2("sha512", password.encode("utf-8"), salt, iterations, len(expected))
    return hmac.compare_digest(actual, expected)


def _verify_james(password: str, value: str, algorithm: str, username: str) -> bool:
    name, _, mode = algorithm.strip().partition("/")
    mode = (mode or "plain").lower()
    if mode not in _JAMES_MODES:
        return False
    stored = "".join(value.split())   # MIME base64 carries CRLF every 76 characters
    if name.upper().startswith("PBKDF2"):
        digest = _james_pbkdf2(name, password, username)
    else:
        hash_name = _JAMES_DIGESTS.get(name.upper())
        if hash_name is None:
            return False
        salted = username + password if mode in ("salted", "legacy_salted") else password
        digest = hashlib.new(hash_name, salted.encode("latin-1", errors="replace")).digest()
    if digest is None:
        return False
    if mode.startswith("legacy"):
        candidates = [_b64(digest[: len(digest) // 3 * 3])]
    else:
        candidates = [_b64(digest), digest.hex()]
    # Compare every candidate (no early exit), each in constant time.
    results = [hmac.compare_digest(stored.encode("ascii", "replace"), c.encode("ascii")) for c in candidates]
    return any(results)


def _james_pbkdf2(name: str, password: str, username: str) -> bytes | None:
    """``PBKDF2-SHA512[-iterations[-keybits]]`` (HMAC-SHA512) or ``PBKDF2[-iterations[-keybits]]`` (SHA1)."""
    parts = name.upper().split("-")
    digest, params = ("sha512", parts[2:]) if name.upper().startswith("PBKDF2-SHA512") else ("sha1", parts[1:])
    try:
        iterations = int(params[0]) if params else 1000
        key_bits = int(params[1]) if len(params) > 1 else 512
    except ValueError:
        return None
    if not 1 <= iterations <= MAX_ITERATIONS or not 8 <= key_bits <= 4096:
        return None
    return _pbkdf2(digest, password.encode("utf-8"), username.encode("latin-1", errors="replace"),
                   iterations, key_bits // 8)
