"""The session resource (RFC 8620 2): the capabilities, the user's account and the URLs to use."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from mailserver.jmap.account import account_id
from mailserver.jmap.capabilities import (
    CORE,
    MAIL,
    SUBMISSION,
    VACATION_RESPONSE,
    WEBSOCKET,
    CoreLimits,
    mail_account_capability,
    submission_account_capability,
)
from mailserver.model.address import Username


def session(user: Username, limits: CoreLimits, base_url: str, *, submission: bool = False,
            vacation_response: bool = False, websocket_url: str | None = None) -> dict[str, Any]:
    """``submission``: EmailSubmission is offered (the server has a spool to send through);
    ``vacation_response``: VacationResponse is (the server has a vacation repository);
    ``websocket_url``: JMAP over WebSocket with push is (RFC 8887 4)."""
    account = account_id(user)
    capabilities: dict[str, Any] = {CORE: limits.capability(), MAIL: {}}
    account_capabilities: dict[str, Any] = {CORE: {}, MAIL: mail_account_capability()}
    if submission:
        capabilities[SUBMISSION] = {}
        account_capabilities[SUBMISSION] = submission_account_capability()
    if vacation_response:
        capabilities[VACATION_RESPONSE] = {}
        account_capabilities[VACATION_RESPONSE] = {}
    if websocket_url is not None:
        capabilities[WEBSOCKET] = {"url": websocket_url, "supportsPush": True}
    body: dict[str, Any] = {
        "capabilities": capabilities,
        "accounts": {account: {"name": str(user), "isPersonal": True, "isReadOnly": False,
                               "accountCapabilities": account_capabilities}},
        "primaryAccounts": {capability: account for capability in account_capabilities},
        "username": str(user),
        "apiUrl": f"{base_url}/jmap",
        "downloadUrl": f"{base_url}/download/{{accountId}}/{{blobId}}?type={{type}}&name={{name}}",
        "uploadUrl": f"{base_url}/upload/{{accountId}}",
        "eventSourceUrl": f"{base_url}/eventSource?types={{types}}&closeAfter={{closeafter}}&ping={{ping}}",
    }
    body["state"] = session_state(body)
    return body


def session_state(body: dict[str, Any]) -> str:
    """Changes when anything else in the session does (RFC 8620 2: a client refetches it then)."""
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]
