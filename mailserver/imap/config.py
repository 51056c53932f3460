"""IMAP server configuration (James's ``imapserver.xml``, reduced to what this server honours).

Secure defaults: loopback bind, LOGIN and AUTHENTICATE refused before STARTTLS, RFC 3501's
30-minute autologout once logged in and one minute before, literals bounded (8 KiB before
login, 64 KiB after, the message size limit for APPEND), 1,000 sessions of which 50 per
client address.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from mailserver.model.james_units import KIB
from mailserver.serving.tls import server_tls_context
from mailserver.smtp.config import MAX_MESSAGE_SIZE


@dataclass(frozen=True)
class ImapConfig:
    host: str = "127.0.0.1"
    port: int = 1143
    auth_require_tls: bool = True            # LOGINDISABLED and no AUTH=PLAIN before STARTTLS
    tls_cert: Path | str | None = None
    tls_key: Path | str | None = None
    max_append_size: int = MAX_MESSAGE_SIZE          # APPEND literal (the SMTP max message size by default)
    max_literal_size: int = 64 * KIB        # any other literal
    max_line_length: int = 64 * KIB         # one command line (between literals)
    # Before login nobody is accountable for the connection: any literal (a LOGIN password) fits in 8 KiB.
    max_literal_size_before_login: int = 8 * KIB
    max_connections: int = 1000              # beyond: * BYE and close
    max_connections_per_ip: int | None = 50  # beyond: * BYE and close; None: no cap
    idle_timeout: float = 30 * 60.0          # RFC 3501 autologout timer: at least 30 minutes
    idle_timeout_before_login: float = 60.0  # a client that does not log in frees its place soon
    idle_poll_interval: float = 2.0          # IDLE while the bus is down: how often the mailbox's state is read
    io_threads: int = 16                     # pool for the blocking mailbox-manager calls
    max_auth_failures: int = 3               # then * BYE
    compress: bool = False                   # COMPRESS=DEFLATE (RFC 4978): James's <compress>, off by default
    software_name: str = "mailserver IMAP4rev1 Server"

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port {self.port} out of range")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("tls_cert and tls_key go together")
        for name in ("max_append_size", "max_literal_size", "max_literal_size_before_login", "max_connections",
                     "io_threads", "max_auth_failures"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.max_line_length < 1024:
            raise ValueError("max_line_length must be >= 1024 (RFC 7162 recommends 8192)")
        if self.max_connections_per_ip is not None and self.max_connections_per_ip < 1:
            raise ValueError("max_connections_per_ip must be >= 1 (None: no cap)")
        if self.idle_timeout <= 0 or self.idle_timeout_before_login <= 0 or self.idle_poll_interval <= 0:
            raise ValueError("idle_timeout, idle_timeout_before_login and idle_poll_interval must be > 0")

    def tls_context(self) -> ssl.SSLContext | None:
        return server_tls_context(self.tls_cert, self.tls_key)
