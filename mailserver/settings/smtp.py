"""The SMTP server: where it listens, what it accepts, and Postfix's limits."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from .base import EnvironmentSettings, setting
from .values import Bytes, Cap, CommaList, Flag, Milliseconds, NonNegative, Whole, whole

MIB = 1024 * 1024
LIMIT = "limit (0: none)"


class SmtpSettings(EnvironmentSettings):
    host: str = setting("MAILSERVER_SMTP_HOST", "127.0.0.1", "Address SMTP listens on.", "address")
    port: Whole = setting("MAILSERVER_SMTP_PORT", 2525, "Port SMTP listens on.", "integer")
    hostname: str = setting("MAILSERVER_HOSTNAME", "localhost", "Name announced in the greeting, EHLO and "
                            "Received headers.", "text")
    max_message_size: Bytes = setting("MAILSERVER_SMTP_MAX_MESSAGE_SIZE", 25 * MIB, "Largest message accepted "
                                      "(advertised as SIZE; 0: no limit).", "size (bare number: bytes)")
    auth_require_tls: Flag = setting("MAILSERVER_SMTP_AUTH_REQUIRE_TLS", True, "AUTH offered only after STARTTLS.",
                                     "boolean")
    auth_required: Flag = setting("MAILSERVER_SMTP_AUTH_REQUIRED", True, "Relaying needs AUTH (or an authorized "
                                  "network).", "boolean")
    validate_recipients: Flag = setting("MAILSERVER_SMTP_VALIDATE_RECIPIENTS", True, "Refuse local recipients "
                                        "that do not exist at RCPT.", "boolean")
    authorized_networks: CommaList = setting("MAILSERVER_SMTP_AUTHORIZED_NETWORKS", (), "Networks that relay "
                                             "without AUTH (James's authorizedAddresses).", "comma list of networks")
    tls_cert: str | None = setting("MAILSERVER_SMTP_TLS_CERT", None, "PEM certificate for STARTTLS (unset: no "
                                   "STARTTLS).", "path")
    tls_key: str | None = setting("MAILSERVER_SMTP_TLS_KEY", None, "PEM private key of that certificate.", "path")
    require_starttls: Flag = setting("MAILSERVER_SMTP_REQUIRE_STARTTLS", False, "Refuse MAIL before STARTTLS.",
                                     "boolean")
    spool_limit: Whole | None = setting("MAILSERVER_SMTP_SPOOL_LIMIT", None, "Back-pressure: 452 4.3.1 above this "
                                        "many mails in the spool (unset: none).", "integer")
    max_connections: Cap = setting("MAILSERVER_SMTP_MAX_CONNECTIONS", 500, "Concurrent sessions.", LIMIT)
    max_connections_per_ip: Cap = setting("MAILSERVER_SMTP_MAX_CONNECTIONS_PER_IP", 20, "Concurrent sessions "
                                          "from one client address.", LIMIT)
    max_recipients: Cap = setting("MAILSERVER_SMTP_MAX_RECIPIENTS", 1000, "Recipients of one message "
                                  "(Postfix's smtpd_recipient_limit).", LIMIT)
    recipient_overshoot_limit: NonNegative = setting(
        "MAILSERVER_SMTP_RECIPIENT_OVERSHOOT_LIMIT", 1000, "Recipients refused past the limit before the session "
        "counts errors (Postfix's smtpd_recipient_overshoot_limit).", "integer")
    soft_error_limit: Cap = setting("MAILSERVER_SMTP_SOFT_ERROR_LIMIT", 10, "Errors before replies are slowed "
                                    "(Postfix's smtpd_soft_error_limit).", LIMIT)
    hard_error_limit: Cap = setting("MAILSERVER_SMTP_HARD_ERROR_LIMIT", 20, "Errors before the session is closed "
                                    "(Postfix's smtpd_hard_error_limit).", LIMIT)
    error_sleep: Milliseconds = setting("MAILSERVER_SMTP_ERROR_SLEEP_MS", timedelta(seconds=1), "Delay of each "
                                        "reply past the soft limit (Postfix's smtpd_error_sleep_time).",
                                        "duration (bare number: ms)")
    max_line_length: Annotated[int, whole(998)] = setting(
        "MAILSERVER_SMTP_MAX_LINE_LENGTH", 8192, "Longest DATA line, 998 at least (James's limit).", "integer")
