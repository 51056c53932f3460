"""The JMAP server: where it listens, its TLS, how it authenticates and the limits it announces."""

from __future__ import annotations

from typing import Annotated

from .base import EnvironmentSettings, setting
from .values import Flag, Positive, Whole, size

SIZE = "size (bare number: bytes)"


class JmapSettings(EnvironmentSettings):
    host: str = setting("MAILSERVER_JMAP_HOST", "127.0.0.1", "Address JMAP listens on.", "address")
    port: Whole = setting("MAILSERVER_JMAP_PORT", 8001, "Port JMAP listens on.", "integer")
    url_prefix: str | None = setting("MAILSERVER_JMAP_URL_PREFIX", None, "Base URL clients reach JMAP at, used "
                                     "in the session's apiUrl, downloadUrl and uploadUrl (James's url.prefix).",
                                     "URL", shown_default="http(s)://host:port")
    tls_cert: str | None = setting("MAILSERVER_JMAP_TLS_CERT", None, "PEM certificate: JMAP is served over HTTPS.",
                                   "path")
    tls_key: str | None = setting("MAILSERVER_JMAP_TLS_KEY", None, "PEM private key of that certificate.", "path")
    basic_auth_require_tls: Flag = setting("MAILSERVER_JMAP_BASIC_AUTH_REQUIRE_TLS", True, "Refuse to start with "
                                           "Basic authentication over plain HTTP on an address other than "
                                           "loopback (a TLS proxy in front must then be said so by `false`).",
                                           "boolean")
    basic_auth: Flag = setting("MAILSERVER_JMAP_BASIC_AUTH", True, "Accept HTTP Basic credentials checked "
                               "against the users repository.", "boolean")
    jwt_public_key: str | None = setting("MAILSERVER_JMAP_JWT_PUBLIC_KEY", None, "RS256 public key (PEM text or a "
                                         "file): accept JWT bearer tokens whose `sub` is the user.", "PEM or path")
    max_size_request: Annotated[int, size(1)] = setting("MAILSERVER_JMAP_MAX_SIZE_REQUEST", 10 * 1024 * 1024,
                                                        "Largest API request body (core maxSizeRequest).", SIZE)
    max_calls_in_request: Positive = setting("MAILSERVER_JMAP_MAX_CALLS_IN_REQUEST", 16, "Method calls in one "
                                             "request (core maxCallsInRequest).", "integer")
    max_objects_in_get: Positive = setting("MAILSERVER_JMAP_MAX_OBJECTS_IN_GET", 500, "Ids in one /get call "
                                           "(core maxObjectsInGet).", "integer")
    max_objects_in_set: Positive = setting("MAILSERVER_JMAP_MAX_OBJECTS_IN_SET", 500, "Creates, updates and "
                                           "destroys in one /set call (core maxObjectsInSet).", "integer")
    max_concurrent_requests: Positive = setting("MAILSERVER_JMAP_MAX_CONCURRENT_REQUESTS", 4, "API requests of "
                                                "one user running at once (core maxConcurrentRequests).", "integer")
