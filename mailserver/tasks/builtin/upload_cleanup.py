"""James's ``UploadRepositoryCleanupTask`` (``DELETE /jmap/uploads?scope=expired``): delete the JMAP
uploads made more than seven days ago (James's ``EXPIRE_DURATION``), content and record, of every user.

Its details are James's: the ``scope`` only (``expired``), no counters. A failure ends the task
``failed`` (James: ``PARTIAL``); what was deleted stays deleted and a re-run finds the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from mailserver.jmap.uploads import UploadRepository
from mailserver.tasks.api import Result, Task
from mailserver.tasks.registry import TaskRegistry

log = logging.getLogger(__name__)
EXPIRE_DURATION = timedelta(days=7)
SCOPES = ("expired",)   # James's CleanupScope, by its lower-cased name


def scope_of(raw: str | None) -> str | None:
    """The scope ``raw`` names, case-insensitively as James's ``CleanupScope.from``; None when none."""
    return next((scope for scope in SCOPES if raw is not None and raw.lower() == scope), None)


def _now() -> datetime:
    return datetime.now(UTC)


class UploadRepositoryCleanupTask(Task):
    type = "UploadRepositoryCleanupTask"

    def __init__(self, uploads: UploadRepository, scope: str = "expired",
                 clock: Callable[[], datetime] = _now) -> None:
        self.uploads, self.scope, self.clock = uploads, scope, clock

    def run(self) -> Result:
        try:
            deleted = self.uploads.delete_uploaded_before(self.clock() - EXPIRE_DURATION)
        except Exception:
            log.exception("cleaning the upload repository failed")
            return Result.FAILED
        log.info("%d expired JMAP uploads deleted", deleted)
        return Result.COMPLETED

    def parameters(self) -> dict[str, Any]:
        return {"scope": self.scope}

    def additional_information(self) -> dict[str, Any]:
        return {"scope": self.scope}


def register(registry: TaskRegistry, uploads: UploadRepository) -> None:
    registry.register(UploadRepositoryCleanupTask.type,
                      lambda p: UploadRepositoryCleanupTask(uploads, scope_of(p.get("scope")) or "expired"))
