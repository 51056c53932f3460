"""James's task DTO (the ``task`` of a ``task-manager-created`` event) from our parameters, and back.

James rebuilds a task from its DTO: ``{"type": <task type>, <fields>}``. Where our parameters
name a field differently, a ``Renaming`` maps it both ways; other types are written as
``{"type", **parameters}``, which James reads for the types whose fields we named as it does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Renaming:
    """Our parameter name -> James's DTO field name (the other parameters keep their name)."""

    fields: Mapping[str, str]

    def to_james(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        return {self.fields.get(name, name): value for name, value in parameters.items()}

    def from_james(self, dto: Mapping[str, Any]) -> dict[str, Any]:
        ours = {james: name for name, james in self.fields.items()}
        return {ours.get(name, name): value for name, value in dto.items()}


# Checked against James's serialization tests (ClearMailQueueTaskTest, MigrationTaskSerializationTest).
RENAMINGS: dict[str, Renaming] = {
    "clear-mail-queue": Renaming({"mailQueueName": "queue"}),
    "cassandra-migration": Renaming({"toVersion": "targetVersion"}),
}


def to_james_task(type_: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Absent values are omitted, as James's serializer does (NON_ABSENT)."""
    renaming = RENAMINGS.get(type_)
    fields = renaming.to_james(parameters) if renaming else dict(parameters)
    return {"type": type_, **{name: value for name, value in fields.items() if value is not None}}


def from_james_task(dto: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """(task type, our parameters) of a James task DTO."""
    fields = {name: value for name, value in dto.items() if name != "type"}
    type_ = str(dto["type"])
    renaming = RENAMINGS.get(type_)
    return type_, renaming.from_james(fields) if renaming else fields
