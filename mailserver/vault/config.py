"""The vault's settings, James's ``deletedMessageVault.properties`` as environment variables.

``MAILSERVER_VAULT_ENABLED`` (``enabled``, default false as James's sample),
``MAILSERVER_VAULT_RETENTION_PERIOD`` (``retentionPeriod``: ``<N><unit>``, a bare number is days,
default one year = 365.2425 days as Java's ``ChronoUnit.YEARS``) and
``MAILSERVER_VAULT_RESTORE_LOCATION`` (``restoreLocation``, default ``Restored-Messages``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

RESTORED_MESSAGES = "Restored-Messages"
ONE_YEAR = timedelta(seconds=31556952)
_DURATION = re.compile(r"\s*([0-9]+)\s*([a-zA-Z]*)\s*")
_UNIT_SECONDS = {
    **dict.fromkeys(("ms", "msec", "msecs"), 0.001),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60),
    **dict.fromkeys(("h", "hour", "hours"), 3600),
    **dict.fromkeys(("d", "day", "days"), 86400),
    **dict.fromkeys(("w", "week", "weeks"), 7 * 86400),
    **dict.fromkeys(("month", "months"), 31556952 // 12),
    **dict.fromkeys(("y", "year", "years"), 31556952),
}
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def parse_retention(raw: str) -> timedelta:
    """James's DurationParser with days as the default unit; ValueError on anything else."""
    match = _DURATION.fullmatch(raw)
    if match is None:
        raise ValueError(f"retention period {raw!r} is not <number>[unit]")
    unit = match.group(2).lower() or "days"
    if unit not in _UNIT_SECONDS:
        raise ValueError(f"retention period {raw!r}: unknown unit {match.group(2)!r}")
    return timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[unit])


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
