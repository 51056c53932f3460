"""The mail-queue port (James's ``MailQueue`` / ``ManageableMailQueue``).

``enqueue`` returns only once the mail is durable (blobs stored, view row written, message
published persistent and confirmed), so SMTP can answer 250 after it and 451 when it raises.
Consumers take one item at a time and say how it ended: SUCCESS acks, RETRY requeues,
REJECT dead-letters. An item never acknowledged (crash) is delivered again.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from mailserver.model.mail import Mail

SPOOL = "spool"
OUTGOING = "outgoing"


class MailQueueError(RuntimeError):
    """The mail could not be made durable (or an admin operation failed); nothing was accepted."""


class Outcome(StrEnum):
    SUCCESS = "SUCCESS"
    RETRY = "RETRY"
    REJECT = "REJECT"


class RemoveField(StrEnum):
    SENDER = "sender"
    RECIPIENT = "recipient"
    NAME = "name"


@dataclass(frozen=True)
class QueueItemView:
    """What browse shows for one enqueued mail (James's ManageableMailQueue.MailQueueItemView)."""

    mail: Mail
    enqueue_id: str
    enqueued_time: datetime
    next_delivery: datetime | None


class MailQueueItem(ABC):
    mail: Mail

    @abstractmethod
    def done(self, outcome: Outcome, *, handed_over: Collection[str] = ()) -> None:
        """Acknowledge (SUCCESS), requeue (RETRY) or dead-letter (REJECT). Call exactly once.

        ``handed_over``: blob ids of the mail's content that now belong to someone else (a stored
        message took the body, ``mailets/blob_handover``): the entry leaves them in place when it
        deletes its content.
        """


class MailQueue(ABC):
    name: str

    @abstractmethod
    def enqueue(self, mail: Mail, delay: timedelta | None = None, *, hand_over: bool = False) -> None:
        """Durable before returning; a mail with ``delay`` is not dequeued before it has passed.

        The queue entry deletes its content's blobs once the mail leaves the queue, so stored content
        is copied first when the blob store does not deduplicate, unless ``hand_over``: the caller
        gives its blobs to the entry (it will neither use nor delete them after a successful enqueue).
        """

    @abstractmethod
    def dequeue(self, timeout: float | None = None, *, keep_consuming: bool = False) -> MailQueueItem | None:
        """The next due mail, or None when none arrived within ``timeout`` seconds.

        ``keep_consuming``: the caller is a consumer loop, which dequeues again as soon as it settled
        the item and calls ``release()`` when it leaves. An adapter whose consumers are pushed to may
        then keep the thread subscribed between items (the next mail arrives as this one is settled,
        without a subscribe and a cancel per mail); otherwise nothing is pushed to a thread that does
        not ask."""

    @abstractmethod
    def browse(self) -> Iterator[QueueItemView]: ...

    @abstractmethod
    def size(self) -> int:
        """Mails waiting (due and delayed); cheap: never a full browse."""

    def browse_size(self) -> int:
        """The size an administrator sees, James's ``ManageableMailQueue.getSize`` (for the distributed queue
        the count of its browse view): mails removed or cleared no longer count, even while their broker
        messages wait to be skipped at dequeue. A full browse: for WebAdmin and its tasks, not for probes."""
        return sum(1 for _ in self.browse())

    @abstractmethod
    def remove(self, field: RemoveField, value: str) -> int: ...

    @abstractmethod
    def clear(self) -> int: ...

    @abstractmethod
    def flush(self) -> int:
        """Make every delayed mail due now; returns how many were delayed."""

    @abstractmethod
    def republish_not_processed(self, older_than: datetime) -> int:
        """Publish again the mails the browse view holds but the broker lost (enqueued before the cut-off)."""

    def update_browse_start(self) -> datetime | None:
        """James's ``updateBrowseStart``: move the browse start of the queue's view past the slices
        holding no live mail (never past one), dropping those slices; returns the new browse start,
        or None when it did not move. Queues without a browse view have nothing to move."""
        return None

    def close(self) -> None:  # noqa: B027 - adapters holding connections override it
        """Release connections."""

    def interrupt_waits(self) -> None:  # noqa: B027 - adapters whose dequeue blocks override it
        """Every ``dequeue`` now waiting on this queue object returns None without waiting out its
        timeout: a consumer told to stop leaves at once, so consumers can wait long between checks
        of their stop flag (an idle server does not wake its threads to ask). Never raises: a wait
        it cannot end still ends at its timeout."""

    def release(self) -> None:  # noqa: B027 - adapters whose consumers are pushed to override it
        """The calling thread stops consuming: a mail pushed to it and not yet taken goes back to the queue.

        Consumers call it when they leave their dequeue loop, so nothing waits on a thread that is gone.
        """


class MailQueueFactory(ABC):
    @abstractmethod
    def get(self, name: str) -> MailQueue:
        """The queue called ``name``, created on first use."""

    @abstractmethod
    def list_names(self) -> list[str]: ...
