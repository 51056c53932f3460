"""Who a request runs as, and the mail services its methods read and write."""

from __future__ import annotations

import hashlib
from collections.abc import Set
from dataclasses import dataclass, field
from typing import Any, Protocol

from mailserver.identities.repository import IdentityRepository
from mailserver.jmap.capabilities import CoreLimits
from mailserver.jmap.changes.logs import ChangeLogs
from mailserver.jmap.errors import MethodError, invalid_arguments
from mailserver.jmap.uploads import UploadRepository
from mailserver.mailbox.manager import MailboxManager
from mailserver.mailbox.store import FastViewStore
from mailserver.mailbox.subscriptions import SubscriptionStore
from mailserver.model.address import MailAddress, Username
from mailserver.queue.api import MailQueue
from mailserver.search.api import SearchIndex
from mailserver.vacation.api import VacationRepository


def account_id(user: Username) -> str:
    """James's account id: the SHA-256 of the username, in hex."""
    return hashlib.sha256(str(user).encode()).hexdigest()


class AllowedSenders(Protocol):
    """Who may send from which address (``CanSendFrom``), and every address a user may send from."""

    def __call__(self, user: Username, address: MailAddress) -> bool: ...

    def addresses(self, user: Username) -> Set[MailAddress]: ...


@dataclass(frozen=True)
class Submission:
    """What ``EmailSubmission/set`` sends through: the spool the SMTP intake enqueues on (so the
    mailet container processes the mail), and who may send from which address."""

    spool: MailQueue
    can_send_from: AllowedSenders


@dataclass(frozen=True)
class MailServices:
    manager: MailboxManager
    fast_view: FastViewStore | None = None        # preview and hasAttachment, computed when absent
    subscriptions: SubscriptionStore | None = None
    # Written by the change listener group: register it on the mailbox bus (``ChangeLogs.listen``).
    changes: ChangeLogs = field(default_factory=ChangeLogs)
    uploads: UploadRepository | None = None         # None: uploads are refused (503)
    submission: Submission | None = None          # None: EmailSubmission is not offered
    search: SearchIndex | None = None              # None: Email/query's text filters are unsupportedFilter
    identities: IdentityRepository | None = None   # None: Identity/get answers the server-set identities only
    vacations: VacationRepository | None = None     # None: VacationResponse is not offered


@dataclass(frozen=True)
class CallContext:
    user: Username
    services: MailServices
    limits: CoreLimits
    # Creation id -> id of what this request created (RFC 8620 5.3), for ``#creationId`` references.
    created_ids: dict[str, str] = field(default_factory=dict)

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

    def resolve_id(self, value: str) -> str:
        """An id, or a ``#creationId`` of this request replaced by the id it created (unchanged when unknown)."""
        if value.startswith("#"):
            return self.created_ids.get(value[1:], value)
        return value
