"""The pre-deletion hook on the memory mailbox layer: what is lost goes to the vault first, or nothing goes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from mailserver.blob.memory import MemoryBlobStore
from mailserver.events.in_process import InProcessEventBus, RecordingListener
from mailserver.mailbox.hooks import PreDeletionHookFailed
from mailserver.mailbox.wiring import memory_context
from mailserver.model.address import MailAddress, Username
from mailserver.model.events import Expunged, MailboxDeletion
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.mailbox import MailboxPath
from mailserver.vault.config import VaultConfiguration
from mailserver.vault.memory import memory_vault
from mailserver.vault.query import Query
from mailserver.vault.wiring import install_vault

DELETION_TIME = datetime(2026, 11, 25, 8, 0, tzinfo=UTC)
DELIVERED = datetime(2026, 11, 20, 7, 30, tzinfo=UTC)


def message(subject: str, *, attachment: bool = False) -> bytes:
    header = (f"From: Alice <alice@example.com>\r\nTo: bob@example.com, Carol <carol@example.org>\r\n"
              f"Cc: dave@example.org\r\nSubject: {subject}\r\nMIME-Version: 1.0\r\n")
    if not attachment:
        return (header + "Content-Type: text/plain\r\n\r\nHello Bob\r\n").encode()
    return (header + "Content-Type: multipart/mixed; boundary=B\r\n\r\n--B\r\nContent-Type: text/plain\r\n\r\n"
            "see attached\r\n--B\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; "
            "filename=a.pdf\r\n\r\nJVBERi0x\r\n--B--\r\n").encode()


class FailingVault:
    """A vault whose content store is down: append raises, as S3 unreachable does."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.calls = 0

    def append(self, *args, **kwargs):
        self.calls += 1
        raise ConnectionError("S3 unreachable")

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.fixture
def user() -> Username:
    return Username.of(f"u{uuid.uuid4().hex[:8]}@example.com")


@pytest.fixture
def ctx():
    bus = InProcessEventBus()
    bus.register(RecordingListener())
    return memory_context(MemoryBlobStore(), bus)


@pytest.fixture
def vault():
    return memory_vault(clock=lambda: DELETION_TIME)


@pytest.fixture
def enabled(ctx, vault):
    install_vault(ctx, vault, VaultConfiguration(enabled=True), clock=lambda: DELETION_TIME)
    return ctx


@pytest.fixture
def recorder(ctx) -> RecordingListener:
    return next(listener for listener in ctx.bus.listeners if isinstance(listener, RecordingListener))


def append_deleted(ctx, path: MailboxPath, raw: bytes):
    result = ctx.manager.append(path, raw, internal_date=DELIVERED)
    ctx.manager.set_flags(path, Flags({SystemFlag.DELETED}), FlagsUpdateMode.ADD, [result.id.uid])
    return result


def test_expunged_message_is_in_the_vault_before_it_leaves_the_mailbox(enabled, vault, user):
    inbox = MailboxPath.inbox(user)
    enabled.manager.create_mailbox(inbox)
    raw = message("invoice 42", attachment=True)
    appended = append_deleted(enabled, inbox, raw)
    seen_in_mailbox: list[bool] = []
    original_append = vault.append

    def observing_append(deleted_message, content):
        seen_in_mailbox.append(bool(enabled.manager.find_message(appended.id.message_id)))
        return original_append(deleted_message, content)

    vault.append = observing_append
    assert enabled.manager.expunge(inbox) == [appended.id.uid]
    assert seen_in_mailbox == [True]
    assert enabled.manager.find_message(appended.id.message_id) == []
    [kept] = vault.search(user, Query())
    assert kept.message_id == appended.id.message_id
    assert kept.origin_mailboxes == (appended.id.mailbox_id,)
    assert kept.owner == user
    assert kept.subject == "invoice 42"
    assert kept.sender == MailAddress.of("alice@example.com")
    assert kept.recipients == tuple(MailAddress.of(a) for a in
                                    ("bob@example.com", "carol@example.org", "dave@example.org"))
    assert kept.has_attachment is True
    assert kept.size == len(raw)
    assert kept.delivery_date == DELIVERED
    assert kept.deletion_date == DELETION_TIME
    with vault.load(user, appended.id.message_id) as stream:
        assert stream.read() == raw


def test_a_failing_vault_fails_the_expunge_and_keeps_the_message(enabled, vault, user, recorder):
    inbox = MailboxPath.inbox(user)
    enabled.manager.create_mailbox(inbox)
    appended = append_deleted(enabled, inbox, message("keep me"))
    hook = enabled.manager.pre_deletion_hooks[0]
    hook.vault = FailingVault(vault)
    with pytest.raises(PreDeletionHookFailed, match=r"S3 unreachable.*nothing was deleted"):
        enabled.manager.expunge(inbox)
    assert hook.vault.calls == 1
    assert [m.uid for m in enabled.manager.get_messages(inbox)] == [appended.id.uid]
    assert enabled.manager.read_message(appended.id.message_id) == message("keep me")
    assert not any(isinstance(e, Expunged) for e in recorder.events)
    hook.vault = vault   # the store is back: the same expunge now goes through
    assert enabled.manager.expunge(inbox) == [appended.id.uid]
    assert [m.subject for m in vault.search(user, Query())] == ["keep me"]


def test_a_failing_vault_fails_the_mailbox_deletion_and_keeps_everything(enabled, vault, user, recorder):
    folder = MailboxPath.of(user, "Projects")
    enabled.manager.create_mailbox(folder.child("Old"))
    enabled.manager.append(folder.child("Old"), message("old"))
    enabled.manager.pre_deletion_hooks[0].vault = FailingVault(vault)
    with pytest.raises(PreDeletionHookFailed):
        enabled.manager.delete_mailbox(folder, recursive=True)
    assert enabled.manager.mailbox_exists(folder) and enabled.manager.mailbox_exists(folder.child("Old"))
    assert len(enabled.manager.get_messages(folder.child("Old"))) == 1
    assert not any(isinstance(e, MailboxDeletion) for e in recorder.events)


