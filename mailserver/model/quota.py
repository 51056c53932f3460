"""Quota roots, components, types and scopes with James's string forms (see docs/compatibility.md)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

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

    @property
    def event_name(self) -> str:
        """The name in event JSON (James's ``Quota.Scope`` enum): ``Global``, ``Domain``, ``User``."""
        return self.value.capitalize()

    @classmethod
    def from_event_name(cls, name: str) -> QuotaScope:
        scope = next((s for s in cls if s.event_name == name), None)
        if scope is None:
            raise ValueError(f"unknown quota scope {name!r}: expected Global, Domain or User")
        return scope


@dataclass(frozen=True, order=True)
class QuotaRoot:
    """``#private&<user>``: one root per user, owning every personal mailbox."""

    value: str
    domain: Domain | None

    @classmethod
    def for_user(cls, user: Username) -> QuotaRoot:
        return cls(f"{PRIVATE_NAMESPACE}&{user}", user.domain)

    @classmethod
    def from_json(cls, value: Any) -> QuotaRoot:
        """``<namespace>&<user>`` as James's DefaultQuotaRootDeserializer reads it (domain from the user)."""
        if not isinstance(value, str) or "&" not in value:
            raise ValueError(f"quota root {value!r}: expected '<namespace>&<user>'")
        return cls(value, Username.of(value.split("&")[1]).domain)

    def to_json(self) -> str:
        return self.value

    def as_string(self) -> str:
        """The identifier of ``quotaCurrentValue`` rows (James's ``QuotaRoot.asString()``)."""
        return f"{self.value}@{self.domain}" if self.domain else self.value


GLOBAL_IDENTIFIER = "global"   # the ``identifier`` of global rows in ``quotaLimit``


@dataclass(frozen=True, order=True)
class LimitKey:
    """Where a limit is defined: James's ``(quotaScope, identifier)`` partition of ``quotaLimit``.

    User limits are keyed by ``QuotaRoot.getValue()`` (``#private&bob@example.com``), domain limits
    by the domain, the global ones by ``global``.
    """

    scope: QuotaScope
    identifier: str

    @classmethod
    def user(cls, root: QuotaRoot) -> LimitKey:
        return cls(QuotaScope.USER, root.value)

    @classmethod
    def domain(cls, domain: Domain) -> LimitKey:
        return cls(QuotaScope.DOMAIN, str(domain))

    @classmethod
    def global_(cls) -> LimitKey:
        return cls(QuotaScope.GLOBAL, GLOBAL_IDENTIFIER)


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


UNLIMITED = -1   # what James stores and answers for "no limit" (null means "not set at this scope")
PRECEDENCE = (QuotaScope.USER, QuotaScope.DOMAIN, QuotaScope.GLOBAL)


def effective_limits(by_scope: dict[QuotaScope, QuotaLimits]) -> QuotaLimits:
    """Per type, the first limit defined in user, domain, global order (James's MaxQuotaManager).

    A user-level ``-1`` therefore lifts a domain or global limit, as in James.
    """
    scopes = [by_scope[s] for s in PRECEDENCE if s in by_scope]
    return QuotaLimits(next((s.count for s in scopes if s.count is not None), None),
                       next((s.size for s in scopes if s.size is not None), None))
