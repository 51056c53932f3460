"""Store and load a mail's MIME content as James does: a header blob and a body blob.

Who deletes: every holder of a mail's blobs (a queue entry, a mail repository entry) deletes them
when it is done with the mail. That is safe in both blob-store modes because a holder that gets
content already stored by another one takes ``owned_copy``: the same blobs when deduplicating
(``delete`` is a no-op, the blob GC decides), its own copy otherwise (``delete`` is real).
"""

from __future__ import annotations

from collections.abc import Collection
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

    def owned_copy(self, content: MailContent) -> MailContent:
        """Content this holder may delete when done without taking it from anyone else.

        Stored content is copied blob by blob (streamed, never whole in memory) unless the store
        deduplicates; inline content is saved.
        """
        if not content.stored:
            return self.save(content)
        if self.blobs.deduplicating:
            return content
        bucket = self.blobs.default_bucket
        header = self._copy(content.header_blob_id, StoragePolicy.SIZE_BASED)
        try:
            body = self._copy(content.body_blob_id, StoragePolicy.LOW_COST)
        except Exception:
            self.blobs.delete(bucket, header)
            raise
        return MailContent.of_blobs(str(header), str(body), content.size)

    def _copy(self, blob_id: str | None, policy: StoragePolicy) -> str:
        bucket = self.blobs.default_bucket
        with self.blobs.read_stream(bucket, blob_id or "") as source:
            return str(self.blobs.save(bucket, source, policy))

    def read(self, content: MailContent) -> bytes:
        if not content.stored:
            return content.data or b""
        bucket = self.blobs.default_bucket
        header, body = content.blob_ids()
        return self.blobs.read(bucket, header) + self.blobs.read(bucket, body)

    def read_header(self, content: MailContent) -> bytes:
        if not content.stored:
            data = content.data or b""
            return mime.split(data).header
        return self.blobs.read(self.blobs.default_bucket, content.blob_ids()[0])

    def read_body(self, content: MailContent) -> bytes:
        """The body alone (what follows the header and its empty line): one blob read when stored."""
        if not content.stored:
            return (content.data or b"")[len(self.read_header(content)):]
        return self.blobs.read(self.blobs.default_bucket, content.blob_ids()[1])

    def delete(self, content: MailContent, *, keep: Collection[str] = ()) -> None:
        """James deletes both blobs once a mail leaves a queue or a repository (a no-op under
        deduplication: the blobs may be shared, the blob GC decides). ``keep``: blobs handed over
        to another owner, left in place."""
        if content.stored:
            bucket = self.blobs.default_bucket
            for blob_id in (content.header_blob_id, content.body_blob_id):
                if blob_id is not None and blob_id not in keep:
                    self.blobs.delete(bucket, blob_id)
