"""The deleted messages vault, James's deletedMessageVault.properties."""

from __future__ import annotations

from mailserver.model.james_units import ONE_YEAR

from .base import EnvironmentSettings, setting
from .values import Days, Flag


class VaultSettings(EnvironmentSettings):
    enabled: Flag = setting("MAILSERVER_VAULT_ENABLED", False, "Keep deleted messages (James's enabled).", "boolean")
    retention_period: Days = setting("MAILSERVER_VAULT_RETENTION_PERIOD", ONE_YEAR, "How long they are kept "
                                     "(James's retentionPeriod).", "duration (bare number: days)",
                                     shown_default="1y (365.2425 days)")
    restore_location: str = setting("MAILSERVER_VAULT_RESTORE_LOCATION", "Restored-Messages", "Mailbox restored "
                                    "messages go to (James's restoreLocation).", "text")
