"""The server's mailbox manager and vault in a Spark process, for the vault restore job.

A restore appends through the server's own ``MailboxManager`` (quota check, uid and modseq
allocation, James's write order, the maintenance-mode guard) on Cassandra + S3, and dispatches its
events on the RabbitMQ bus without consuming it: the server's listeners (quota, fast view, search)
learn about the restored messages as about any append. The vault is the server's adapter on the
same blob store. One of each per Python worker process and per access, created on first use and
reused by every partition: it lives here, not in the job file, whose globals Spark pickles by value.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mailserver.blob.config import VARIABLES as BLOB_VARIABLES

if TYPE_CHECKING:
    from mailserver.cassandra.session import CassandraSession
    from mailserver.mailbox.manager import MailboxManager
    from mailserver.vault.api import DeletedMessageVault

_LOCK = threading.Lock()
_CONTEXTS: dict[RestoreAccess, RestoreContext] = {}
S3_VARIABLES = ("S3_ENDPOINT", "S3_ACCESS_KEY", "S3_SECRET_KEY", "S3_REGION", "S3_BUCKET_PREFIX", "S3_DEFAULT_BUCKET",
                *BLOB_VARIABLES)   # the blob ids and deletes of the server (MAILSERVER_BLOB_DEDUPLICATION)


@dataclass(frozen=True)
class RestoreContext:
    session: CassandraSession
    manager: MailboxManager
    vault: DeletedMessageVault


@contextmanager
def serving(access: RestoreAccess, context: RestoreContext) -> Iterator[RestoreContext]:
    """``access`` answered with ``context``, already connected, for the block (a driver's own stores)."""
    with _LOCK:
        _CONTEXTS[access] = context
    try:
        yield context
    finally:
        with _LOCK:
            if _CONTEXTS.get(access) is context:
                del _CONTEXTS[access]


@dataclass(frozen=True)
class RestoreAccess:
    """What a process needs to reach the mail store, the vault and the bus: picklable, no live objects."""

    cassandra_hosts: tuple[str, ...]
    cassandra_port: int
    keyspace: str
    s3: tuple[tuple[str, str], ...] = field(repr=False)     # the server's S3_* and MAILSERVER_BLOB_* variables
    amqp_url: str | None = field(default=None, repr=False)  # None: no events (a dry run appends nothing)
    bus: str = "mailboxEvent"
    cassandra_username: str | None = None
    cassandra_password: str | None = field(default=None, repr=False)

    @classmethod
    def of(cls, hosts: str, port: int, keyspace: str, env: Mapping[str, str], amqp_url: str | None,
           bus: str = "mailboxEvent") -> RestoreAccess:
        return cls(tuple(h.strip() for h in hosts.split(",") if h.strip()), port, keyspace,
                   tuple((k, env[k]) for k in S3_VARIABLES if env.get(k)), amqp_url, bus,
                   env.get("CASSANDRA_USERNAME") or None, env.get("CASSANDRA_PASSWORD") or None)

    def context(self) -> RestoreContext:
        with _LOCK:
            found = _CONTEXTS.get(self)
            if found is None:
                found = _CONTEXTS[self] = self._connect()
        return found

    def _connect(self) -> RestoreContext:
        from mailserver.blob.config import BlobStoreConfig
        from mailserver.blob.s3 import S3BlobStore, S3Config
        from mailserver.cassandra.config import CassandraConfig
        from mailserver.cassandra.session import CassandraSession
        from mailserver.events.api import EventBus
        from mailserver.events.cassandra_dead_letters import CassandraEventDeadLetters
        from mailserver.events.in_process import InProcessEventBus
        from mailserver.events.naming import BusNames
        from mailserver.events.rabbitmq import RabbitMQEventBus
        from mailserver.mailbox.wiring import cassandra_context
        from mailserver.maintenance.cassandra import CassandraMaintenanceStore
        from mailserver.maintenance.guard import MaintenanceGuard
        from mailserver.vault.cassandra import cassandra_vault

        session = CassandraSession.connect(CassandraConfig(
            hosts=self.cassandra_hosts, port=self.cassandra_port, keyspace=self.keyspace,
            username=self.cassandra_username, password=self.cassandra_password))
        atexit.register(session.close)
        blobs = S3BlobStore(S3Config.from_env(dict(self.s3)), ids=BlobStoreConfig.from_env(dict(self.s3)).id_factory())
        # Dispatch only: never started, so this process runs no listener; the server's consume the events.
        bus: EventBus = (RabbitMQEventBus(self.amqp_url, CassandraEventDeadLetters(session), names=BusNames(self.bus))
                         if self.amqp_url else InProcessEventBus())
        mailbox = cassandra_context(session, blobs, bus=bus,
                                    write_guard=MaintenanceGuard(CassandraMaintenanceStore(session)).writes_allowed)
        return RestoreContext(session, mailbox.manager, cassandra_vault(session, blobs))
