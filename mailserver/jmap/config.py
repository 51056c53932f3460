"""JMAP's configuration from the environment (``MAILSERVER_JMAP_*``, docs/configuration.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mailserver.jmap.authentication import AuthenticationConfig
from mailserver.jmap.capabilities import CoreLimits
from mailserver.settings import JmapSettings, SettingsError

LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


@dataclass(frozen=True)
class JmapConfig:
    host: str = "127.0.0.1"
    port: int = 8001
    auth: AuthenticationConfig = field(default_factory=AuthenticationConfig)
    limits: CoreLimits = field(default_factory=CoreLimits)
    base_url: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None and self.tls_key is not None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> JmapConfig:
        s = JmapSettings.from_env(env)
        if (s.tls_cert is None) != (s.tls_key is None):
            raise SettingsError("MAILSERVER_JMAP_TLS_CERT and MAILSERVER_JMAP_TLS_KEY go together")
        if s.basic_auth and s.basic_auth_require_tls and s.tls_cert is None and s.host not in LOOPBACK:
            # Passwords in clear on a network: as IMAP refuses LOGIN before STARTTLS.
            raise SettingsError(f"MAILSERVER_JMAP_BASIC_AUTH_REQUIRE_TLS: JMAP listens on {s.host} without TLS; set "
                                "MAILSERVER_JMAP_TLS_CERT and MAILSERVER_JMAP_TLS_KEY, or say a TLS proxy is in "
                                "front with MAILSERVER_JMAP_BASIC_AUTH_REQUIRE_TLS=false")
        key = s.jwt_public_key
        if key is not None and "-----BEGIN" not in key:
            key = Path(key).read_text()
        try:
            auth = AuthenticationConfig(basic=s.basic_auth, jwt_public_key=key)
        except ValueError as exc:
            raise SettingsError(f"MAILSERVER_JMAP_BASIC_AUTH: {exc}") from None
        limits = CoreLimits(max_size_request=s.max_size_request, max_calls_in_request=s.max_calls_in_request,
                            max_objects_in_get=s.max_objects_in_get, max_objects_in_set=s.max_objects_in_set,
                            max_concurrent_requests=s.max_concurrent_requests)
        return cls(s.host, s.port, auth, limits, s.url_prefix.rstrip("/") if s.url_prefix else None,
                   s.tls_cert, s.tls_key)
