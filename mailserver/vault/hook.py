"""``DeletedMessageVaultHook``: every message a user definitively loses is first appended to the vault.

As James's hook: the messages of a deletion are grouped by (owner, message id), and a message
still in another mailbox of its owner is not archived (it is not lost). The content is streamed
from the blob store into the vault; metadata comes from the header (sender, recipients, subject),
the first MiB (attachments) and the message row (size; the internal date is the delivery date, as
James's distributed listener). Any failure propagates: the manager then deletes nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from mailserver.blob.api import BlobStore, BlobStream
from mailserver.mailbox.content import CHUNK, PREVIEW_SCAN_BYTES, preview
from mailserver.mailbox.errors import MessageNotFound
from mailserver.mailbox.hooks import DeleteOperation, PreDeletionHook
from mailserver.mailbox.listeners import read_prefix
from mailserver.mailbox.store import MailboxStore, MessageStore
from mailserver.model.address import Username
from mailserver.model.ids import MailboxId, MessageId
from mailserver.model.message import MessageMetadata
from mailserver.vault.api import Clock, DeletedMessageVault, utc_now
from mailserver.vault.headers import header_facts
from mailserver.vault.model import DeletedMessage


class DeletedMessageVaultHook(PreDeletionHook):
    def __init__(self, vault: DeletedMessageVault, mailboxes: MailboxStore, messages: MessageStore,
                 blobs: BlobStore, *, clock: Clock = utc_now) -> None:
        self.vault, self.mailboxes, self.messages, self.blobs = vault, mailboxes, messages, blobs
        self._now = clock

    def notify_delete(self, operation: DeleteOperation) -> None:
        groups: dict[tuple[Username, MessageId], tuple[MessageMetadata, list[MailboxId]]] = {}
        for metadata, mailbox in operation.messages:
            key = (mailbox.path.user, metadata.message_id)
            _, origins = groups.setdefault(key, (metadata, []))
            if mailbox.id not in origins:
                origins.append(mailbox.id)
        for (owner, message_id), (metadata, origins) in groups.items():
            if not self._still_held_by(owner, message_id, origins):
                self._append(owner, metadata, origins)

    def _still_held_by(self, owner: Username, message_id: MessageId, leaving: list[MailboxId]) -> bool:
        for row in self.messages.find_by_message_id(message_id):
            if row.mailbox_id in leaving:
                continue
            mailbox = self.mailboxes.find_by_id(row.mailbox_id)
            if mailbox is not None and mailbox.path.user == owner:
                return True
        return False

    def _append(self, owner: Username, metadata: MessageMetadata, origins: list[MailboxId]) -> None:
        content = self.messages.get_content(metadata.message_id)
        if content is None:
            raise MessageNotFound(f"content of message {metadata.message_id} not found: cannot keep it in the vault")
        bucket = self.blobs.default_bucket
        header = self.blobs.read(bucket, content.header_blob_id)
        facts = header_facts(header)
        _, has_attachment = preview(read_prefix(self.blobs, content.header_blob_id, content.body_blob_id,
                                                PREVIEW_SCAN_BYTES))
        deleted = DeletedMessage(
            message_id=metadata.message_id, origin_mailboxes=tuple(origins), owner=owner,
            delivery_date=metadata.internal_date, deletion_date=self._now(), sender=facts.sender,
            recipients=facts.recipients, subject=facts.subject, has_attachment=has_attachment,
            size=content.full_content_octets)
        with self.blobs.read_stream(bucket, content.body_blob_id) as body:
            self.vault.append(deleted, itertools.chain([header], _chunks(body)))


def _chunks(stream: BlobStream) -> Iterator[bytes]:
    while chunk := stream.read(CHUNK):
        yield chunk
