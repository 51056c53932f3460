"""Registration keys: what a key listener listens to, and which keys an event is dispatched with.

James routes an event to the key listeners of every node by publishing it once per key, with the
routing key ``<KeySimpleClassName>:<value>`` (``RoutingKeyConverter``). The mailbox manager
dispatches each mailbox event with the ``MailboxIdRegistrationKey`` of the mailboxes it touches
(``StoreMailboxManager``, ``StoreMessageIdManager``); quota and content-deletion events carry none.
JMAP's ``StateChangeEvent`` goes to the ``AccountIdRegistrationKey`` of its user, whose value is
the username (James's Java ``AccountId``), where the push connections of that user listen.
"""

from __future__ import annotations

from dataclasses import dataclass

from mailserver.model.address import Username
from mailserver.model.events import MailboxEvent, MessageContentDeletionEvent, MessageMoveEvent
from mailserver.model.ids import MailboxId
from mailserver.model.state_change import StateChangeEvent

SEPARATOR = ":"
MAILBOX_ID_KEY = "MailboxIdRegistrationKey"
ACCOUNT_ID_KEY = "AccountIdRegistrationKey"


@dataclass(frozen=True)
class RegistrationKey:
    kind: str    # James's simple class name of the key
    value: str   # its ``asString()``

    @property
    def routing_key(self) -> str:
        return f"{self.kind}{SEPARATOR}{self.value}"

    @classmethod
    def from_routing_key(cls, routing_key: str) -> RegistrationKey:
        kind, separator, value = routing_key.partition(SEPARATOR)
        if not separator:
            raise ValueError(f"routing key {routing_key!r} does not match 'KeyClass:value'")
        return cls(kind, value)


def mailbox_key(mailbox_id: MailboxId) -> RegistrationKey:
    return RegistrationKey(MAILBOX_ID_KEY, str(mailbox_id))


def account_key(user: Username) -> RegistrationKey:
    return RegistrationKey(ACCOUNT_ID_KEY, str(user))


def keys_of(event: MailboxEvent) -> list[RegistrationKey]:
    """The keys James dispatches this event with (each once, in a stable order)."""
    if isinstance(event, StateChangeEvent):
        return [account_key(event.user)]
    if isinstance(event, MessageContentDeletionEvent):
        return []
    if isinstance(event, MessageMoveEvent):
        ids = [*event.previous_mailbox_ids, *event.target_mailbox_ids]
    else:
        mailbox_id = getattr(event, "mailbox_id", None)
        ids = [mailbox_id] if mailbox_id is not None else []
    return list(dict.fromkeys(mailbox_key(mailbox_id) for mailbox_id in ids))
