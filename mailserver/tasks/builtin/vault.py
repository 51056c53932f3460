"""Deleted-messages vault tasks with James's types and ``additionalInformation`` wire names.

``deleted-messages-restore`` (``username``, ``successfulRestoreCount``, ``errorRestoreCount``),
``deleted-messages-export`` (``userExportFrom``, ``exportTo``, ``totalExportedMessages``),
``deleted-messages-delete`` (``username``, ``deleteMessageId``) and
``deleted-messages-blob-store-based-garbage-collection`` (``beginningOfRetentionPeriod``,
``deletedBuckets``). The purge's retention start is fixed when the task is created (James), so
the node that runs it deletes what the submitter asked for.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mailserver.mailbox.manager import MailboxManager
from mailserver.mailbox.subscriptions import SubscriptionStore
from mailserver.model.address import MailAddress, Username
from mailserver.model.ids import MessageId
from mailserver.queue.api import SPOOL, MailQueueFactory
from mailserver.tasks.api import Result, Task
from mailserver.tasks.registry import TaskRegistry
from mailserver.vault.api import DeletedMessageVault
from mailserver.vault.config import VaultConfiguration
from mailserver.vault.export import export
from mailserver.vault.model import parse_zoned
from mailserver.vault.query import Query
from mailserver.vault.restore import RestoreResult, restore


@dataclass
class VaultParts:
    """What the vault routes and tasks act on."""

    vault: DeletedMessageVault
    manager: MailboxManager
    config: VaultConfiguration
    queues: MailQueueFactory | None = None            # export mails through the spool
    postmaster: MailAddress = field(default_factory=lambda: MailAddress.of("postmaster@localhost"))
    subscriptions: SubscriptionStore | None = None    # the restore mailbox is subscribed when created
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))


def java_zoned_string(value: datetime) -> str:
    """Java's ``ZonedDateTime.toString()`` in UTC: fraction in groups of 3 digits, ``:ss`` dropped when zero."""
    value = value.astimezone(UTC)
    text = value.strftime("%Y-%m-%dT%H:%M")
    if value.second or value.microsecond:
        text += f":{value.second:02d}"
        micros = value.microsecond
        if micros:
            text += f".{micros // 1000:03d}" if micros % 1000 == 0 else f".{micros:06d}"
    return text + "Z"


class DeletedMessagesVaultRestoreTask(Task):
    type = "deleted-messages-restore"

    def __init__(self, parts: VaultParts, username: Username, query: Query) -> None:
        self.parts, self.username, self.query = parts, username, query
        self._lock = threading.Lock()
        self._succeeded = self._failed = 0

    def run(self) -> Result:
        for outcome in restore(self.parts.vault, self.parts.manager, self.username, self.query,
                               self.parts.config.restore_location, self.parts.subscriptions):
            with self._lock:
                if outcome is RestoreResult.SUCCEED:
                    self._succeeded += 1
                elif outcome is RestoreResult.FAILED:
                    self._failed += 1
            if self.cancel_requested:
                break
        return Result.FAILED if self._failed else Result.COMPLETED

    def parameters(self) -> dict[str, Any]:
        return {"username": self.username.value, "query": self.query.to_json()}

    def additional_information(self) -> dict[str, Any]:
        with self._lock:
            return {"username": self.username.value, "successfulRestoreCount": self._succeeded,
                    "errorRestoreCount": self._failed}


class DeletedMessagesVaultExportTask(Task):
    type = "deleted-messages-export"

    def __init__(self, parts: VaultParts, username: Username, query: Query, export_to: MailAddress) -> None:
        self.parts, self.username, self.query, self.export_to = parts, username, query, export_to
        self._lock = threading.Lock()
        self._exported = 0

    def _matched(self) -> None:
        with self._lock:
            self._exported += 1

    def run(self) -> Result:
        if self.parts.queues is None:
            raise RuntimeError("no mail queue on this node: the export cannot be mailed")
        export(self.parts.vault, self.username, self.query, self.export_to, self.parts.postmaster,
               self.parts.queues.get(SPOOL), self._matched)
        return Result.COMPLETED

    def parameters(self) -> dict[str, Any]:
        return {"userExportFrom": self.username.value, "exportTo": str(self.export_to),
                "query": self.query.to_json()}

    def additional_information(self) -> dict[str, Any]:
        with self._lock:
            return {"userExportFrom": self.username.value, "exportTo": str(self.export_to),
                    "totalExportedMessages": self._exported}


class DeletedMessagesVaultDeleteTask(Task):
    type = "deleted-messages-delete"

    def __init__(self, parts: VaultParts, username: Username, message_id: MessageId) -> None:
        self.parts, self.username, self.message_id = parts, username, message_id

    def run(self) -> Result:
        self.parts.vault.delete(self.username, self.message_id)   # an unknown entry completes too (James)
        return Result.COMPLETED

    def parameters(self) -> dict[str, Any]:
        return {"username": self.username.value, "deleteMessageId": str(self.message_id)}

    def additional_information(self) -> dict[str, Any]:
        return {"username": self.username.value, "deleteMessageId": str(self.message_id)}


class BlobStoreVaultGarbageCollectionTask(Task):
    type = "deleted-messages-blob-store-based-garbage-collection"

    def __init__(self, parts: VaultParts, beginning_of_retention: datetime | None = None) -> None:
        self.parts = parts
        self.beginning = beginning_of_retention or parts.config.beginning_of_retention(parts.clock())
        self._lock = threading.Lock()
        self._deleted: list[str] = []

    def run(self) -> Result:
        for bucket in self.parts.vault.expired_buckets(self.beginning):
            if self.cancel_requested:
                break
            self.parts.vault.delete_expired_bucket(bucket)
            with self._lock:
                self._deleted.append(bucket)
        return Result.COMPLETED

    def parameters(self) -> dict[str, Any]:
        return {"beginningOfRetentionPeriod": self.beginning.isoformat()}

    def additional_information(self) -> dict[str, Any]:
        with self._lock:
            return {"beginningOfRetentionPeriod": java_zoned_string(self.beginning),
                    "deletedBuckets": list(self._deleted)}


def register(registry: TaskRegistry, parts: VaultParts) -> None:
    registry.register(DeletedMessagesVaultRestoreTask.type, lambda p: DeletedMessagesVaultRestoreTask(
        parts, Username.of(p["username"]), Query.parse(p["query"])))
    registry.register(DeletedMessagesVaultExportTask.type, lambda p: DeletedMessagesVaultExportTask(
        parts, Username.of(p["userExportFrom"]), Query.parse(p["query"]), MailAddress.of(p["exportTo"])))
    registry.register(DeletedMessagesVaultDeleteTask.type, lambda p: DeletedMessagesVaultDeleteTask(
        parts, Username.of(p["username"]), MessageId.of(p["deleteMessageId"])))
    registry.register(BlobStoreVaultGarbageCollectionTask.type, lambda p: BlobStoreVaultGarbageCollectionTask(
        parts, parse_zoned(p["beginningOfRetentionPeriod"])))
