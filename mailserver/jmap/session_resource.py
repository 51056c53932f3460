"""The session resource (RFC 8620 2): the capabilities, the user's account and the URLs to use."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from mailserver.jmap.account import account_id
from mailserver.jmap.capabilities import CORE, MAIL, CoreLimits, mail_account_capability
from mailserver.model.address import Username


def session(user: Username, limits: CoreLimits, base_url: str) -> dict[str, Any]:
    account = account_id(user)
    body: dict[str, Any] = {
        "capabilities": {CORE: limits.capability(), MAIL: {}},
        "accounts": {account: {"name": str(user), "isPersonal": True, "isReadOnly": False,
                               "accountCapabilities": {CORE: {}, MAIL: mail_account_capability()}}},
        "primaryAccounts": {CORE: account, MAIL: account},
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
