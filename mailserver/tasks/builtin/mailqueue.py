"""Mail-queue tasks (James's ``clear-mail-queue``, ``delete-mails-from-mail-queue``,
``republish-not-processed-mails``, ``browse-start-update``), with their ``additionalInformation`` wire names.

Counts are read live from the queue as James does (``browse_size``: what browse lists, so mails
just removed no longer count although their broker messages are still there), so a waiting task
already shows what it is about to clear, and a running one shows the queue shrinking. A finished
task keeps the counts it ended with: listing tasks must not browse a queue per finished task.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mailserver.queue.api import MailQueueFactory, RemoveField
from mailserver.tasks.api import Result, Task, format_instant, java_instant
from mailserver.tasks.registry import TaskRegistry


class _CountingQueueTask(Task):
    """Live counts while waiting or running, the final ones once done."""

    queues: MailQueueFactory
    queue_name: str
    _remaining: int | None

    def _remaining_count(self) -> int:
        if self._remaining is not None:
            return self._remaining
        return self.queues.get(self.queue_name).browse_size()


class ClearMailQueueTask(_CountingQueueTask):
    type = "clear-mail-queue"

    def __init__(self, queues: MailQueueFactory, queue_name: str) -> None:
        self.queues = queues
        self.queue_name = queue_name
        self._initial: int | None = None
        self._remaining: int | None = None

    def run(self) -> Result:
        queue = self.queues.get(self.queue_name)
        self._initial = queue.browse_size()
        queue.clear()
        self._remaining = queue.browse_size()
        return Result.COMPLETED

    def parameters(self) -> dict[str, Any]:
        return {"mailQueueName": self.queue_name}

    def additional_information(self) -> dict[str, Any]:
        remaining = self._remaining_count()
        return {"mailQueueName": self.queue_name,
                "initialCount": remaining if self._initial is None else self._initial,
                "remainingCount": remaining}


class DeleteMailsFromMailQueueTask(_CountingQueueTask):
    type = "delete-mails-from-mail-queue"

    def __init__(self, queues: MailQueueFactory, queue_name: str, field: RemoveField, value: str) -> None:
        self.queues = queues
        self.queue_name = queue_name
        self.field = RemoveField(field)
        self.value = value
        self._initial: int | None = None
        self._remaining: int | None = None

    def run(self) -> Result:
        queue = self.queues.get(self.queue_name)
        self._initial = queue.browse_size()
        queue.remove(self.field, self.value)
        self._remaining = queue.browse_size()
        return Result.COMPLETED

    def parameters(self) -> dict[str, Any]:
        return {"mailQueueName": self.queue_name, "field": self.field.value, "value": self.value}

    def additional_information(self) -> dict[str, Any]:
        remaining = self._remaining_count()
        # The filter not used is null, as James's DTO.
        filters = {f.value: self.value if f is self.field else None for f in RemoveField}
        return {"mailQueueName": self.queue_name, **filters,
                "initialCount": remaining if self._initial is None else self._initial,
                "remainingCount": remaining}


class RepublishNotProcessedMailsTask(Task):
    type = "republish-not-processed-mails"

    def __init__(self, queues: MailQueueFactory, queue_name: str, older_than: datetime) -> None:
        self.queues = queues
        self.queue_name = queue_name
        self.older_than = older_than
        self._requeued = 0

    def run(self) -> Result:
        self._requeued = self.queues.get(self.queue_name).republish_not_processed(self.older_than)
        return Result.COMPLETED

    def parameters(self) -> dict[str, Any]:
        return {"mailQueue": self.queue_name, "olderThan": java_instant(self.older_than)}

    def additional_information(self) -> dict[str, Any]:
        return {"mailQueue": self.queue_name, "olderThan": format_instant(self.older_than),
                "nbRequeuedMails": self._requeued}


class BrowseStartUpdateTask(Task):
    """The queue's browse-start update (ADR 0032) now rather than at its 1/pace chance after a dequeue.

    James's details are the queue name only (plus the timestamp every task has): where the browse
    start went is read from the ``browseStart`` table.
    """

    type = "browse-start-update"

    def __init__(self, queues: MailQueueFactory, queue_name: str) -> None:
        self.queues = queues
        self.queue_name = queue_name

    def run(self) -> Result:
        self.queues.get(self.queue_name).update_browse_start()
        return Result.COMPLETED

    def parameters(self) -> dict[str, Any]:
        return {"mailQueue": self.queue_name}

    def additional_information(self) -> dict[str, Any]:
        return {"mailQueue": self.queue_name}


def register(registry: TaskRegistry, queues: MailQueueFactory) -> None:
    registry.register(ClearMailQueueTask.type, lambda p: ClearMailQueueTask(queues, p["mailQueueName"]))
    registry.register(DeleteMailsFromMailQueueTask.type, lambda p: DeleteMailsFromMailQueueTask(
        queues, p["mailQueueName"], RemoveField(p["field"]), p["value"]))
    registry.register(RepublishNotProcessedMailsTask.type, lambda p: RepublishNotProcessedMailsTask(
        queues, p["mailQueue"], datetime.fromisoformat(p["olderThan"])))
    registry.register(BrowseStartUpdateTask.type, lambda p: BrowseStartUpdateTask(queues, p["mailQueue"]))
