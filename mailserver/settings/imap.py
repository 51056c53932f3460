"""The IMAP server: where it listens, its TLS, its limits and timers."""

from __future__ import annotations

from datetime import timedelta

from .base import EnvironmentSettings, setting
from .values import Bytes, Cap, Flag, Milliseconds, PositiveSeconds, Seconds, Whole


class ImapSettings(EnvironmentSettings):
    host: str = setting("MAILSERVER_IMAP_HOST", "127.0.0.1", "Address IMAP listens on.", "address")
    port: Whole = setting("MAILSERVER_IMAP_PORT", 1143, "Port IMAP listens on.", "integer")
    auth_require_tls: Flag = setting("MAILSERVER_IMAP_AUTH_REQUIRE_TLS", True, "LOGINDISABLED and no AUTH=PLAIN "
                                     "before STARTTLS.", "boolean")
    tls_cert: str | None = setting("MAILSERVER_IMAP_TLS_CERT", None, "PEM certificate for STARTTLS.", "path",
                                   shown_default="MAILSERVER_SMTP_TLS_CERT")
    tls_key: str | None = setting("MAILSERVER_IMAP_TLS_KEY", None, "PEM private key of that certificate.", "path",
                                  shown_default="MAILSERVER_SMTP_TLS_KEY")
    append_limit: Bytes | None = setting("MAILSERVER_IMAP_APPEND_LIMIT", None, "Largest APPEND literal.",
                                         "size (bare number: bytes)", shown_default="MAILSERVER_SMTP_MAX_MESSAGE_SIZE")
    max_connections: Whole = setting("MAILSERVER_IMAP_MAX_CONNECTIONS", 1000, "Concurrent sessions.", "integer")
    max_connections_per_ip: Cap = setting("MAILSERVER_IMAP_MAX_CONNECTIONS_PER_IP", 50, "Concurrent sessions "
                                          "from one client address.", "limit (0: none)")
    literal_limit_before_login: Bytes = setting("MAILSERVER_IMAP_LITERAL_LIMIT_BEFORE_LOGIN", 8 * 1024,
                                                "Largest literal before login.", "size (bare number: bytes)")
    idle_timeout: Seconds = setting("MAILSERVER_IMAP_IDLE_TIMEOUT_SECONDS", timedelta(minutes=30), "Autologout "
                                    "of a silent logged-in client.", "duration (bare number: seconds)")
    idle_timeout_before_login: PositiveSeconds = setting(
        "MAILSERVER_IMAP_IDLE_TIMEOUT_BEFORE_LOGIN_SECONDS", timedelta(seconds=60), "Autologout of a client that "
        "has not logged in.", "duration (bare number: seconds)")
    compress: Flag = setting("MAILSERVER_IMAP_COMPRESS", False, "Offer COMPRESS=DEFLATE (RFC 4978; James's "
                             "`compress`, off by default as there).", "boolean")
    idle_poll: Milliseconds = setting("MAILSERVER_IMAP_IDLE_POLL_MS", timedelta(seconds=2), "How often IDLE reads "
                                      "the watched mailbox's state while the event bus is down (degraded mode).",
                                      "duration (bare number: ms)")
