"""James's ``RestoreService``: matching vault messages appended back to the owner's restore mailbox.

The mailbox (``restoreLocation``, default ``Restored-Messages``) is created, and subscribed to,
when missing. Each message gets its delivery date back as internal date; the vault keeps its
copy (restoring is not deleting). An entry whose content is gone is skipped, as James does; any
other failure counts as an error and the next message is tried.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from enum import Enum

from mailserver.mailbox.errors import MailboxExists
from mailserver.mailbox.manager import MailboxManager
from mailserver.mailbox.subscriptions import SubscriptionStore
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from mailserver.vault.api import DeletedMessageContentNotFound, DeletedMessageVault
from mailserver.vault.query import Query

log = logging.getLogger(__name__)


class RestoreResult(Enum):
    SUCCEED = "succeed"
    FAILED = "failed"
    SKIPPED = "skipped"   # content not found


def restore_mailbox(manager: MailboxManager, owner: Username, location: str,
                    subscriptions: SubscriptionStore | None = None) -> MailboxPath:
    path = MailboxPath.of(owner, location)
    if not manager.mailbox_exists(path):
        try:
            manager.create_mailbox(path)
        except MailboxExists:
            pass   # created concurrently
        if subscriptions is not None:
            subscriptions.subscribe(owner, path.name)
    return path


def restore(vault: DeletedMessageVault, manager: MailboxManager, owner: Username, query: Query, location: str,
            subscriptions: SubscriptionStore | None = None) -> Iterator[RestoreResult]:
    """One result per matching message, as it is restored."""
    target = restore_mailbox(manager, owner, location, subscriptions)
    for message in vault.search(owner, query):
        try:
            with vault.load(owner, message.message_id) as content:
                manager.append(target, content, internal_date=message.delivery_date)
        except DeletedMessageContentNotFound:
            log.info("vault content of %s of %s not found: not restored", message.message_id, owner)
            yield RestoreResult.SKIPPED
        except Exception:
            log.exception("restoring %s of %s into %s failed", message.message_id, owner, target)
            yield RestoreResult.FAILED
        else:
            yield RestoreResult.SUCCEED
