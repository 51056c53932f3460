"""Roles and sort orders from mailbox names, as James's ``Role.from`` and ``SortOrder``."""

from __future__ import annotations

import pytest

from mailserver.mailbox.roles import role_of, sort_order_of
from mailserver.model.ids import MailboxId
from mailserver.model.mailbox import Mailbox, MailboxPath


def mailbox(name: str) -> Mailbox:
    return Mailbox(MailboxId.generate(), MailboxPath("#private", MailboxPath.inbox("a@b.test").user, name), 1)


@pytest.mark.parametrize(("name", "role", "order"), [
    ("INBOX", "inbox", 10), ("Archive", "archive", 20), ("Drafts", "drafts", 30), ("Outbox", "outbox", 40),
    ("Sent", "sent", 50), ("Trash", "trash", 60), ("Spam", "junk", 70), ("Templates", "templates", 80),
    ("Restored-Messages", "restored messages", 90), ("x-receipts", "x-receipts", 1000),
    ("sent", None, 1000), ("Projects.Sent", None, 1000), ("INBOX.Sent", None, 1000), ("Work", None, 1000),
])
def test_role_and_sort_order_of_a_name(name, role, order):
    assert (role_of(mailbox(name)), sort_order_of(mailbox(name))) == (role, order)
