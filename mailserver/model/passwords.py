"""Password hashing in James's own scheme and format, so either kind of node logs in either's users.

James (``DefaultUser``, ``Algorithm``, ``CassandraUsersDAO``) keeps two columns::

    user.algorithm = Algorithm.asString() = "<name>/<mode>"    e.g. "PBKDF2-SHA512/plain"
    user.passwd    = Algorithm.digest(password, salt=username)

and verifies by recomputing the digest with the row's algorithm and comparing the strings. The
digest is the MIME base64 of (``encodeInBase64``): lines of 76 characters each ended by CRLF, the
last one too (the encoder stream is closed), or, in the ``legacy`` modes, only the complete
3-byte groups and no closing CRLF (the stream was never closed). The hashers:

* ``PBKDF2-SHA512[-<iterations>[-<key bits>]]``: PBKDF2-HMAC-SHA512 (1000 iterations, 512 bits
  by default), password as UTF-8 (``PBEKeySpec``), salt the username in ISO-8859-1;
* ``PBKDF2[-<iterations>[-<key bits>]]``: the same with HMAC-SHA1 (``LegacyPBKDF2Hasher``);
* any other name: that ``MessageDigest`` over ISO-8859-1 (unmappable characters become ``?``),
  of ``username + password`` in the ``salted`` modes, of the password otherwise.

The mode defaults to ``plain`` when the column has no ``/`` (James's ``hashingMode``).

We write the algorithm the settings name (James's ``algorithm`` of ``usersrepository.xml``),
``PBKDF2-SHA512-210000`` by default: James's format and hasher, with OWASP's iteration count
for PBKDF2-HMAC-SHA512 instead of James's default 1000 (James reads the count from the row).
``needs_rehash`` is True for a row in another algorithm, and for the self-describing format this
server wrote before (``PBKDF2-SHA512:<iterations>:<salt>:<hash>``, random salt), which James
cannot read: the port rewrites such rows at the next successful login.

Verification also accepts the stored value without its line breaks and a hex digest of the same
bytes (how hand-made migration scripts store ``SHA-512``). Comparisons are constant-time.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from dataclasses import dataclass

DEFAULT_ALGORITHM = "PBKDF2-SHA512-210000"   # OWASP Password Storage Cheat Sheet, PBKDF2-HMAC-SHA512
MAX_ITERATIONS = 10_000_000        # a corrupt row must not pin a CPU for minutes
MAX_KEY_BITS = 4096
_OLD_PREFIX = "PBKDF2-SHA512:"    # this server's format before James's

# Java MessageDigest names (case-insensitive in Java) -> hashlib names.
_DIGESTS = {"SHA-512": "sha512", "SHA-384": "sha384", "SHA-256": "sha256", "SHA-224": "sha224",
            "SHA-1": "sha1", "SHA1": "sha1", "SHA": "sha1", "MD5": "md5"}
_MODES = ("plain", "salted", "legacy", "legacy_salted")


class UnknownAlgorithm(ValueError):
    pass


@dataclass(frozen=True)
class HashedPassword:
    """The two columns James keeps for a password."""

    algorithm: str   # user.algorithm
    value: str       # user.passwd

    def __repr__(self) -> str:  # keep hashes out of logs and tracebacks
        return f"HashedPassword(algorithm={self.algorithm!r}, value=<redacted>)"


@dataclass(frozen=True)
class Algorithm:
    """James's ``Algorithm``: a hasher name and a hashing mode."""

    name: str
    mode: str = "plain"

    @classmethod
    def of(cls, column: str, fallback_mode: str = "plain") -> Algorithm:
        """``Algorithm.of``: ``name/mode``, or the name alone with the fallback mode."""
        name, slash, mode = column.strip().partition("/")
        mode = (mode if slash else fallback_mode).lower()
        if mode not in _MODES:
            raise UnknownAlgorithm(f"unsupported hashing mode {mode!r}, should be one of {_MODES}")
        algorithm = cls(name, mode)
        algorithm._hasher()   # refuses unknown names and malformed PBKDF2 parameters
        return algorithm

    def as_string(self) -> str:
        return f"{self.name}/{self.mode}"

    @property
    def legacy(self) -> bool:
        return self.mode.startswith("legacy")

    def digest(self, password: str, salt: str) -> str:
        """``Algorithm.digest``: the exact string James stores and compares."""
        return _mime_base64(self._digest(password, salt), closed=not self.legacy)

    def _hasher(self) -> tuple[str, int, int]:
        """(hashlib name, PBKDF2 iterations, PBKDF2 key bits); 0 iterations: a plain digest."""
        if self.name.startswith("PBKDF2-SHA512"):      # PBKDF2Hasher, case-sensitive as in James
            return ("sha512", *_pbkdf2_params(self.name.split("-")[2:]))
        if self.name.startswith("PBKDF2"):             # LegacyPBKDF2Hasher
            return ("sha1", *_pbkdf2_params(self.name.split("-")[1:]))
        hash_name = _DIGESTS.get(self.name.upper())
        if hash_name is None:
            raise UnknownAlgorithm(f"unsupported password algorithm {self.name!r}")
        return hash_name, 0, 0

    def _digest(self, password: str, salt: str) -> bytes:
        hash_name, iterations, key_bits = self._hasher()
        if iterations:   # PBEKeySpec: the password as UTF-8, the salt as ISO-8859-1
            return hashlib.pbkdf2_hmac(hash_name, password.encode("utf-8"),
                                       salt.encode("latin-1", errors="replace"), iterations, dklen=key_bits // 8)
        text = salt + password if self.mode in ("salted", "legacy_salted") else password
        return hashlib.new(hash_name, text.encode("latin-1", errors="replace")).digest()


def _pbkdf2_params(params: list[str]) -> tuple[int, int]:
    try:
        iterations = int(params[0]) if params else 1000
        key_bits = int(params[1]) if len(params) > 1 else 512
    except ValueError:
        raise UnknownAlgorithm(f"malformed PBKDF2 parameters {params}") from None
    if not 0 < iterations <= MAX_ITERATIONS or not 0 < key_bits <= MAX_KEY_BITS or key_bits % 8:
        raise UnknownAlgorithm(f"PBKDF2 parameters out of range: {iterations} iterations, {key_bits} bits")
    return iterations, key_bits


def _mime_base64(raw: bytes, *, closed: bool) -> str:
    """Jakarta Mail's ``BASE64EncoderStream``: CRLF after every 76 characters; an unclosed stream
    (James's legacy modes) has written only the complete 3-byte groups."""
    if not closed:
        raw = raw[: len(raw) // 3 * 3]
    encoded = base64.b64encode(raw).decode("ascii")
    lines = [encoded[i:i + 76] for i in range(0, len(encoded), 76)]
    if closed:
        return "".join(line + "\r\n" for line in lines)
    full = [line + "\r\n" for line in lines if len(line) == 76]
    partial = [line for line in lines if len(line) < 76]
    return "".join(full + partial)


class PasswordHasher:
    def __init__(self, algorithm: str = DEFAULT_ALGORITHM) -> None:
        self.algorithm = Algorithm.of(algorithm)

    def hash(self, password: str, *, username: str) -> HashedPassword:
        """James's ``DefaultUser.setPassword``: the username is the salt."""
        return HashedPassword(self.algorithm.as_string(), self.algorithm.digest(password, username))

    def verify(self, password: str, stored: HashedPassword, *, username: str) -> bool:
        if stored.value.startswith(_OLD_PREFIX):
            return _verify_old(password, stored.value)
        try:
            algorithm = Algorithm.of(stored.algorithm or "")
            digest = algorithm._digest(password, username)
        except UnknownAlgorithm:
            return False
        # Line breaks are not part of the digest: compare without them (James's exact string included).
        candidates = ["".join(_mime_base64(digest, closed=not algorithm.legacy).split())]
        if not algorithm.legacy:
            candidates.append(digest.hex())
        value = "".join(stored.value.split()).encode("utf-8")
        # Compare every candidate (no early exit), each in constant time.
        return any([hmac.compare_digest(value, c.encode("ascii")) for c in candidates])

    def needs_rehash(self, stored: HashedPassword) -> bool:
        """True when the row is not in the configured algorithm (or in this server's old format)."""
        return stored.value.startswith(_OLD_PREFIX) or stored.algorithm != self.algorithm.as_string()

    def burn(self, password: str) -> None:
        """Spend the time of one verification, so an unknown user answers as slowly as a known one."""
        self.algorithm.digest(password, "")


def _verify_old(password: str, value: str) -> bool:
    """``PBKDF2-SHA512:<iterations>:<salt base64>:<hash base64>`` (random salt, HMAC-SHA512)."""
    parts = value.split(":")
    if len(parts) != 4:
        return False
    try:
        iterations = int(parts[1])
        salt = base64.b64decode(parts[2], validate=True)
        expected = base64.b64decode(parts[3], validate=True)
    except (ValueError, binascii.Error):
        return False
    if not 1 <= iterations <= MAX_ITERATIONS or not salt or not expected:
        return False
    actual = hashlib.pbkdf2_hmac("sha512", password.encode("utf-8"), salt, iterations, dklen=len(expected))
    return hmac.compare_digest(actual, expected)
