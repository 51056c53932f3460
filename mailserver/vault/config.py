"""The vault's settings, James's ``deletedMessageVault.properties`` as environment variables.

``MAILSERVER_VAULT_ENABLED`` (``enabled``, default false as James's sample),
``MAILSERVER_VAULT_RETENTION_PERIOD`` (``retentionPeriod``: ``<N><unit>``, a bare number is days,
default one year = 365.2425 days as Java's ``ChronoUnit.YEARS``) and
``MAILSERVER_VAULT_RESTORE_LOCATION`` (``restoreLocation``, default ``Restored-Messages``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from mailserver.model.james_units import parse_duration

RESTORED_MESSAGES = "Restored-Messages"
ONE_YEAR = timedelta(seconds=31556952)   # ChronoUnit.YEARS, James's default retention
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def parse_retention(raw: str) -> timedelta:
    """James's DurationParser with days as the default unit; ValueError naming the text otherwise."""
    return parse_duration(raw, "days")


@dataclass(frozen=True)
class VaultConfiguration:
    enabled: bool = False
    retention_period: timedelta = ONE_YEAR
    restore_location: str = RESTORED_MESSAGES

    def beginning_of_retention(self, now: datetime) -> datetime:
        return now - self.retention_period

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> VaultConfiguration:
        env = os.environ if env is None else env
        enabled = env.get("MAILSERVER_VAULT_ENABLED", "").strip().lower() or "false"
        if enabled not in _TRUE | _FALSE:
            raise ValueError(f"MAILSERVER_VAULT_ENABLED: {enabled!r} is not a boolean (true/false)")
        retention = env.get("MAILSERVER_VAULT_RETENTION_PERIOD", "").strip()
        try:
            period = parse_retention(retention) if retention else ONE_YEAR
        except ValueError as exc:
            raise ValueError(f"MAILSERVER_VAULT_RETENTION_PERIOD: {exc}") from None
        location = env.get("MAILSERVER_VAULT_RESTORE_LOCATION", "").strip() or RESTORED_MESSAGES
        return cls(enabled in _TRUE, period, location)
