"""A SetError (RFC 8620 5.3): one object of a ``/set`` or ``/import`` call refused, the rest go on."""

from __future__ import annotations

from typing import Any


class SetError(Exception):
    def __init__(self, type_: str, description: str, properties: list[str] | None = None,
                 **extra: Any) -> None:
        super().__init__(description)
        self.body: dict[str, Any] = {"type": type_, "description": description, **extra}
        if properties is not None:
            self.body["properties"] = properties
