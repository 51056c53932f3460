"""``mailserver serve`` settings, read from the environment (secrets never on the command line).

Backends use the shared names (``CASSANDRA_*``, ``S3_*``, ``AMQP_URL``,
``RABBITMQ_MANAGEMENT_URL``, ``OPENSEARCH_URL``); the server's own settings are
``MAILSERVER_*``. Defaults are the secure ones: loopback binds, no authorized network (no open
relay), AUTH only after STARTTLS.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mailserver.blob.config import BlobStoreConfig
from mailserver.delivery.resolver import MxHost
from mailserver.events.retry import RetryPolicy
from mailserver.imap.config import ImapConfig
from mailserver.mailets.config import DEFAULT_FILE
from mailserver.model.james_units import InvalidSize, parse_size
from mailserver.queue.api import SPOOL
from mailserver.search.config import SearchConfig
from mailserver.security.throttle_config import AuthThrottleConfig
from mailserver.serving.server_thread import DEFAULT_EVENT_LOOP, EVENT_LOOPS
from mailserver.smtp.config import MAX_MESSAGE_SIZE, MIN_LINE_LENGTH, SmtpConfig
from mailserver.vault.config import VaultConfiguration

ROLES = ("smtp", "spooler", "outgoing", "webadmin", "tasks", "listeners", "imap")
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


class SettingsError(ValueError):
    """A setting is malformed: the server refuses to start and names the variable."""


def parse_roles(spec: str) -> tuple[str, ...]:
    roles = tuple(dict.fromkeys(r.strip().lower() for r in spec.split(",") if r.strip()))
    unknown = [r for r in roles if r not in ROLES]
    if unknown or not roles:
        raise SettingsError(f"roles must be a comma list of {', '.join(ROLES)}; got {spec!r}")
    return roles


def parse_mx_table(spec: str) -> dict[str, list[MxHost]]:
    """``example.com=127.0.0.1:2526;*=relay.local:25`` (``,`` between several hosts of a domain).

    Hosts of one domain get preferences 10, 20, ... in the order given.
    """
    table: dict[str, list[MxHost]] = {}
    for entry in filter(None, (e.strip() for e in spec.split(";"))):
        domain, sep, hosts = entry.partition("=")
        addresses = [h.strip() for h in hosts.split(",") if h.strip()]
        if not sep or not domain.strip() or not addresses:
            raise SettingsError(f"MAILSERVER_MX_STATIC: {entry!r} is not domain=host[:port][,host[:port]...]")
        table[domain.strip().lower()] = [MxHost(a.rsplit(":", 1)[0], 10 * (i + 1), a) for i, a in enumerate(addresses)]
    return table


def parse_queue_limits(spec: str) -> dict[str, int]:
    """``outgoing=5000,other=100`` -> limits of the ``MailQueueSize`` health check.

    The spool is not named here: its limit is SMTP's back-pressure threshold,
    ``MAILSERVER_SMTP_SPOOL_LIMIT``, so the check and the 452 replies agree.
    """
    limits: dict[str, int] = {}
    for entry in filter(None, (e.strip() for e in spec.split(","))):
        name, sep, value = (part.strip() for part in entry.partition("="))
        if not sep or not name or not value.isdigit():
            raise SettingsError(f"MAILSERVER_QUEUE_SIZE_LIMITS: {entry!r} is not queue=count")
        if name == SPOOL:
            raise SettingsError("MAILSERVER_QUEUE_SIZE_LIMITS: the spool's limit is MAILSERVER_SMTP_SPOOL_LIMIT")
        limits[name] = int(value)
    return limits


def parse_groups(spec: str | None) -> tuple[str, ...] | None:
    """``MAILSERVER_LISTENER_GROUPS``: the listener groups this node runs (unset: all of them)."""
    if spec is None:
        return None
    return tuple(dict.fromkeys(g.strip() for g in spec.split(",") if g.strip()))


def event_retry_policy(read: _Reader) -> RetryPolicy:
    """James's defaults (8 retries, 100 ms first backoff, jitter factor 0.5), each overridable."""
    jitter = read.optional("MAILSERVER_EVENT_RETRY_JITTER_FACTOR")
    try:
        return RetryPolicy(max_retries=read.integer("MAILSERVER_EVENT_RETRY_MAX", 8),
                           first_backoff=read.integer("MAILSERVER_EVENT_RETRY_FIRST_BACKOFF_MS", 100) / 1000,
                           jitter_factor=0.5 if jitter is None else float(jitter))
    except ValueError as exc:
        raise SettingsError(f"MAILSERVER_EVENT_RETRY_*: {exc}") from None


