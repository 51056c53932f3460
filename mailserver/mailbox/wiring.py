"""Assemble a mailbox layer (stores, bus, listeners, manager) on memory or on Cassandra + S3."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mailserver.blob.api import BlobStore
from mailserver.cassandra.session import CassandraSession
from mailserver.events.api import EventBus
from mailserver.events.in_process import InProcessEventBus
from mailserver.eventsourcing.cassandra import CassandraEventStore
from mailserver.mailbox.acl import AclStore, EventSourcedAclStore, MemoryAclStore
from mailserver.mailbox.cached_quota import CachedLimitsQuotaStore
from mailserver.mailbox.cassandra_fastview import CassandraFastViewStore
from mailserver.mailbox.cassandra_mailboxes import CassandraMailboxStore
from mailserver.mailbox.cassandra_messages import CassandraMessageStore
from mailserver.mailbox.cassandra_quota import CassandraQuotaStore
from mailserver.mailbox.listeners import CurrentQuotaUpdater, DeleteMessageListener, FastViewProjectionListener
from mailserver.mailbox.manager import MailboxManager
from mailserver.mailbox.memory import MemoryFastViewStore, MemoryMailboxStore, MemoryMessageStore, MemoryQuotaStore
from mailserver.mailbox.store import FastViewStore, MailboxStore, MessageStore, QuotaStore


@dataclass
class MailboxContext:
    manager: MailboxManager
    bus: EventBus
    mailboxes: MailboxStore
    messages: MessageStore
    quota: QuotaStore
    fast_view: FastViewStore
    blobs: BlobStore
    acl: AclStore


def assemble(mailboxes: MailboxStore, messages: MessageStore, quota: QuotaStore, fast_view: FastViewStore,
             blobs: BlobStore, acl: AclStore, bus: EventBus | None = None,
             write_guard: Callable[[], None] | None = None) -> MailboxContext:
    """The mailbox layer with its group listeners registered on ``bus`` (in-process by default).

    More group listeners (search indexing, the vault) register on ``context.bus`` the same way,
    before a RabbitMQ bus starts consuming (the ``listeners`` role starts after the backends).
    """
    bus = bus or InProcessEventBus()
    bus.register(CurrentQuotaUpdater(quota, bus.dispatch))
    bus.register(FastViewProjectionListener(messages, blobs, fast_view))
    bus.register(DeleteMessageListener(messages, fast_view, blobs))
    manager = MailboxManager(mailboxes, messages, quota, blobs, bus, acl, write_guard=write_guard)
    return MailboxContext(manager, bus, mailboxes, messages, quota, fast_view, blobs, acl)


def memory_context(blobs: BlobStore, bus: EventBus | None = None,
                   write_guard: Callable[[], None] | None = None) -> MailboxContext:
    return assemble(MemoryMailboxStore(), MemoryMessageStore(), MemoryQuotaStore(), MemoryFastViewStore(), blobs,
                    MemoryAclStore(), bus, write_guard)


def cassandra_context(session: CassandraSession, blobs: BlobStore, bus: EventBus | None = None,
                      write_guard: Callable[[], None] | None = None,
                      quota_limits_cache_seconds: float = 0) -> MailboxContext:
    """``quota_limits_cache_seconds`` > 0 keeps the limits read that long (``CachedLimitsQuotaStore``)."""
    quota: QuotaStore = CassandraQuotaStore(session)
    if quota_limits_cache_seconds > 0:
        quota = CachedLimitsQuotaStore(quota, ttl=quota_limits_cache_seconds)
    return assemble(CassandraMailboxStore(session), CassandraMessageStore(session), quota,
                    CassandraFastViewStore(session), blobs, EventSourcedAclStore(session, CassandraEventStore(session)),
                    bus, write_guard)
