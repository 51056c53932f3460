"""The capabilities this server announces and the core limits it enforces (RFC 8620 2, RFC 8621 1.3)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CORE = "urn:ietf:params:jmap:core"
MAIL = "urn:ietf:params:jmap:mail"
SUBMISSION = "urn:ietf:params:jmap:submission"
VACATION_RESPONSE = "urn:ietf:params:jmap:vacationresponse"
WEBSOCKET = "urn:ietf:params:jmap:websocket"   # announced only: no method needs it in ``using``
KNOWN = frozenset({CORE, MAIL, SUBMISSION, VACATION_RESPONSE, WEBSOCKET})

# James's defaults.
MAX_SIZE_UPLOAD = 30 * 1024 * 1024
MAX_CONCURRENT_UPLOAD = 4
MAX_SIZE_MAILBOX_NAME = 200
EMAIL_SORT_OPTIONS = ("receivedAt",)


@dataclass(frozen=True)
class CoreLimits:
    max_size_request: int = 10 * 1024 * 1024
    max_calls_in_request: int = 16
    max_objects_in_get: int = 500
    max_objects_in_set: int = 500
    max_concurrent_requests: int = 4
    max_size_upload: int = MAX_SIZE_UPLOAD
    max_concurrent_upload: int = MAX_CONCURRENT_UPLOAD

    def capability(self) -> dict[str, Any]:
        return {
            "maxSizeUpload": self.max_size_upload,
            "maxConcurrentUpload": self.max_concurrent_upload,
            "maxSizeRequest": self.max_size_request,
            "maxConcurrentRequests": self.max_concurrent_requests,
            "maxCallsInRequest": self.max_calls_in_request,
            "maxObjectsInGet": self.max_objects_in_get,
            "maxObjectsInSet": self.max_objects_in_set,
            "collationAlgorithms": ["i;unicode-casemap"],
        }


def mail_account_capability() -> dict[str, Any]:
    return {
        "maxMailboxesPerEmail": None,
        "maxMailboxDepth": None,
        "maxSizeMailboxName": MAX_SIZE_MAILBOX_NAME,
        "maxSizeAttachmentsPerEmail": MAX_SIZE_UPLOAD,
        "emailQuerySortOptions": list(EMAIL_SORT_OPTIONS),
        "mayCreateTopLevelMailbox": True,
    }


def submission_account_capability() -> dict[str, Any]:
    """No delayed sending (``holdFor`` / ``holdUntil`` are refused), no SMTP extension offered."""
    return {"maxDelayedSend": 0, "submissionExtensions": {}}