def search_config(env: Mapping[str, str]) -> SearchConfig | None:
    """Search indexing runs when ``OPENSEARCH_URL`` is set; index, aliases and shards have James's defaults."""
    try:
        return SearchConfig.from_env(env)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


def blob_config(env: Mapping[str, str]) -> BlobStoreConfig:
    """James's blob.properties deduplication: off by default (its sample configuration)."""
    try:
        return BlobStoreConfig.from_env(env)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


def auth_throttle_config(env: Mapping[str, str]) -> AuthThrottleConfig:
    """IMAP, SMTP AUTH and WebAdmin authentication throttling: ``MAILSERVER_AUTH_THROTTLE_*``."""
    try:
        return AuthThrottleConfig.from_env(env)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


def vault_config(env: Mapping[str, str]) -> VaultConfiguration:
    """James's deletedMessageVault.properties: disabled by default, one year of retention."""
    try:
        return VaultConfiguration.from_env(env)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


@dataclass(frozen=True)
class ServeSettings:
    roles: tuple[str, ...] = ROLES
    smtp: SmtpConfig = field(default_factory=SmtpConfig)
    imap: ImapConfig = field(default_factory=ImapConfig)
    mailet_container: Path = DEFAULT_FILE
    spooler_threads: int | None = None          # None: the YAML's spooler.threads
    mx_static: dict[str, list[MxHost]] | None = None   # None: DNS
    queue_quorum: bool = False                  # James's quorum.queues.enable (classic v2 queues otherwise)
    queue_quorum_replication_factor: int = 1    # quorum.queues.replication.factor (x-quorum-initial-group-size)
    queue_quorum_delivery_limit: int | None = None   # quorum.queues.delivery.limit (x-delivery-limit)
    node_name: str = field(default_factory=socket.gethostname)
    health_interval: float = 2.0                # seconds between background probes of the backends
    queue_size_limits: dict[str, int] = field(default_factory=dict)   # MailQueueSize check, spool excluded
    listener_groups: tuple[str, ...] | None = None   # None: every group listener of the server
    event_bus_concurrency: int = 10                  # James's listeners.xml maxConcurrency
    event_retry: RetryPolicy = field(default_factory=RetryPolicy)
    search: SearchConfig | None = None               # OPENSEARCH_URL and OPENSEARCH_* (mailserver/search/config.py)
    vault: VaultConfiguration = field(default_factory=VaultConfiguration)   # MAILSERVER_VAULT_* (vault/config.py)
    blob: BlobStoreConfig = field(default_factory=BlobStoreConfig)   # MAILSERVER_BLOB_* (blob/config.py)
    # James's domain list read.cache.expiracy (10 s); 0 disables the cache (domains/cached.py).
    domain_cache_seconds: float = 10.0
    # Quota limits read per mail; 0 disables (mailbox/cached_quota.py). James has no such cache.
    quota_limits_cache_seconds: float = 10.0
    # Which users exist, read three times per mail; 0 disables (users/cached.py). James has no such cache.
    users_cache_seconds: float = 10.0
    # Recipient rewrite mappings, two reads per recipient; 0 disables (rrt/cached.py). James has no such cache.
    rrt_cache_seconds: float = 10.0
    # The SMTP and IMAP servers' event loop: uvloop, or asyncio (the standard library's) to compare.
    event_loop: str = DEFAULT_EVENT_LOOP
    # Authentication failures (IMAP, SMTP AUTH, WebAdmin): MAILSERVER_AUTH_THROTTLE_* (security/throttle_config.py)
    auth_throttle: AuthThrottleConfig = field(default_factory=AuthThrottleConfig)

    def runs_group(self, group: str) -> bool:
        """Whether this node runs a listener group: named in full, or by its listener's class name."""
        if self.listener_groups is None:
            return True
        simple = group.rsplit(".", 1)[-1].split("$", 1)[0]
        return group in self.listener_groups or simple in self.listener_groups

    def queue_limits(self) -> dict[str, int]:
        """Every queue with a size limit: the spool's back-pressure limit, then the others."""
        spool = {SPOOL: self.smtp.spool_size_limit} if self.smtp.spool_size_limit is not None else {}
        return {**spool, **self.queue_size_limits}

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, roles: str | None = None) -> ServeSettings:
        env = os.environ if env is None else env
        read = _Reader(env)
        smtp = SmtpConfig(
            host=read.text("MAILSERVER_SMTP_HOST", "127.0.0.1"),
            port=read.integer("MAILSERVER_SMTP_PORT", 2525),
            hostname=read.text("MAILSERVER_HOSTNAME", "localhost"),
            max_message_size=read.size("MAILSERVER_SMTP_MAX_MESSAGE_SIZE", MAX_MESSAGE_SIZE),
            auth_require_tls=read.boolean("MAILSERVER_SMTP_AUTH_REQUIRE_TLS", True),
            auth_required=read.boolean("MAILSERVER_SMTP_AUTH_REQUIRED", True),
            validate_recipients=read.boolean("MAILSERVER_SMTP_VALIDATE_RECIPIENTS", True),
            authorized_networks=tuple(n for n in read.text("MAILSERVER_SMTP_AUTHORIZED_NETWORKS", "").split(",")
                                      if n.strip()),
            tls_cert=read.optional("MAILSERVER_SMTP_TLS_CERT"),
            tls_key=read.optional("MAILSERVER_SMTP_TLS_KEY"),
            require_starttls=read.boolean("MAILSERVER_SMTP_REQUIRE_STARTTLS", False),
            spool_size_limit=read.optional_integer("MAILSERVER_SMTP_SPOOL_LIMIT"),
            # 0 lifts a cap; unset keeps SmtpConfig's default (500 sessions, 20 per address)
            max_connections=read.cap("MAILSERVER_SMTP_MAX_CONNECTIONS", SmtpConfig.max_connections),
            max_connections_per_ip=read.cap("MAILSERVER_SMTP_MAX_CONNECTIONS_PER_IP",
                                            SmtpConfig.max_connections_per_ip),
            # Postfix's smtpd_recipient_limit, smtpd_recipient_overshoot_limit, smtpd_soft_error_limit,
            # smtpd_hard_error_limit (0 lifts each) and smtpd_error_sleep_time; James's line length
            max_recipients=read.cap("MAILSERVER_SMTP_MAX_RECIPIENTS", SmtpConfig.max_recipients),
            recipient_overshoot_limit=read.non_negative("MAILSERVER_SMTP_RECIPIENT_OVERSHOOT_LIMIT",
                                                        SmtpConfig.recipient_overshoot_limit),
            soft_error_limit=read.cap("MAILSERVER_SMTP_SOFT_ERROR_LIMIT", SmtpConfig.soft_error_limit),
            hard_error_limit=read.cap("MAILSERVER_SMTP_HARD_ERROR_LIMIT", SmtpConfig.hard_error_limit),
            error_sleep_time=read.non_negative("MAILSERVER_SMTP_ERROR_SLEEP_MS",
                                               int(SmtpConfig.error_sleep_time * 1000)) / 1000,
            max_line_length=read.at_least("MAILSERVER_SMTP_MAX_LINE_LENGTH", SmtpConfig.max_line_length,
                                          MIN_LINE_LENGTH),
        )
        imap = ImapConfig(
            host=read.text("MAILSERVER_IMAP_HOST", "127.0.0.1"),
            port=read.integer("MAILSERVER_IMAP_PORT", 1143),
            auth_require_tls=read.boolean("MAILSERVER_IMAP_AUTH_REQUIRE_TLS", True),
            # The SMTP certificate unless IMAP has its own.
            tls_cert=read.optional("MAILSERVER_IMAP_TLS_CERT") or smtp.tls_cert,
            tls_key=read.optional("MAILSERVER_IMAP_TLS_KEY") or smtp.tls_key,
            max_append_size=read.size("MAILSERVER_IMAP_APPEND_LIMIT", smtp.max_message_size or MAX_MESSAGE_SIZE),
            max_connections=read.integer("MAILSERVER_IMAP_MAX_CONNECTIONS", 1000),
            # 0 lifts the cap; unset keeps ImapConfig's default (50 sessions per client address)
            max_connections_per_ip=read.cap("MAILSERVER_IMAP_MAX_CONNECTIONS_PER_IP",
                                            ImapConfig.max_connections_per_ip),
            max_literal_size_before_login=read.size("MAILSERVER_IMAP_LITERAL_LIMIT_BEFORE_LOGIN",
                                                    ImapConfig.max_literal_size_before_login),
            idle_timeout=float(read.integer("MAILSERVER_IMAP_IDLE_TIMEOUT_SECONDS", 1800)),
            idle_timeout_before_login=float(read.positive("MAILSERVER_IMAP_IDLE_TIMEOUT_BEFORE_LOGIN_SECONDS",
                                                          int(ImapConfig.idle_timeout_before_login))),
            idle_poll_interval=float(read.integer("MAILSERVER_IMAP_IDLE_POLL_MS", 2000)) / 1000,
        )
        mx = read.optional("MAILSERVER_MX_STATIC")
        return cls(
            roles=parse_roles(roles if roles is not None else read.text("MAILSERVER_ROLES", ",".join(ROLES))),
            smtp=smtp,
            imap=imap,
            mailet_container=Path(read.text("MAILSERVER_MAILETCONTAINER", str(DEFAULT_FILE))),
            spooler_threads=read.optional_integer("MAILSERVER_SPOOLER_THREADS"),
            mx_static=parse_mx_table(mx) if mx else None,
            queue_quorum=read.boolean("MAILSERVER_QUEUE_QUORUM", False),
            queue_quorum_replication_factor=read.positive("MAILSERVER_QUEUE_QUORUM_REPLICATION_FACTOR", 1),
            queue_quorum_delivery_limit=read.optional_positive("MAILSERVER_QUEUE_QUORUM_DELIVERY_LIMIT"),
            node_name=read.text("MAILSERVER_NODE_NAME", socket.gethostname()),
            health_interval=float(read.integer("MAILSERVER_HEALTH_INTERVAL_MS", 2000)) / 1000,
            queue_size_limits=parse_queue_limits(read.text("MAILSERVER_QUEUE_SIZE_LIMITS", "")),
            listener_groups=parse_groups(read.optional("MAILSERVER_LISTENER_GROUPS")),
            event_bus_concurrency=read.positive("MAILSERVER_EVENT_BUS_CONCURRENCY", 10),
            event_retry=event_retry_policy(read),
            search=search_config(env),
            vault=vault_config(env),
            blob=blob_config(env),
            domain_cache_seconds=read.non_negative("MAILSERVER_DOMAINLIST_READ_CACHE_MS", 10_000) / 1000,
            quota_limits_cache_seconds=read.non_negative("MAILSERVER_QUOTA_LIMITS_READ_CACHE_MS", 10_000) / 1000,
            users_cache_seconds=read.non_negative("MAILSERVER_USERS_READ_CACHE_MS", 10_000) / 1000,
            rrt_cache_seconds=read.non_negative("MAILSERVER_RRT_READ_CACHE_MS", 10_000) / 1000,
            event_loop=read.one_of("MAILSERVER_EVENT_LOOP", tuple(EVENT_LOOPS), DEFAULT_EVENT_LOOP),
            auth_throttle=auth_throttle_config(env),
        )


