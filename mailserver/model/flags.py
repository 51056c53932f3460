"""IMAP message flags: the six system flags James stores as booleans, plus user keywords."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from mailserver.model.jsonvalues import Fields


class SystemFlag(StrEnum):
    ANSWERED = "Answered"
    DELETED = "Deleted"
    DRAFT = "Draft"
    FLAGGED = "Flagged"
    RECENT = "Recent"
    SEEN = "Seen"

    @property
    def column(self) -> str:
        """Cassandra column name (``flagSeen`` ... stored lower-cased)."""
        return "flag" + self.value.lower()


class FlagsUpdateMode(StrEnum):
    ADD = "ADD"
    REMOVE = "REMOVE"
    REPLACE = "REPLACE"


@dataclass(frozen=True)
class Flags:
    system: frozenset[SystemFlag] = field(default_factory=frozenset)
    user: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, *system: SystemFlag, user: tuple[str, ...] | list[str] | set[str] = ()) -> Flags:
        return cls(frozenset(system), frozenset(user))

    def has(self, flag: SystemFlag) -> bool:
        return flag in self.system

    def apply(self, mode: FlagsUpdateMode, change: Flags) -> Flags:
        if mode is FlagsUpdateMode.REPLACE:
            return change
        if mode is FlagsUpdateMode.ADD:
            return Flags(self.system | change.system, self.user | change.user)
        return Flags(self.system - change.system, self.user - change.user)

    def to_json(self) -> dict[str, list[str]]:
        return {"systemFlags": sorted(f.value for f in self.system), "userFlags": sorted(self.user)}

    @classmethod
    def from_json(cls, data: Any) -> Flags:
        """James's flags object; a missing list is empty, an unknown system flag is a ValueError."""
        fields = Fields(data, "flags")
        system = fields.texts("systemFlags") if fields.has("systemFlags") else []
        user = fields.texts("userFlags") if fields.has("userFlags") else []
        try:
            return cls(frozenset(SystemFlag(v) for v in system), frozenset(user))
        except ValueError:
            raise ValueError(f"flags: unknown system flag in {system!r}") from None
