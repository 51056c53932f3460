"""James's ``SolveMailboxFlagInconsistencyTask`` (``POST /mailboxes?task=SolveMessageDeletedInconsistencies``
or ``?task=SolveMessageRecentInconsistencies``): rewrite, mailbox by mailbox, the list of the
messages flagged ``\\Deleted`` (``messageDeleted``) or ``\\Recent`` (``mailboxRecents``) from the
messages' own flags (``messageIdTable``).

Its JSON is James's: type ``solve-mailbox-flag-inconsistencies``, parameter ``flagName``, details
``processedMailboxEntries`` (every mailbox looked at, failed ones too), ``errors`` (the mailbox ids
that failed) and ``targetFlag``. A failed mailbox ends the task ``failed`` (James: ``PARTIAL``).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from mailserver.mailbox.manager import MailboxManager
from mailserver.model.flags import SystemFlag
from mailserver.tasks.api import Result, Task
from mailserver.tasks.registry import TaskRegistry

log = logging.getLogger(__name__)
TARGET_FLAGS = {"DELETED": SystemFlag.DELETED, "RECENT": SystemFlag.RECENT}   # James's TargetFlag
# The WebAdmin ``?task=`` value of each target flag.
SELECTORS = {"SolveMessageDeletedInconsistencies": "DELETED", "SolveMessageRecentInconsistencies": "RECENT"}


class SolveMailboxFlagInconsistencyTask(Task):
    type = "solve-mailbox-flag-inconsistencies"

    def __init__(self, mailboxes: MailboxManager, target_flag: str) -> None:
        if target_flag not in TARGET_FLAGS:
            raise ValueError(f"Invalid target flag: {target_flag}")
        self.mailboxes, self.target_flag = mailboxes, target_flag
        self._lock = threading.Lock()
        self._processed = 0
        self._errors: list[str] = []

    def run(self) -> Result:
        flag = TARGET_FLAGS[self.target_flag]
        for mailbox in self.mailboxes.mailboxes.all_mailboxes():
            if self.cancel_requested:
                return Result.COMPLETED   # the worker records the cancellation
            try:
                self.mailboxes.messages.rebuild_flag_index(mailbox.id, flag)
            except Exception:   # counted: the other mailboxes are still fixed
                log.exception("fixing the %s index of mailbox %s failed", self.target_flag, mailbox.id)
                with self._lock:
                    self._errors.append(str(mailbox.id))
            with self._lock:
                self._processed += 1
        return Result.FAILED if self._errors else Result.COMPLETED

    def parameters(self) -> dict[str, Any]:
        return {"flagName": self.target_flag}

    def additional_information(self) -> dict[str, Any]:
        with self._lock:
            return {"processedMailboxEntries": self._processed, "errors": list(self._errors),
                    "targetFlag": self.target_flag}


def register(registry: TaskRegistry, mailboxes: MailboxManager) -> None:
    registry.register(SolveMailboxFlagInconsistencyTask.type,
                      lambda p: SolveMailboxFlagInconsistencyTask(mailboxes, p["flagName"]))
