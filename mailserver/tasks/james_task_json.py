"""James's task DTOs (the ``task`` of a ``task-manager-created`` event) and additional-information
DTOs (of the ``task-manager-updated`` and terminal events), from ours and back.

James rebuilds a task from its DTO: ``{"type": <task type>, <fields>}``, and refuses a field it
does not know. Where our parameters name or shape a field differently, a converter maps them both
ways; other types are written as ``{"type", **parameters}``, which James reads for the types whose
fields we named as it does. Our ``additionalInformation`` is James's WebAdmin form (what
``/tasks/{id}`` shows); a few types have another form in James's event store, mapped by
``to_event_information`` / ``from_event_information``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol


class TaskDto(Protocol):
    def to_james(self, parameters: Mapping[str, Any]) -> dict[str, Any]: ...

    def from_james(self, dto: Mapping[str, Any]) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Renaming:
    """Our name -> James's field name (the other fields keep their name); ``dropped``: ours only."""

    fields: Mapping[str, str]
    dropped: tuple[str, ...] = ()

    def to_james(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        return {self.fields.get(name, name): value for name, value in parameters.items() if name not in self.dropped}

    def from_james(self, dto: Mapping[str, Any]) -> dict[str, Any]:
        ours = {james: name for name, james in self.fields.items()}
        return {ours.get(name, name): value for name, value in dto.items()}


class QueueFilter:
    """``delete-mails-from-mail-queue``: our ``field``/``value`` pair is James's ``sender``, ``name``
    or ``recipient`` field."""

    FIELDS = ("sender", "name", "recipient")

    def to_james(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        return {"queue": parameters["mailQueueName"], str(parameters["field"]): parameters["value"]}

    def from_james(self, dto: Mapping[str, Any]) -> dict[str, Any]:
        field = next((f for f in self.FIELDS if dto.get(f) is not None), None)
        return {"mailQueueName": dto.get("queue"), "field": field, "value": dto.get(field) if field else None}


class RunningOptions:
    """Our flat ``limit`` is James's ``runningOptions.limit`` (event dead-letters redelivery)."""

    def to_james(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        flat = {name: value for name, value in parameters.items() if name != "limit"}
        limit = parameters.get("limit")
        return {**flat, "runningOptions": {} if limit is None else {"limit": limit}}

    def from_james(self, dto: Mapping[str, Any]) -> dict[str, Any]:
        options = dto.get("runningOptions") or {}
        return {**{n: v for n, v in dto.items() if n != "runningOptions"}, "limit": options.get("limit")}


@dataclass(frozen=True)
class RepositoryPath:
    """Our repository ``url`` is James's ``MailRepositoryPath`` (the url without its protocol),
    under ``field``; ``consume``: the reprocessing tasks always remove what they reprocess."""

    field: str
    consume: bool = False

    def to_james(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        url = str(parameters["url"])
        fields = {name: value for name, value in parameters.items() if name != "url"}
        path = url.split("://", 1)[1] if "://" in url else url
        return {self.field: path, **fields, **({"consume": True} if self.consume else {})}

    def from_james(self, dto: Mapping[str, Any]) -> dict[str, Any]:
        return {"repositoryPath" if name == self.field else name: value
                for name, value in dto.items() if name != "consume"}


# Checked against James's serialization tests (ClearMailQueueTaskTest, DeleteMailsFromMailQueueTaskTest,
# ClearMailRepositoryTaskTest, Reprocessing*TaskTest, MigrationTaskSerializationTest,
# EventDeadLettersRedeliverTaskTest, DeletedMessagesVault*TaskSerializationTest, BlobStoreVaultGarbageCollection...).
TASK_DTOS: dict[str, TaskDto] = {
    "clear-mail-queue": Renaming({"mailQueueName": "queue"}),
    "delete-mails-from-mail-queue": QueueFilter(),
    "cassandra-migration": Renaming({"toVersion": "targetVersion"}),
    "clear-mail-repository": RepositoryPath("mailRepositoryPath"),
    "reprocessing-all": RepositoryPath("repositoryPath", consume=True),
    "reprocessing-one": RepositoryPath("repositoryPath", consume=True),
    "event-dead-letters-redeliver-all": RunningOptions(),
    "event-dead-letters-redeliver-group": RunningOptions(),
    "deleted-messages-restore": Renaming({"username": "userToRestore"}),
    "deleted-messages-export": Renaming({"query": "exportQuery"}),
    "deleted-messages-delete": Renaming({"username": "userName", "deleteMessageId": "messageId"}),
    # James's task has no field: the retention horizon is computed when it runs.
    "deleted-messages-blob-store-based-garbage-collection": Renaming({}, dropped=("beginningOfRetentionPeriod",)),
}

# Our (WebAdmin) additionalInformation field -> the event store's, where James's two DTOs differ
# (WebAdmin*AdditionalInformationDTO against *TaskAdditionalInformationDTO).
EVENT_INFORMATION: dict[str, Renaming] = {
    "cassandra-migration": Renaming({"toVersion": "targetVersion"}),
    "delete-mails-from-mail-queue": Renaming({"mailQueueName": "queue"}),
    "clear-mail-repository": Renaming({"repositoryPath": "mailRepositoryPath"}),
    "deleted-messages-restore": Renaming({"username": "user"}),
    "deleted-messages-delete": Renaming({"username": "userName", "deleteMessageId": "messageId"}),
}


def to_james_task(type_: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Absent values are omitted, as James's serializer does (NON_ABSENT)."""
    converter = TASK_DTOS.get(type_)
    fields = converter.to_james(parameters) if converter else dict(parameters)
    return {"type": type_, **{name: value for name, value in fields.items() if value is not None}}


def from_james_task(dto: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """(task type, our parameters) of a James task DTO."""
    fields = {name: value for name, value in dto.items() if name != "type"}
    type_ = str(dto["type"])
    converter = TASK_DTOS.get(type_)
    return type_, converter.from_james(fields) if converter else fields


def to_event_information(information: Mapping[str, Any]) -> dict[str, Any]:
    """Our additionalInformation (with its ``type``) as James's event store holds it."""
    renaming = EVENT_INFORMATION.get(str(information.get("type")))
    return renaming.to_james(information) if renaming else dict(information)


def from_event_information(information: Mapping[str, Any]) -> dict[str, Any]:
    renaming = EVENT_INFORMATION.get(str(information.get("type")))
    return renaming.from_james(information) if renaming else dict(information)
