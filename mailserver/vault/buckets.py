"""The vault's month buckets (James's ``BucketNameGenerator``, in UTC): naming and expiry.

Standard library only: the purge Spark job ships this module to its executors.
"""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime

log = logging.getLogger(__name__)

_BUCKET = re.compile(r"^deleted-messages-([0-9]{4})-([0-9]{2})-01$")


def bucket_for(moment: datetime) -> str:
    """The vault bucket of the month of ``moment`` (UTC)."""
    return f"deleted-messages-{moment.astimezone(UTC):%Y-%m}-01"


def bucket_end(bucket: str) -> datetime | None:
    """First instant after the bucket's month (UTC); None for a name that is not a vault bucket."""
    match = _BUCKET.match(bucket)
    if match is None:
        return None
    year, month = int(match.group(1)), int(match.group(2))
    if not 1 <= month <= 12:
        return None
    return datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)


def is_expired(bucket: str, beginning_of_retention: datetime) -> bool:
    """Whether the whole month ended before the retention period began; other names are kept (logged)."""
    end = bucket_end(bucket)
    if end is None:
        log.error("vault bucket name %r does not follow deleted-messages-YYYY-MM-01: kept", bucket)
        return False
    return end < beginning_of_retention
