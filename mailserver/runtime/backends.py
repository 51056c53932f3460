"""Every adapter a server process uses, built once from the environment and shared by its roles."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mailserver.blob.api import BlobStore
from mailserver.cassandra.session import CassandraSession
from mailserver.domains.api import DomainList
from mailserver.events.api import EventBus
from mailserver.events.cassandra_dead_letters import CassandraEventDeadLetters
from mailserver.events.dead_letters import EventDeadLetters
from mailserver.events.dead_letters_check import EventDeadLettersHealthCheck
from mailserver.events.in_process import InProcessEventBus
from mailserver.events.rabbitmq import RabbitMQEventBus
from mailserver.events.required_groups import RequiredGroups, aggregate_id
from mailserver.jmap.changes.logs import ChangeLogs
from mailserver.mailbox.wiring import MailboxContext
from mailserver.maintenance.api import MaintenanceStore
from mailserver.maintenance.guard import MaintenanceGuard
from mailserver.model.passwords import PasswordHasher
from mailserver.observability.health import HealthCheck
from mailserver.observability.loop_stalls import WATCHDOG
from mailserver.observability.metrics import Metrics
from mailserver.queue.api import MailQueueFactory
from mailserver.queue.content import MimeMessageStore
from mailserver.queue.size_check import MailQueueSizeHealthCheck
from mailserver.repository.api import MailRepositoryStore
from mailserver.rrt.api import RecipientRewriteTable
from mailserver.runtime.settings import ServeSettings
from mailserver.search.api import SearchIndex
from mailserver.security.auth_throttle import AuthThrottle
from mailserver.settings import OpenSearchSettings, RabbitMQSettings
from mailserver.users.api import UsersRepository
from mailserver.vault.api import DeletedMessageVault

if TYPE_CHECKING:
    from mailserver.jmap.uploads import UploadRepository
    from mailserver.mailbox.subscriptions import SubscriptionStore

log = logging.getLogger(__name__)


@dataclass
class Backends:
    session: CassandraSession
    blobs: BlobStore
    contents: MimeMessageStore
    queues: MailQueueFactory
    domains: DomainList
    users: UsersRepository
    rrt: RecipientRewriteTable
    mailbox: MailboxContext
    repositories: MailRepositoryStore
    maintenance: MaintenanceStore
    guard: MaintenanceGuard
    metrics: Metrics
    bus: RabbitMQEventBus
    dead_letters: EventDeadLetters
    required_groups: RequiredGroups
    # Probes of the backends the durable mail path needs (Cassandra, RabbitMQ, S3), then others.
    mail_path_checks: list[HealthCheck]
    other_checks: list[HealthCheck]
    jmap_changes: ChangeLogs   # JMAP change logs, written by their listener group on ``bus``
    # James's JMAP bus (``jmapEvent``): the change listener dispatches state changes to the push
    # connections' keys there, whichever node holds them.
    push_bus: RabbitMQEventBus | None = None
    search: SearchIndex | None = None   # the OpenSearch mailbox index when OPENSEARCH_URL is set
    vault: DeletedMessageVault | None = None   # deleted messages (captured only when MAILSERVER_VAULT_ENABLED)
    # Authentication failures of the process's protocols, counted once for all of them (IMAP, SMTP, WebAdmin).
    auth_throttle: AuthThrottle | None = None

    @property
    def subscriptions(self) -> SubscriptionStore:
        """IMAP subscriptions (the ``subscription`` table): stateless, so one per caller is fine."""
        from mailserver.mailbox.subscriptions import CassandraSubscriptionStore

        return CassandraSubscriptionStore(self.session)

    @property
    def uploads(self) -> UploadRepository:
        """JMAP uploads (``uploadsV2``, the ``jmap-uploads`` bucket): stateless, so one per caller is fine."""
        from mailserver.jmap.uploads import CassandraUploadRepository

        return CassandraUploadRepository(self.session, self.blobs)

    @property
    def health_checks(self) -> list[HealthCheck]:
        return [*self.mail_path_checks, *self.other_checks]

    def close(self) -> None:
        closings = (self.bus.close, self.push_bus.close if self.push_bus is not None else None,
                    self.queues.close if hasattr(self.queues, "close") else None, self.session.close)
        for closing in closings:
            if closing is None:
                continue
            try:
                closing()
            except Exception:  # shutting down: report, keep releasing the rest
                log.warning("closing %s failed", closing, exc_info=True)


def dead_letters_check(session: CassandraSession, bus: EventBus) -> HealthCheck:
    """Cluster-wide dead letters (Cassandra) and, while the bus is in-process, this process's own."""
    sources = [CassandraEventDeadLetters(session).contain_events]
    if isinstance(bus, InProcessEventBus):   # a single-process bus may keep its own, in memory
        sources.append(bus.dead_letters.contain_events)
    return EventDeadLettersHealthCheck(*sources)


