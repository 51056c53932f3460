"""The mailbox manager checks a name before a mailbox gets it: every creator (IMAP, WebAdmin, the
LocalDelivery mailet, vault restores) is held to the rule, even with a path built without ``of``."""

from __future__ import annotations

import pytest

from mailserver.blob.memory import MemoryBlobStore
from mailserver.mailbox.wiring import memory_context
from mailserver.model.address import Username
from mailserver.model.mailbox import PRIVATE_NAMESPACE, InvalidMailboxName, MailboxPath

USER = Username.of("alice@example.test")


@pytest.fixture
def manager():
    return memory_context(MemoryBlobStore()).manager


@pytest.mark.parametrize("name", ["a\x00b", "Work.a\x1bb", "del\x7f", "#news", "a..b"])
def test_create_refuses_an_unacceptable_name_and_creates_nothing(manager, name):
    with pytest.raises(InvalidMailboxName):
        manager.create_mailbox(MailboxPath(PRIVATE_NAMESPACE, USER, name))
    assert manager.list_mailboxes(USER) == []


@pytest.mark.parametrize("name", ["a\x00b", "Work.a\x1bb", "#news"])
def test_rename_refuses_an_unacceptable_target_and_keeps_the_mailbox(manager, name):
    source = MailboxPath.of(USER, "Work")
    manager.create_mailbox(source)
    with pytest.raises(InvalidMailboxName):
        manager.rename_mailbox(source, MailboxPath(PRIVATE_NAMESPACE, USER, name))
    assert [m.path.name for m in manager.list_mailboxes(USER)] == ["Work"]
