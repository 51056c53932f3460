"""Identifiers with James's Cassandra representation: mailbox and message ids are TIMEUUIDs."""

from __future__ import annotations

import uuid
from dataclasses import dataclass


def _timeuuid(value: uuid.UUID | str) -> uuid.UUID:
    try:
        parsed = value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        raise ValueError(f"not a UUID: {value!r}") from None
    if parsed.version != 1:
        raise ValueError(f"not a time-based UUID: {value}")
    return parsed


@dataclass(frozen=True, order=True)
class MailboxId:
    value: uuid.UUID

    @classmethod
    def generate(cls) -> MailboxId:
        return cls(uuid.uuid1())

    @classmethod
    def of(cls, value: uuid.UUID | str) -> MailboxId:
        return cls(_timeuuid(value))

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True, order=True)
class MessageId:
    """The same message id is shared by every copy of a message (James's CassandraMessageId)."""

    value: uuid.UUID

    @classmethod
    def generate(cls) -> MessageId:
        return cls(uuid.uuid1())

    @classmethod
    def of(cls, value: uuid.UUID | str) -> MessageId:
        return cls(_timeuuid(value))

    def __str__(self) -> str:
        return str(self.value)


ThreadId = MessageId  # James uses the first message id of a thread as the thread id
