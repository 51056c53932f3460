"""Who a request runs as, and the mail services its methods read and write."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from mailserver.jmap.capabilities import CoreLimits
from mailserver.jmap.changes.logs import ChangeLogs
from mailserver.jmap.errors import MethodError, invalid_arguments
from mailserver.jmap.uploads import UploadRepository
from mailserver.mailbox.manager import MailboxManager
from mailserver.mailbox.store import FastViewStore
from mailserver.mailbox.subscriptions import SubscriptionStore
from mailserver.model.address import Username


def account_id(user: Username) -> str:
    """James's account id: the SHA-256 of the username, in hex."""
    return hashlib.sha256(str(user).encode()).hexdigest()


@dataclass(frozen=True)
class MailServices:
    manager: MailboxManager
    fast_view: FastViewStore | None = None        # preview and hasAttachment, computed when absent
    subscriptions: SubscriptionStore | None = None
    # Written by the change listener group: register it on the mailbox bus (``ChangeLogs.listen``).
    changes: ChangeLogs = field(default_factory=ChangeLogs)
    uploads: UploadRepository | None = None         # None: uploads are refused (503)


@dataclass(frozen=True)
class CallContext:
    user: Username
    services: MailServices
    limits: CoreLimits

    @property
    def account_id(self) -> str:
        return account_id(self.user)

    def mailbox_state(self) -> str:
        """The state of the user's mailboxes: their latest change's (RFC 8620 1.6.3), as James."""
        return str(self.services.changes.mailboxes.latest_state(str(self.user)))

    def email_state(self) -> str:
        return str(self.services.changes.emails.latest_state(str(self.user)))

    def check_account(self, arguments: dict[str, Any]) -> str:
        """The call's ``accountId``, which must be this user's (the only account it may use)."""
        given = arguments.get("accountId")
        if not isinstance(given, str):
            raise invalid_arguments("accountId must be a string")
        if given != self.account_id:
            raise MethodError("accountNotFound")
        return given
