"""A password hasher that costs nothing: the conformance run logs in some 150 times, and PBKDF2 at
its production cost (about 0.3 s per hash or check) would take most of the module's time."""

from __future__ import annotations

import hashlib
import hmac

from mailserver.model.passwords import HashedPassword, PasswordHasher


class CheapHasher(PasswordHasher):
    def hash(self, password: str, *, username: str = "") -> HashedPassword:
        return HashedPassword("test-sha256", hashlib.sha256(password.encode("utf-8")).hexdigest())

    def verify(self, password: str, stored: HashedPassword, *, username: str = "") -> bool:
        return hmac.compare_digest(self.hash(password, username=username).value, stored.value)

    def needs_rehash(self, stored: HashedPassword) -> bool:
        return False

    def burn(self, password: str) -> None:
        return None
