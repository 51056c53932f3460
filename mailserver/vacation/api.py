"""James's ``Vacation``, ``VacationPatch`` and ``VacationRepository`` (``org.apache.james.vacation.api``).

A patch names the fields it changes: a field absent is kept, a field set to None is removed
(James's ``ValuePatch`` keep / remove / modifyTo). An account without settings reads as the
disabled, empty vacation (James's ``Vacation.DEFAULT_DISABLED``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from datetime import datetime


@dataclass(frozen=True)
class Vacation:
    enabled: bool = False
    from_date: datetime | None = None   # timezone-aware: its offset is kept, as James's ZonedDateTime
    to_date: datetime | None = None
    subject: str | None = None
    text_body: str | None = None
    html_body: str | None = None


DISABLED = Vacation()
FIELDS = frozenset(f.name for f in fields(Vacation))
# What DELETE writes: disabled and every other field removed.
CLEARED: Mapping[str, object] = {name: (False if name == "enabled" else None) for name in FIELDS}


def patched(vacation: Vacation, patch: Mapping[str, object]) -> Vacation:
    unknown = set(patch) - FIELDS
    if unknown:
        raise ValueError(f"not vacation fields: {sorted(unknown)}")
    changes = dict(patch)
    if "enabled" in changes and changes["enabled"] is None:
        changes["enabled"] = False   # a removed flag reads false, as James's row.getBoolean
    return replace(vacation, **changes)   # type: ignore[arg-type]


class VacationRepository(ABC):
    @abstractmethod
    def get(self, account_id: str) -> Vacation: ...

    @abstractmethod
    def modify(self, account_id: str, patch: Mapping[str, object]) -> None: ...
