"""The pre-deletion hook on Cassandra + S3: the vault has the message (CQL + S3) before it leaves the mailbox,
and with the vault's S3 unreachable the expunge fails and the message stays.

"S3 unreachable" is the real S3 adapter pointed at a closed local port (nothing listens there),
not the shared S3 server stopped.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest

from mailserver.blob.api import BucketName
from mailserver.blob.s3 import S3BlobStore, S3Config
from mailserver.events.in_process import InProcessEventBus
from mailserver.mailbox.hooks import PreDeletionHookFailed
from mailserver.mailbox.wiring import cassandra_context
from mailserver.model.address import Username
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.mailbox import MailboxPath
from mailserver.vault.cassandra import cassandra_vault
from mailserver.vault.config import VaultConfiguration
from mailserver.vault.query import Query
from mailserver.vault.wiring import install_vault
from tests.support.ports import unused_port

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 25, 8, 0, tzinfo=UTC)
BUCKET = "deleted-messages-2026-11-01"
RAW = (b"From: alice@example.com\r\nTo: bob@example.com\r\nSubject: expunged on Cassandra\r\n\r\n"
       b"Body\r\n" + b"x" * 5000 + b"\r\n")



@pytest.fixture
def user() -> Username:
    return Username.of(f"h{uuid.uuid4().hex[:10]}@example.com")


def in_mailbox(cassandra, message_id) -> bool:
    return bool(cassandra.execute("SELECT uid FROM imapUidTable WHERE messageId = ?", (message_id.value,)))


def expungeable(ctx, user: Username):
    inbox = MailboxPath.inbox(user)
    ctx.manager.create_mailbox(inbox)
    appended = ctx.manager.append(inbox, RAW)
    ctx.manager.set_flags(inbox, Flags({SystemFlag.DELETED}), FlagsUpdateMode.ADD)
    return inbox, appended


def test_expunged_message_is_in_the_vault_cql_and_s3_before_it_leaves_the_mailbox(cassandra, s3_blobs, vault_s3,
                                                                                   user):
    ctx = cassandra_context(cassandra, s3_blobs, InProcessEventBus())
    vault = cassandra_vault(cassandra, vault_s3, clock=lambda: NOW)
    install_vault(ctx, vault, VaultConfiguration(enabled=True), clock=lambda: NOW)
    inbox, appended = expungeable(ctx, user)
    message_id = appended.id.message_id
    observed = []
    original = vault.append

    def append_then_look(deleted, content):
        storage = original(deleted, content)
        row = cassandra.one("SELECT payload FROM deletedMessageMetadata WHERE bucketName = ? AND owner = ? "
                            "AND messageId = ?", (BUCKET, user.value, str(message_id)))
        obj = vault_s3.client.get_object(Bucket=vault_s3.resolve(BucketName(BUCKET)), Key=storage.blob_id)
        observed.append((row is not None, obj["Body"].read() == RAW, in_mailbox(cassandra, message_id)))
        return storage

    vault.append = append_then_look
    assert ctx.manager.expunge(inbox) == [appended.id.uid]
    assert observed == [(True, True, True)]     # vault rows and object written while still in the mailbox
    assert not in_mailbox(cassandra, message_id)
    info = cassandra.one("SELECT bucketName, blobId FROM storageInformation WHERE owner = ? AND messageId = ?",
                         (user.value, str(message_id)))
    assert info["bucketname"] == BUCKET
    payload = json.loads(cassandra.one("SELECT payload FROM deletedMessageMetadata WHERE bucketName = ? "
                                       "AND owner = ? AND messageId = ?",
                                       (BUCKET, user.value, str(message_id)))["payload"])
    assert payload["deletedMessage"]["subject"] == "expunged on Cassandra"
    assert payload["deletedMessage"]["originMailboxes"] == [str(appended.id.mailbox_id)]
    assert payload["deletedMessage"]["size"] == len(RAW)
    with vault.load(user, message_id) as stream:
        assert stream.read() == RAW


def test_with_the_vault_s3_unreachable_the_expunge_fails_and_the_message_stays(cassandra, s3_blobs, user):
    ctx = cassandra_context(cassandra, s3_blobs, InProcessEventBus())
    down = S3BlobStore(S3Config(endpoint_url=f"http://127.0.0.1:{unused_port()}", access_key="x", secret_key="y",
                                connect_timeout=1, read_timeout=1, max_attempts=1))
    vault = cassandra_vault(cassandra, down, clock=lambda: NOW)
    install_vault(ctx, vault, VaultConfiguration(enabled=True), clock=lambda: NOW)
    inbox, appended = expungeable(ctx, user)
    with pytest.raises(PreDeletionHookFailed, match=r"S3 failed saving.*nothing was deleted"):
        ctx.manager.expunge(inbox)
    assert in_mailbox(cassandra, appended.id.message_id)
    assert [m.uid for m in ctx.manager.get_messages(inbox)] == [appended.id.uid]
    assert ctx.manager.read_message(appended.id.message_id) == RAW
    assert cassandra.one("SELECT blobId FROM storageInformation WHERE owner = ? AND messageId = ?",
                         (user.value, str(appended.id.message_id))) is None
    assert list(vault.search(user, Query())) == []