def connect(settings: ServeSettings, env: Mapping[str, str] | None = None) -> Backends:
    """Connect to Cassandra (creating missing tables), S3 and RabbitMQ; refuse an unsupported schema version."""
    # Imported here so that `mailserver --help` does not load the drivers.
    import pika

    from mailserver.blob.cache import CachedBlobStore
    from mailserver.blob.s3 import S3BlobStore, S3Config, make_client
    from mailserver.cassandra.config import CassandraConfig
    from mailserver.cassandra.versions import initialize_schema
    from mailserver.domains.cached import CachedDomainList
    from mailserver.domains.cassandra import CassandraDomainList
    from mailserver.events.cassandra_dead_letters import CassandraEventDeadLetters as DeadLettersStore
    from mailserver.events.naming import JMAP_EVENT_BUS, BusNames
    from mailserver.events.peer_groups import PeerGroups
    from mailserver.events.registered_groups import EventBusGroupsHealthCheck, RegisteredGroups
    from mailserver.eventsourcing.cassandra import CassandraEventStore
    from mailserver.mailbox.wiring import cassandra_context
    from mailserver.maintenance.cassandra import CassandraMaintenanceStore
    from mailserver.observability import checks
    from mailserver.queue.metered import MeteredMailQueueFactory
    from mailserver.queue.rabbitmq import DistributedMailQueueFactory
    from mailserver.rabbitmq_management import RabbitMQManagement
    from mailserver.repository.cassandra import CassandraMailRepositoryStore
    from mailserver.rrt.cached import CachedRecipientRewriteTable
    from mailserver.rrt.cassandra import CassandraRecipientRewriteTable
    from mailserver.users.cached import CachedUsersRepository
    from mailserver.users.cassandra import CassandraUsersRepository
    from mailserver.vault.cassandra import cassandra_vault
    from mailserver.vault.wiring import install_vault

    env = os.environ if env is None else env
    rabbitmq, opensearch = RabbitMQSettings.from_env(env), OpenSearchSettings.from_env(env)
    amqp_url = rabbitmq.amqp_url
    if not amqp_url:
        raise ValueError("AMQP_URL is not set: the mail queues need RabbitMQ")
    cassandra = CassandraConfig.from_env(env)
    # As James at start: create what is missing, refuse a schema version this code cannot serve.
    initialize_schema(cassandra)
    session = CassandraSession.connect(cassandra)
    try:
        s3 = S3Config.from_env(env)
        blobs: BlobStore = S3BlobStore(s3, ids=settings.blob.id_factory())   # MAILSERVER_BLOB_DEDUPLICATION
        if settings.blob.cache_bytes:   # a mail's content is read back by this process several times
            blobs = CachedBlobStore(blobs, max_bytes=settings.blob.cache_bytes,
                                    max_blob_bytes=settings.blob.cache_max_blob_bytes)
        contents = MimeMessageStore(blobs)
        metrics = Metrics()
        metrics.gauge("eventLoopStalls", lambda: WATCHDOG.stalls,
                      "Event-loop stalls (a loop late by more than its threshold) since start")
        queues = MeteredMailQueueFactory(
            DistributedMailQueueFactory(amqp_url, session, blobs,
                                        management_url=rabbitmq.management_url,
                                        quorum=settings.queue_type.quorum,
                                        quorum_replication_factor=settings.queue_type.replication_factor,
                                        quorum_delivery_limit=settings.queue_type.delivery_limit), metrics)
        domains: DomainList = CassandraDomainList(session)
        if settings.domain_cache_seconds > 0:   # asked several times per mail, changed a few times a year
            domains = CachedDomainList(domains, ttl=settings.domain_cache_seconds)
        users: UsersRepository = CassandraUsersRepository(session, domains,
                                                          hasher=PasswordHasher(settings.password_algorithm))
        if settings.users_cache_seconds > 0:   # asked three times per mail
            users = CachedUsersRepository(users, ttl=settings.users_cache_seconds)
        rrt: RecipientRewriteTable = CassandraRecipientRewriteTable(session, domains)
        if settings.rrt_cache_seconds > 0:   # every recipient resolved at RCPT and again by the mailet
            rrt = CachedRecipientRewriteTable(rrt, ttl=settings.rrt_cache_seconds)
        maintenance = CassandraMaintenanceStore(session)
        guard = MaintenanceGuard(maintenance)
        probe_config = S3Config.from_env(env, connect_timeout=3.0, read_timeout=5.0, max_attempts=1)
        mail_path = [checks.CassandraHealthCheck(session), checks.RabbitMQHealthCheck(amqp_url),
                     checks.ObjectStorageHealthCheck(make_client(probe_config),
                     probe_config.s3_bucket(probe_config.default_bucket_name))]
        others: list[HealthCheck] = []
        if opensearch.url:
            others.append(checks.OpenSearchHealthCheck(opensearch.url))
        dead_letters = DeadLettersStore(session)
        names = BusNames()
        required_groups = RequiredGroups(CassandraEventStore(session),
                                         aggregate_id(names.bus, pika.URLParameters(amqp_url).virtual_host))
        registered = (RegisteredGroups(RabbitMQManagement(rabbitmq.management_url, amqp_url), names)
                      if rabbitmq.management_url else None)
        # First deliveries this node takes are handed on to the groups other nodes (James's too) run.
        peers = PeerGroups(required_groups.current, registered.bound if registered is not None else None)
        bus = RabbitMQEventBus(amqp_url, dead_letters, names=names, retry=settings.event_retry,
                               concurrency=settings.event_bus_concurrency, metrics=metrics,
                               queue_type=settings.queue_type, peer_groups=peers)
        mailbox = cassandra_context(session, blobs, bus=bus, write_guard=guard.writes_allowed,
                                    quota_limits_cache_seconds=settings.quota_limits_cache_seconds)
        vault = cassandra_vault(session, blobs)
        install_vault(mailbox, vault, settings.vault)
        search = None
        if settings.search is not None:   # the indexing group listener, registered before the bus consumes
            from mailserver.search.wiring import opensearch_search

            search = opensearch_search(mailbox, settings.search, threads=settings.event_bus_concurrency)
        # The JMAP change listener group: James registers it wherever JMAP runs; every node records
        # changes here, so that states are the same whichever node a client asks.
        push_bus = RabbitMQEventBus(amqp_url, dead_letters, names=BusNames(JMAP_EVENT_BUS), publisher_connections=1,
                                    queue_type=settings.queue_type)
        jmap_changes = ChangeLogs.cassandra(session).listen(mailbox.bus, mailbox.manager, mailbox.acl, push=push_bus)
        others += [dead_letters_check(session, mailbox.bus), MailQueueSizeHealthCheck(queues, settings.queue_limits())]
        if registered is not None:
            others.append(EventBusGroupsHealthCheck(registered, required_groups.current))
        return Backends(
            session=session, blobs=blobs, contents=contents, queues=queues, domains=domains,
            users=users,
            rrt=rrt,
            mailbox=mailbox,
            repositories=CassandraMailRepositoryStore(session, contents),
            maintenance=maintenance, guard=guard, metrics=metrics,
            bus=bus, dead_letters=dead_letters, required_groups=required_groups,
            mail_path_checks=mail_path, other_checks=others, search=search, vault=vault,
            auth_throttle=AuthThrottle(settings.auth_throttle, metrics=metrics), jmap_changes=jmap_changes,
            push_bus=push_bus)
    except BaseException:
        session.close()
        raise
