"""``mailserver serve`` settings, read from the environment (secrets never on the command line).

Backends use the shared names (``CASSANDRA_*``, ``S3_*``, ``AMQP_URL``,
``RABBITMQ_MANAGEMENT_URL``, ``OPENSEARCH_URL``); the server's own settings are
``MAILSERVER_*``; each is typed, defaulted and described in ``mailserver.settings``
(docs/configuration.md). Defaults are the secure ones: loopback binds, no authorized network (no open
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
from mailserver.model.passwords import DEFAULT_ALGORITHM
from mailserver.queue.api import SPOOL
from mailserver.rabbitmq_queues import QueueType
from mailserver.search.config import SearchConfig
from mailserver.security.throttle_config import AuthThrottleConfig
from mailserver.serving.server_thread import DEFAULT_EVENT_LOOP
from mailserver.settings import (
    DeliverySettings,
    EventSettings,
    ImapSettings,
    NodeSettings,
    QueueSettings,
    RabbitMQSettings,
    ReadCacheSettings,
    SettingsError,
    SmtpSettings,
    UsersSettings,
)
from mailserver.settings.node import KNOWN_ROLES, ROLES
from mailserver.smtp.config import MAX_MESSAGE_SIZE, SmtpConfig
from mailserver.vault.config import VaultConfiguration


def parse_roles(spec: str) -> tuple[str, ...]:
    roles = tuple(dict.fromkeys(r.strip().lower() for r in spec.split(",") if r.strip()))
    unknown = [r for r in roles if r not in KNOWN_ROLES]
    if unknown or not roles:
        raise SettingsError(f"roles must be a comma list of {', '.join(KNOWN_ROLES)}; got {spec!r}")
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


def event_retry_policy(events: EventSettings) -> RetryPolicy:
    """James's defaults (8 retries, 100 ms first backoff, jitter factor 0.5), each overridable."""
    try:
        return RetryPolicy(max_retries=events.retry_max, first_backoff=events.retry_first_backoff.total_seconds(),
                           jitter_factor=events.retry_jitter_factor)
    except ValueError as exc:
        raise SettingsError(f"MAILSERVER_EVENT_RETRY_*: {exc}") from None


def search_config(env: Mapping[str, str]) -> SearchConfig | None:
    """Search indexing runs when ``OPENSEARCH_URL`` is set; index, aliases and shards have James's defaults."""
    try:
        return SearchConfig.from_env(env)
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
    # James's quorum.queues.*: every work queue's type, mail queues and event bus alike
    queue_type: QueueType = field(default_factory=QueueType)
    password_algorithm: str = DEFAULT_ALGORITHM   # James's usersrepository.xml algorithm
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
        node, s, i = NodeSettings.from_env(env), SmtpSettings.from_env(env), ImapSettings.from_env(env)
        delivery, queues = DeliverySettings.from_env(env), QueueSettings.from_env(env)
        events, caches = EventSettings.from_env(env), ReadCacheSettings.from_env(env)
        smtp = SmtpConfig(
            host=s.host, port=s.port, hostname=s.hostname, max_message_size=s.max_message_size,
            auth_require_tls=s.auth_require_tls, auth_required=s.auth_required,
            validate_recipients=s.validate_recipients, authorized_networks=s.authorized_networks,
            tls_cert=s.tls_cert, tls_key=s.tls_key, require_starttls=s.require_starttls,
            spool_size_limit=s.spool_limit,
            # 0 lifts a cap (None)
            max_connections=s.max_connections, max_connections_per_ip=s.max_connections_per_ip,
            # Postfix's smtpd_recipient_limit, smtpd_recipient_overshoot_limit, smtpd_soft_error_limit,
            # smtpd_hard_error_limit and smtpd_error_sleep_time; James's line length
            max_recipients=s.max_recipients, recipient_overshoot_limit=s.recipient_overshoot_limit,
            soft_error_limit=s.soft_error_limit, hard_error_limit=s.hard_error_limit,
            error_sleep_time=s.error_sleep.total_seconds(), max_line_length=s.max_line_length,
        )
        imap = ImapConfig(
            host=i.host, port=i.port, auth_require_tls=i.auth_require_tls,
            # The SMTP certificate unless IMAP has its own.
            tls_cert=i.tls_cert or smtp.tls_cert, tls_key=i.tls_key or smtp.tls_key,
            max_append_size=i.append_limit if i.append_limit is not None else (smtp.max_message_size
                                                                              or MAX_MESSAGE_SIZE),
            max_connections=i.max_connections, max_connections_per_ip=i.max_connections_per_ip,
            max_literal_size_before_login=i.literal_limit_before_login,
            idle_timeout=i.idle_timeout.total_seconds(),
            idle_timeout_before_login=i.idle_timeout_before_login.total_seconds(),
            idle_poll_interval=i.idle_poll.total_seconds(), compress=i.compress,
        )
        return cls(
            roles=parse_roles(roles if roles is not None else node.roles),
            smtp=smtp,
            imap=imap,
            mailet_container=Path(delivery.mailet_container) if delivery.mailet_container else DEFAULT_FILE,
            spooler_threads=delivery.spooler_threads,
            mx_static=parse_mx_table(delivery.mx_static) if delivery.mx_static else None,
            queue_type=RabbitMQSettings.from_env(env).queue_type(),
            password_algorithm=UsersSettings.from_env(env).password_algorithm,
            node_name=node.node_name or socket.gethostname(),
            health_interval=node.health_interval.total_seconds(),
            queue_size_limits=parse_queue_limits(queues.size_limits),
            listener_groups=events.listener_groups,
            event_bus_concurrency=events.bus_concurrency,
            event_retry=event_retry_policy(events),
            search=search_config(env),
            vault=VaultConfiguration.from_env(env),
            blob=BlobStoreConfig.from_env(env),
            domain_cache_seconds=caches.domain_list.total_seconds(),
            quota_limits_cache_seconds=caches.quota_limits.total_seconds(),
            users_cache_seconds=caches.users.total_seconds(),
            rrt_cache_seconds=caches.rrt.total_seconds(),
            event_loop=node.event_loop,
            auth_throttle=AuthThrottleConfig.from_env(env),
        )
