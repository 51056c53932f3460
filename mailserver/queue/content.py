"""Store and load a mail's MIME content as James does: a header blob and a body blob."""

from __future__ import annotations

from typing import BinaryIO

from mailserver.blob.api import BlobStore, StoragePolicy
from mailserver.mailbox import content as mime
from mailserver.model.mail import MailContent


class MimeMessageStore:
    def __init__(self, blobs: BlobStore) -> None:
        self.blobs = blobs

    def save(self, content: MailContent | bytes | BinaryIO) -> MailContent:
        """Blob-backed content (already stored content is returned as is)."""
        if isinstance(content, MailContent):
            if content.stored:
                return content
            raw: bytes | BinaryIO = content.data or b""
        else:
            raw = content
        parts = mime.split(raw)
        try:
            bucket = self.blobs.default_bucket
            header = self.blobs.save(bucket, parts.header, StoragePolicy.SIZE_BASED)
            body = self.blobs.save(bucket, parts.body, StoragePolicy.LOW_COST)
        finally:
            parts.close()
        return MailContent.of_blobs(str(header), str(body), parts.size)

    def read(self, content: MailContent) -> bytes:
        if not content.stored:
            return content.data or b""
        bucket = self.blobs.default_bucket
        return self.blobs.read(bucket, content.header_blob_id) + self.blobs.read(bucket, content.body_blob_id)

    def read_header(self, content: MailContent) -> bytes:
        if not content.stored:
            data = content.data or b""
            return mime.split(data).header
        return self.blobs.read(self.blobs.default_bucket, content.header_blob_id)

    def delete(self, content: MailContent) -> None:
        """James deletes both blobs once a mail leaves a queue (a no-op under deduplication)."""
        if content.stored:
            bucket = self.blobs.default_bucket
            self.blobs.delete(bucket, content.header_blob_id)
            self.blobs.delete(bucket, content.body_blob_id)
