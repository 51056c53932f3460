"""The vault's settings, James's ``deletedMessageVault.properties`` as environment variables.

``MAILSERVER_VAULT_ENABLED`` (``enabled``, default false as James's sample),
``MAILSERVER_VAULT_RETENTION_PERIOD`` (``retentionPeriod``: ``<N><unit>``, a bare number is days,
default one year = 365.2425 days as Java's ``ChronoUnit.YEARS``) and
``MAILSERVER_VAULT_RESTORE_LOCATION`` (``restoreLocation``, default ``Restored-Messages``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from mailserver.model.james_units import ONE_YEAR, parse_duration

RESTORED_MESSAGES = "Restored-Messages"


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
        from mailserver.settings import VaultSettings  # here: Spark jobs import this module without it

        s = VaultSettings.from_env(env)
        return cls(s.enabled, s.retention_period, s.restore_location)
