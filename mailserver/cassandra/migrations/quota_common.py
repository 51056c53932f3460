"""Writes into the mutualised quota tables shared by migrations 12->13 .. 14->15."""

from __future__ import annotations

from mailserver.cassandra.session import CassandraSession
from mailserver.model.address import Username
from mailserver.model.mailbox import PRIVATE_NAMESPACE
from mailserver.model.quota import QuotaComponent, QuotaRoot, QuotaScope, QuotaType

SELECT_CURRENT = ("SELECT currentValue FROM quotaCurrentValue "
                  "WHERE identifier = ? AND quotaComponent = ? AND quotaType = ?")
INCREMENT_CURRENT = ("UPDATE quotaCurrentValue SET currentValue = currentValue + ? "
                     "WHERE identifier = ? AND quotaComponent = ? AND quotaType = ?")
INSERT_LIMIT = ("INSERT INTO quotaLimit (quotaScope, identifier, quotaComponent, quotaType, quotaLimit) "
                "VALUES (?, ?, ?, ?, ?)")


def set_current_value(session: CassandraSession, identifier: str, component: QuotaComponent,
                      quota_type: QuotaType, target: int) -> bool:
    """Counters cannot be overwritten: add (target - stored), only when they differ (James's
    setCurrentQuotas). Idempotent, unlike an increment by the legacy value. True when written."""
    row = session.one(SELECT_CURRENT, (identifier, component.value, quota_type.value))
    stored = (row or {}).get("currentvalue") or 0
    if stored == target:
        return False
    session.execute(INCREMENT_CURRENT, (target - stored, identifier, component.value, quota_type.value))
    return True


def set_limit(session: CassandraSession, scope: QuotaScope, identifier: str, component: QuotaComponent,
              quota_type: QuotaType, value: int | None) -> bool:
    """Copied verbatim: legacy and mutualised tables share James's QuotaCodec (-1 = unlimited).
    A null legacy value means "no limit at this scope": nothing is written. True when written."""
    if value is None:
        return False
    session.execute(INSERT_LIMIT, (scope.value, identifier, component.value, quota_type.value, value))
    return True


def user_quota_root(value: str) -> QuotaRoot:
    """The legacy key is ``QuotaRoot.getValue()`` (``#private&<user>``); the domain comes from the user."""
    prefix = f"{PRIVATE_NAMESPACE}&"
    if not value.startswith(prefix):
        raise ValueError(f"not a user quota root: {value!r}")
    return QuotaRoot(value, Username.of(value[len(prefix):]).domain)
