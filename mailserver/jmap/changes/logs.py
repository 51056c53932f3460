"""The two change logs JMAP reads, and the listener that writes them registered on a bus."""

from __future__ import annotations

from dataclasses import dataclass, field

from mailserver.cassandra.session import CassandraSession
from mailserver.events.api import EventBus
from mailserver.jmap.changes.cassandra import CassandraChangeRepository
from mailserver.jmap.changes.listener import MailboxChangeListener
from mailserver.jmap.changes.repository import EMAIL_CHANGE, MAILBOX_CHANGE, ChangeRepository, MemoryChangeRepository
from mailserver.mailbox.acl import AclStore
from mailserver.mailbox.manager import MailboxManager


@dataclass(frozen=True)
class ChangeLogs:
    mailboxes: ChangeRepository = field(default_factory=lambda: MemoryChangeRepository(MAILBOX_CHANGE))
    emails: ChangeRepository = field(default_factory=lambda: MemoryChangeRepository(EMAIL_CHANGE))

    @classmethod
    def cassandra(cls, session: CassandraSession) -> ChangeLogs:
        return cls(CassandraChangeRepository(session, MAILBOX_CHANGE), CassandraChangeRepository(session, EMAIL_CHANGE))

    def listen(self, bus: EventBus, manager: MailboxManager, acl: AclStore, push: EventBus | None = None) -> ChangeLogs:
        """Register the change listener group on ``bus`` (before a distributed bus starts consuming);
        the new states go to the key listeners of ``push`` (default: ``bus``)."""
        bus.register(MailboxChangeListener(self.mailboxes, self.emails, manager, acl, push or bus))
        return self
