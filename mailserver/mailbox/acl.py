"""Mailbox ACL storage, event-sourced as in James (``CassandraACLMapper.StoreV2``).

The truth is the ACL aggregate in the event store (aggregate id = the mailbox id, event type
``acl-updated`` carrying the diff); ``aclv2`` (rights per mailbox) and ``UserMailboxACL``
(mailboxes delegated to a user, positive user entries only) are projections written by a
subscriber once the event is stored. Reads go to ``aclv2``, as James's do.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence

from mailserver.cassandra.session import CassandraSession
from mailserver.eventsourcing.aggregate import CommandHandler, NewEvent
from mailserver.eventsourcing.api import Event, EventStore, History
from mailserver.model import acl
from mailserver.model.ids import MailboxId

EVENT_TYPE = "acl-updated"


class AclStore(ABC):
    @abstractmethod
    def get(self, mailbox_id: MailboxId) -> dict[str, str]: ...

    @abstractmethod
    def set_rights(self, mailbox_id: MailboxId, key: str, rights: str) -> tuple[dict[str, str], dict[str, str]]:
        """Set (or, with empty ``rights``, remove) one entry; returns (old ACL, new ACL)."""

    @abstractmethod
    def delete(self, mailbox_id: MailboxId) -> None: ...

    @abstractmethod
    def granted_to(self, user_key: str) -> dict[MailboxId, str]:
        """The mailboxes whose ACL has a positive entry ``user_key``, with its rights (``UserMailboxACL``)."""


class MemoryAclStore(AclStore):
    def __init__(self) -> None:
        self._acls: dict[MailboxId, dict[str, str]] = {}

    def get(self, mailbox_id: MailboxId) -> dict[str, str]:
        return dict(self._acls.get(mailbox_id, {}))

    def set_rights(self, mailbox_id: MailboxId, key: str, rights: str) -> tuple[dict[str, str], dict[str, str]]:
        key, rights = acl.validate_key(key), acl.validate_rights(rights)
        old = self.get(mailbox_id)
        new = {**old, key: rights} if rights else {k: v for k, v in old.items() if k != key}
        self._acls[mailbox_id] = new
        return old, new

    def delete(self, mailbox_id: MailboxId) -> None:
        self._acls.pop(mailbox_id, None)

    def granted_to(self, user_key: str) -> dict[MailboxId, str]:
        return {mailbox_id: entries[user_key] for mailbox_id, entries in list(self._acls.items())
                if user_key in entries}


def _current(history: History) -> dict[str, str]:
    return dict(history.events[-1].payload["newACL"]) if history.events else {}


class EventSourcedAclStore(AclStore):
    def __init__(self, session: CassandraSession, events: EventStore) -> None:
        self.s = session
        self._handler: CommandHandler[tuple[str, str] | None] = CommandHandler(
            events, self._decide, subscribers=[self._project])

    @staticmethod
    def _decide(history: History, command: tuple[str, str] | None) -> Sequence[NewEvent]:
        old = _current(history)
        if command is None:  # delete: back to an empty ACL
            new: dict[str, str] = {}
        else:
            key, rights = command
            new = {**old, key: rights} if rights else {k: v for k, v in old.items() if k != key}
        if new == old:
            return []
        return [NewEvent(EVENT_TYPE, {"oldACL": old, "newACL": new})]

    def _project(self, event: Event) -> None:
        mailbox = MailboxId.of(event.aggregate_id).value
        old: Mapping[str, str] = event.payload["oldACL"]
        new: Mapping[str, str] = event.payload["newACL"]
        added, removed = acl.diff(old, new)
        for key in removed.keys() - added.keys():
            self.s.execute("DELETE FROM aclv2 WHERE id = ? AND key = ?", (mailbox, key))
            if acl.is_positive_user_entry(key):
                self.s.execute("DELETE FROM UserMailboxACL WHERE userName = ? AND mailboxid = ?", (key, mailbox))
        for key, rights in added.items():
            self.s.execute("INSERT INTO aclv2 (id, key, rights) VALUES (?, ?, ?)", (mailbox, key, set(rights)))
            if acl.is_positive_user_entry(key):
                self.s.execute("INSERT INTO UserMailboxACL (userName, mailboxid, rights) VALUES (?, ?, ?)",
                               (key, mailbox, rights))

    def get(self, mailbox_id: MailboxId) -> dict[str, str]:
        rows = self.s.execute("SELECT key, rights FROM aclv2 WHERE id = ?", (mailbox_id.value,))
        return {r["key"]: acl.validate_rights("".join(r["rights"] or ())) for r in rows}

    def set_rights(self, mailbox_id: MailboxId, key: str, rights: str) -> tuple[dict[str, str], dict[str, str]]:
        key, rights = acl.validate_key(key), acl.validate_rights(rights)
        events = self._handler.handle(str(mailbox_id), (key, rights))
        if not events:
            current = self.get(mailbox_id)
            return current, current
        return dict(events[-1].payload["oldACL"]), dict(events[-1].payload["newACL"])

    def delete(self, mailbox_id: MailboxId) -> None:
        self._handler.handle(str(mailbox_id), None)

    def granted_to(self, user_key: str) -> dict[MailboxId, str]:
        rows = self.s.execute("SELECT mailboxid, rights FROM UserMailboxACL WHERE userName = ?", (user_key,))
        return {MailboxId.of(r["mailboxid"]): acl.validate_rights(r["rights"] or "") for r in rows}