class _Reader:
    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env

    def optional(self, name: str) -> str | None:
        value = self.env.get(name, "").strip()
        return value or None

    def text(self, name: str, default: str) -> str:
        return self.optional(name) or default

    def integer(self, name: str, default: int) -> int:
        value = self.optional_integer(name)
        return default if value is None else value

    def optional_integer(self, name: str) -> int | None:
        value = self.optional(name)
        if value is None:
            return None
        try:
            return int(value)
        except ValueError:
            raise SettingsError(f"{name}: {value!r} is not an integer") from None

    def optional_positive(self, name: str) -> int | None:
        value = self.optional_integer(name)
        if value is not None and value < 1:
            raise SettingsError(f"{name}: must be at least 1, got {value}")
        return value

    def non_negative(self, name: str, default: int) -> int:
        value = self.integer(name, default)
        if value < 0:
            raise SettingsError(f"{name}: must be 0 or more, got {value}")
        return value

    def positive(self, name: str, default: int) -> int:
        return self.at_least(name, default, 1)

    def at_least(self, name: str, default: int, minimum: int) -> int:
        value = self.integer(name, default)
        if value < minimum:
            raise SettingsError(f"{name}: must be at least {minimum}, got {value}")
        return value

    def cap(self, name: str, default: int | None) -> int | None:
        """A limit: unset -> ``default``, ``0`` -> no limit (None), else a positive integer."""
        value = self.optional_integer(name)
        if value is None:
            return default
        if value < 0:
            raise SettingsError(f"{name}: {value} is negative (0 lifts the limit)")
        return value or None

    def size(self, name: str, default: int) -> int:
        """James's sizes (``26214400``, ``512K``, ``25M``, ``1G``; bytes when no unit), 0 or more."""
        value = self.optional(name)
        if value is None:
            return default
        try:
            size = parse_size(value)
        except InvalidSize as exc:
            raise SettingsError(f"{name}: {exc}") from None
        if size < 0:   # "unlimited", "unknown" or a negative amount: James's values, not a limit here
            raise SettingsError(f"{name}: {value!r} is not a size of 0 or more bytes")
        return size

    def one_of(self, name: str, choices: tuple[str, ...], default: str) -> str:
        value = (self.optional(name) or default).lower()
        if value not in choices:
            raise SettingsError(f"{name}: {value!r} is not one of {', '.join(choices)}")
        return value

    def boolean(self, name: str, default: bool) -> bool:
        value = self.optional(name)
        if value is None:
            return default
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
        raise SettingsError(f"{name}: {value!r} is not a boolean (true/false)")
