"""Who is calling, as James's JMAP authenticates: HTTP Basic against the users repository, or a
JWT bearer token (RS256, verified with the configured public key) whose ``sub`` is the user."""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

import jwt

from mailserver.model.address import InvalidAddress, Username
from mailserver.users.api import UsersRepository

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AuthenticationConfig:
    basic: bool = True
    jwt_public_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.basic and not self.jwt_public_key:
            raise ValueError("JMAP needs an authentication: Basic, a JWT public key, or both")


class Authenticator:
    def __init__(self, config: AuthenticationConfig, users: UsersRepository) -> None:
        self.config, self.users = config, users

    @property
    def challenge(self) -> str:
        """The ``WWW-Authenticate`` of a 401: the schemes this server accepts."""
        schemes = (['Basic realm="JMAP"'] if self.config.basic else []) + \
            (["Bearer realm=\"JMAP\""] if self.config.jwt_public_key else [])
        return ", ".join(schemes)

    @staticmethod
    def presented(headers: Mapping[str, str]) -> bool:
        """Credentials of some kind were sent (a failure then counts as a guess for the throttle)."""
        return bool((headers.get("authorization") or "").strip())

    @staticmethod
    def account_named(headers: Mapping[str, str]) -> str | None:
        """The account Basic credentials claim (the throttle counts failures per account too)."""
        scheme, _, credentials = (headers.get("authorization") or "").partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            return base64.b64decode(credentials.strip(), validate=True).decode().partition(":")[0] or None
        except (binascii.Error, UnicodeDecodeError):
            return None

    def authenticate(self, headers: Mapping[str, str]) -> Username | None:
        """The user the credentials prove, or None (absent, malformed or wrong: the same 401)."""
        scheme, _, credentials = (headers.get("authorization") or "").partition(" ")
        credentials = credentials.strip()
        if scheme.lower() == "basic" and self.config.basic:
            return self._basic(credentials)
        if scheme.lower() == "bearer" and self.config.jwt_public_key:
            return self._bearer(credentials)
        return None

    def _basic(self, credentials: str) -> Username | None:
        try:
            name, sep, password = base64.b64decode(credentials, validate=True).decode().partition(":")
            user = Username.of(name)
        except (binascii.Error, UnicodeDecodeError, InvalidAddress):
            return None
        if not sep or not self.users.verify(user, password):
            return None
        return user

    def _bearer(self, token: str) -> Username | None:
        key = self.config.jwt_public_key
        assert key is not None
        try:
            claims = jwt.decode(token, key, algorithms=["RS256"], options={"require": ["sub"], "verify_aud": False})
            user = Username.of(str(claims["sub"]))
        except (jwt.PyJWTError, InvalidAddress):
            return None
        # A token names a user; one removed since is refused, as James checks the user exists.
        return user if self.users.contains(user) else None