def test_a_message_still_in_another_mailbox_of_its_owner_is_not_archived(enabled, vault, user):
    inbox, archive = MailboxPath.inbox(user), MailboxPath.of(user, "Archive")
    enabled.manager.create_mailbox(inbox)
    enabled.manager.create_mailbox(archive)
    appended = append_deleted(enabled, inbox, message("twice"))
    enabled.manager.copy(inbox, archive, [appended.id.uid])
    enabled.manager.expunge(inbox)
    assert list(vault.search(user, Query())) == []
    enabled.manager.set_flags(archive, Flags({SystemFlag.DELETED}), FlagsUpdateMode.ADD)
    enabled.manager.expunge(archive)
    [kept] = vault.search(user, Query())
    assert kept.origin_mailboxes == (enabled.manager.get_mailbox(archive).id,)


def test_delete_by_message_id_archives_once_with_every_origin(enabled, vault, user):
    inbox, archive = MailboxPath.inbox(user), MailboxPath.of(user, "Archive")
    enabled.manager.create_mailbox(inbox)
    enabled.manager.create_mailbox(archive)
    appended = enabled.manager.append(inbox, message("by id"))
    enabled.manager.copy(inbox, archive)
    assert enabled.manager.delete_messages(user, [appended.id.message_id]) == 2
    [kept] = vault.search(user, Query())
    assert set(kept.origin_mailboxes) == {enabled.manager.get_mailbox(inbox).id,
                                          enabled.manager.get_mailbox(archive).id}


def test_mailbox_deletion_archives_its_messages_including_children(enabled, vault, user):
    folder = MailboxPath.of(user, "Projects")
    enabled.manager.create_mailbox(folder.child("Old"))
    enabled.manager.append(folder, message("parent"))
    child = enabled.manager.append(folder.child("Old"), message("child"))
    enabled.manager.copy(folder.child("Old"), folder, [child.id.uid])   # one message in both
    enabled.manager.delete_mailbox(folder, recursive=True)
    kept = {m.subject: m for m in vault.search(user, Query())}
    assert sorted(kept) == ["child", "parent"]
    assert len(kept["child"].origin_mailboxes) == 2


def test_moves_are_not_deletions(enabled, vault, user):
    inbox, archive = MailboxPath.inbox(user), MailboxPath.of(user, "Archive")
    enabled.manager.create_mailbox(inbox)
    enabled.manager.create_mailbox(archive)
    enabled.manager.append(inbox, message("moved"))
    enabled.manager.move(inbox, archive)
    assert list(vault.search(user, Query())) == []


def test_a_disabled_vault_keeps_nothing(ctx, vault, user):
    assert install_vault(ctx, vault, VaultConfiguration(enabled=False)) is None
    inbox = MailboxPath.inbox(user)
    ctx.manager.create_mailbox(inbox)
    append_deleted(ctx, inbox, message("gone"))
    ctx.manager.expunge(inbox)
    assert list(vault.search(user, Query())) == []


def test_configuration_defaults_and_parsing():
    default = VaultConfiguration.from_env({})
    assert (default.enabled, default.retention_period.total_seconds(), default.restore_location) == \
        (False, 31556952, "Restored-Messages")
    parsed = VaultConfiguration.from_env({"MAILSERVER_VAULT_ENABLED": "true", "MAILSERVER_VAULT_RETENTION_PERIOD": "30",
                                          "MAILSERVER_VAULT_RESTORE_LOCATION": "Recovered"})
    assert (parsed.enabled, parsed.retention_period.days, parsed.restore_location) == (True, 30, "Recovered")
    assert VaultConfiguration.from_env({"MAILSERVER_VAULT_RETENTION_PERIOD": "2 weeks"}).retention_period.days == 14
    with pytest.raises(ValueError, match="MAILSERVER_VAULT_RETENTION_PERIOD"):
        VaultConfiguration.from_env({"MAILSERVER_VAULT_RETENTION_PERIOD": "-3 days"})
    with pytest.raises(ValueError, match="MAILSERVER_VAULT_ENABLED"):
        VaultConfiguration.from_env({"MAILSERVER_VAULT_ENABLED": "maybe"})


def test_imap_expunge_with_the_vault_down_answers_unavailable_and_keeps_the_message():
    """Over IMAP the refusal is a tagged NO [UNAVAILABLE] naming the cause; the message is still there."""
    from mailserver.vault.api import BlobStoreDeletedMessageVault
    from tests.unit.imap.conftest import PASSWORD, USER, make_world

    world = make_world()
    try:
        inbox = MailboxPath.inbox(USER)
        world.ctx.manager.create_mailbox(inbox)
        world.ctx.manager.append(inbox, message("kept over imap"))
        vault = FailingVault(BlobStoreDeletedMessageVault(memory_vault().metadata, MemoryBlobStore()))
        install_vault(world.ctx, vault, VaultConfiguration(enabled=True))
        client = world.client(login=False)
        client.login(USER, PASSWORD)
        client.select("INBOX")
        client.store("1", "+FLAGS", "(\\Deleted)")
        status, data = client.expunge()
        assert status == "NO" and data[0].startswith(b"[UNAVAILABLE]") and b"S3 unreachable" in data[0], data
        assert len(world.ctx.manager.get_messages(inbox)) == 1
        client.logout()
    finally:
        world.thread.stop()
