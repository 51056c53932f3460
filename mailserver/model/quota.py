"""Quota roots, components, types and scopes with James's string forms (see docs/compatibility.md)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from mailserver.model.address import Domain, Username
from mailserver.model.mailbox import PRIVATE_NAMESPACE


class QuotaComponent(StrEnum):
    MAILBOX = "MAILBOX"
    SIEVE = "SIEVE"
    JMAP_UPLOADS = "JMAP_UPLOADS"


class QuotaType(StrEnum):
    COUNT = "count"
    SIZE = "size"


class QuotaScope(StrEnum):
    GLOBAL = "global"
    DOMAIN = "domain"
    USER = "user"


@dataclass(frozen=True, order=True)
class QuotaRoot:
    """``#private&<user>``: one root per user, owning every personal mailbox."""

    value: str
    domain: Domain | None

    @classmethod
    def for_user(cls, user: Username) -> QuotaRoot:
        return cls(f"{PRIVATE_NAMESPACE}&{user}", user.domain)

    def as_string(self) -> str:
        """The identifier of ``quotaCurrentValue`` rows (James's ``QuotaRoot.asString()``)."""
        return f"{self.value}@{self.domain}" if self.domain else self.value


@dataclass(frozen=True)
class QuotaUsage:
    count: int
    size: int

    def __add__(self, other: QuotaUsage) -> QuotaUsage:
        return QuotaUsage(self.count + other.count, self.size + other.size)

    def __neg__(self) -> QuotaUsage:
        return QuotaUsage(-self.count, -self.size)


@dataclass(frozen=True)
class QuotaLimits:
    """None means unlimited; so does a negative value (James stores -1 for "unlimited")."""

    count: int | None = None
    size: int | None = None

    def exceeded_by(self, usage: QuotaUsage) -> list[QuotaType]:
        over = []
        if self.count is not None and self.count >= 0 and usage.count > self.count:
            over.append(QuotaType.COUNT)
        if self.size is not None and self.size >= 0 and usage.size > self.size:
            over.append(QuotaType.SIZE)
        return over

    @property
    def unlimited(self) -> bool:
        return all(v is None or v < 0 for v in (self.count, self.size))
