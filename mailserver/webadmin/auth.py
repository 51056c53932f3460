"""WebAdmin authentication, James's two modes (webadmin reference §1.2).

* JWT: ``Authorization: Bearer <jwt>``, RS256 verified with the configured PEM public key, the
  token must carry ``admin: true``; ``sub`` names the admin in logs and ``updatedBy`` fields.
* Passwords: ``Password: <secret>`` (or ``Authorization: Bearer <secret>`` when that header is
  absent), three lists: full access, no-delete (every method but DELETE), read-only (GET and
  HEAD only).

Failures answer plain-text 401/403 bodies worded as James's code (``JwtFilter``, ``PasswordFilter``):
JWT refusals are all 401 (``No Bearer header.``, ``Invalid Bearer header.``, ``Non authorized
user.`` for a token without ``admin: true``); passwords answer 401 (``No Password in header.``,
``Wrong password.``) or 403 (``Insufficient permissions for this operation.``); 429 with
``Retry-After`` once the client's address is throttled (``auth_throttling``). Health checks,
``/metrics`` and the API description stay public, as do CORS preflights.

Secure default (where we differ from James): with neither mode configured the server refuses
to start unless authentication is explicitly disabled — James's historical default of an open
admin API on a forgotten configuration is how admin APIs get taken over.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import jwt

from mailserver.settings import WebAdminSettings

PUBLIC_PREFIXES = ("/healthcheck", "/docs/assets")   # the browser fetches /docs's assets without credentials
PUBLIC_PATHS = frozenset({"/metrics", "/openapi.json", "/docs", "/docs/oauth2-redirect"})
READ_METHODS = frozenset({"GET", "HEAD"})
INVALID_BEARER = "Invalid Bearer header."
WRONG_PASSWORD = "Wrong password."  # noqa: S105 - a reply, not a secret


class AuthMode(Enum):
    JWT = "jwt"
    PASSWORD = "password"  # noqa: S105 - a mode name, not a secret
    NONE = "none"


class AuthConfigError(ValueError):
    """The configuration would start an API nobody can use, or anybody can."""


@dataclass(frozen=True)
class AuthConfig:
    mode: AuthMode
    jwt_public_key: str | None = field(default=None, repr=False)
    passwords: tuple[str, ...] = field(default=(), repr=False)
    nodelete_passwords: tuple[str, ...] = field(default=(), repr=False)
    readonly_passwords: tuple[str, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        if self.mode is AuthMode.JWT and not self.jwt_public_key:
            raise AuthConfigError("JWT authentication needs a PEM public key")
        if self.mode is AuthMode.PASSWORD and not (self.passwords or self.nodelete_passwords
                                                   or self.readonly_passwords):
            raise AuthConfigError("password authentication needs at least one password")
        if any(not p for p in (*self.passwords, *self.nodelete_passwords, *self.readonly_passwords)):
            raise AuthConfigError("empty passwords are not allowed")

    @classmethod
    def jwt(cls, public_key_pem: str) -> AuthConfig:
        return cls(AuthMode.JWT, jwt_public_key=public_key_pem)

    @classmethod
    def password(cls, full: Sequence[str] = (), nodelete: Sequence[str] = (),
                 readonly: Sequence[str] = ()) -> AuthConfig:
        return cls(AuthMode.PASSWORD, passwords=tuple(full), nodelete_passwords=tuple(nodelete),
                   readonly_passwords=tuple(readonly))

    @classmethod
    def disabled(cls) -> AuthConfig:
        return cls(AuthMode.NONE)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AuthConfig:
        """``MAILSERVER_WEBADMIN_JWT_PUBLIC_KEY`` (PEM text or a file path) selects JWT; else the
        comma-separated ``MAILSERVER_WEBADMIN_PASSWORD[_NODELETE|_READONLY]`` select passwords;
        else ``MAILSERVER_WEBADMIN_AUTH=disabled`` is required to run unauthenticated."""
        s = WebAdminSettings.from_env(env)
        if s.jwt_public_key:
            key = s.jwt_public_key
            if "-----BEGIN" not in key:
                key = Path(key).read_text()
            return cls.jwt(key)
        lists = [s.passwords, s.nodelete_passwords, s.readonly_passwords]
        if any(lists):
            return cls.password(*lists)
        if (s.auth or "").lower() == "disabled":
            return cls.disabled()
        raise AuthConfigError("WebAdmin has no authentication configured: set MAILSERVER_WEBADMIN_JWT_PUBLIC_KEY "
                              "or MAILSERVER_WEBADMIN_PASSWORD (…_NODELETE, …_READONLY), or explicitly "
                              "MAILSERVER_WEBADMIN_AUTH=disabled")


@dataclass(frozen=True)
class Decision:
    """``principal`` when allowed; otherwise the status and plain-text body to answer."""

    principal: str | None = None
    status: int = 200
    body: str = ""
    retry_after: int | None = None   # seconds, when refused for too many failures

    @property
    def allowed(self) -> bool:
        return self.status == 200

    @property
    def wrong_credentials(self) -> bool:
        """Credentials were given and are wrong: a guess, for the authentication throttle."""
        return self.status == 401 and self.body in (INVALID_BEARER, WRONG_PASSWORD)

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)} if self.retry_after is not None else {}


def is_public(method: str, path: str) -> bool:
    if method == "OPTIONS":   # CORS preflight bypasses authentication (James)
        return True
    return path in PUBLIC_PATHS or any(path == p or path.startswith(p + "/") for p in PUBLIC_PREFIXES)


class Authenticator:
    def __init__(self, config: AuthConfig) -> None:
        self.config = config

    def authorize(self, method: str, headers: Mapping[str, str]) -> Decision:
        mode = self.config.mode
        if mode is AuthMode.NONE:
            return Decision(principal=None)
        if mode is AuthMode.JWT:
            return self._jwt(headers)
        return self._password(method, headers)

    def _jwt(self, headers: Mapping[str, str]) -> Decision:
        token = _bearer(headers.get("authorization"))
        if token is None:
            return Decision(status=401, body="No Bearer header.")
        key = self.config.jwt_public_key
        assert key is not None   # AuthConfig refuses JWT mode without a key
        try:
            claims = jwt.decode(token, key, algorithms=["RS256"],
                                options={"require": ["sub"], "verify_aud": False})
        except jwt.PyJWTError:   # bad signature, expired, malformed: James's JwtFilter wording
            return Decision(status=401, body=INVALID_BEARER)
        if claims.get("admin") is not True:
            return Decision(status=401, body="Non authorized user.")
        return Decision(principal=str(claims["sub"]))

    def _password(self, method: str, headers: Mapping[str, str]) -> Decision:
        secret = headers.get("password")
        if secret is None:
            secret = _bearer(headers.get("authorization"))
        if not secret:
            return Decision(status=401, body="No Password in header.")
        c = self.config
        # Compare against every configured secret (constant time each) so timing does not tell which list matched.
        full, nodelete, readonly = (_matches(secret, lst) for lst in (c.passwords, c.nodelete_passwords,
                                                                      c.readonly_passwords))
        if full:
            return Decision(principal="admin")
        if nodelete:
            if method == "DELETE":
                return Decision(status=403, body="Insufficient permissions for this operation.")
            return Decision(principal="admin-nodelete")
        if readonly:
            if method not in READ_METHODS:
                return Decision(status=403, body="Insufficient permissions for this operation.")
            return Decision(principal="admin-readonly")
        return Decision(status=401, body=WRONG_PASSWORD)


def _matches(secret: str, candidates: Sequence[str]) -> bool:
    found = False
    for candidate in candidates:
        found |= hmac.compare_digest(secret.encode(), candidate.encode())
    return found


def _bearer(value: str | None) -> str | None:
    if not value:
        return None
    scheme, _, token = value.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None
