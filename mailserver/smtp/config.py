"""SMTP intake configuration (James's ``smtpserver.xml``, reduced to what this server honours).

Secure defaults: no authorized network unless configured (an open relay is never the
default), AUTH only offered over TLS, messages up to 25 MiB, at most 500 sessions (20 per
client address), 1,000 recipients a message, Postfix's error limits (slow after 10 errors,
disconnect at 20), DATA lines of up to 8,192 octets (James).
"""

from __future__ import annotations

import ipaddress
import ssl
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mailserver.model.james_units import MIB
from mailserver.serving.tls import server_tls_context

MAX_MESSAGE_SIZE = 25 * MIB   # also the IMAP APPEND limit unless configured
MIN_LINE_LENGTH = 998   # RFC 5321 4.5.3.1.6: 1000 octets with the CRLF
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(networks: Iterable[str]) -> tuple[IpNetwork, ...]:
    """``["127.0.0.0/8", "10.1.2.3"]`` -> networks; raises ValueError on a malformed entry."""
    out: list[IpNetwork] = []
    for raw in networks:
        text = raw.strip()
        if not text:
            continue
        try:
            out.append(ipaddress.ip_network(text, strict=False))
        except ValueError as exc:
            raise ValueError(f"authorized network {raw!r} is not an address or a CIDR block") from exc
    return tuple(out)


@dataclass(frozen=True)
class SmtpConfig:
    host: str = "127.0.0.1"
    port: int = 2525
    hostname: str = "localhost"             # announced in the greeting, EHLO and Received headers
    software_name: str = "JAMES SMTP Server"  # James's default, kept for Received-header parsers
    max_message_size: int = MAX_MESSAGE_SIZE        # advertised as SIZE; 0 disables the limit
    auth_require_tls: bool = True           # AUTH offered only after STARTTLS
    # James ``authRequired``: refuse RCPT to a non-local domain unless authenticated or in an
    # authorized network. False leaves the decision to the mailet container (relay-denied).
    auth_required: bool = True
    authorized_networks: Sequence[str] = field(default_factory=tuple)  # relay without AUTH (James authorizedAddresses)
    # James's ValidRcptHandler: 550 5.1.1 at RCPT for a local recipient that is no account nor mapping
    validate_recipients: bool = True
    tls_cert: Path | str | None = None
    tls_key: Path | str | None = None
    require_starttls: bool = False          # refuse MAIL before STARTTLS (needs a certificate)
    spool_size_limit: int | None = None     # back-pressure: 452 4.3.1 above this many mails in the spool
    max_connections: int | None = 500       # 421 4.7.0 beyond this many concurrent sessions; None: no cap
    max_connections_per_ip: int | None = 20  # 421 4.7.0 beyond this many from one address; None: no cap
    timeout: float = 300.0                  # idle seconds before the session is dropped
    io_threads: int = 16                    # pool for blocking calls (enqueue, blob store, DomainList, hashing)
    strict_crlf: bool = True                # refuse a bare CR/LF in DATA (James 3.7.5+) and bare-LF command lines
    forbid_unauth_pipelining: bool = True   # input sent with DATA or after its end, before our reply: refuse, close
    data_memory: int = 256 * 1024           # DATA content kept in memory per session; the rest spills to a temp file
    # Postfix's smtpd_recipient_limit: RCPTs beyond it get 452 4.5.3 (the accepted ones keep the mail);
    # None: no limit. Over-limit RCPTs are not client errors until smtpd_recipient_overshoot_limit more.
    max_recipients: int | None = 1000
    recipient_overshoot_limit: int = 1000
    # Postfix's smtpd_soft_error_limit / smtpd_hard_error_limit / smtpd_error_sleep_time: a session that
    # made ``soft_error_limit`` errors (4xx/5xx replies) since its last accepted mail gets every reply
    # ``error_sleep_time`` seconds late; at ``hard_error_limit`` it gets 421 4.7.0 and is closed. None: off.
    soft_error_limit: int | None = 10
    hard_error_limit: int | None = 20
    error_sleep_time: float = 1.0
    # James's line limit: DATA lines of up to this many octets before the CRLF (RFC 5321 asks at least 998)
    max_line_length: int = 8192

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port {self.port} out of range")
        if self.max_message_size < 0:
            raise ValueError("max_message_size must be >= 0 (0 = unlimited)")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("tls_cert and tls_key go together")
        if self.require_starttls and self.tls_cert is None:
            raise ValueError("require_starttls needs tls_cert and tls_key")
        if self.spool_size_limit is not None and self.spool_size_limit < 0:
            raise ValueError("spool_size_limit must be >= 0")
        if self.max_connections is not None and self.max_connections < 1:
            raise ValueError("max_connections must be >= 1 (None: no cap)")
        if self.max_connections_per_ip is not None and self.max_connections_per_ip < 1:
            raise ValueError("max_connections_per_ip must be >= 1 (None: no cap)")
        if self.data_memory < 0:
            raise ValueError("data_memory must be >= 0")
        if self.io_threads < 1:
            raise ValueError("io_threads must be >= 1")
        for name in ("max_recipients", "soft_error_limit", "hard_error_limit"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1 (None: no limit)")
        if self.recipient_overshoot_limit < 0:
            raise ValueError("recipient_overshoot_limit must be >= 0")
        if self.error_sleep_time < 0:
            raise ValueError("error_sleep_time must be >= 0")
        if self.max_line_length < MIN_LINE_LENGTH:
            raise ValueError(f"max_line_length must be >= {MIN_LINE_LENGTH} (RFC 5321 4.5.3.1.6)")
        object.__setattr__(self, "authorized_networks", tuple(self.authorized_networks))
        parse_networks(self.authorized_networks)  # fail at start, not at the first RCPT

    @property
    def networks(self) -> tuple[IpNetwork, ...]:
        return parse_networks(self.authorized_networks)

    def tls_context(self) -> ssl.SSLContext | None:
        return server_tls_context(self.tls_cert, self.tls_key)


def in_networks(address: str | None, networks: Sequence[IpNetwork]) -> bool:
    if not address or not networks:
        return False
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip.version == net.version and ip in net for net in networks)
