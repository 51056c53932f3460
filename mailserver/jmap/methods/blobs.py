"""Reading a blob by its id for ``Email/import`` and attachments: an upload of the user, a message
or a part of one the user may read (``downloads.resolve``, the download endpoint's resolution)."""

from __future__ import annotations

from dataclasses import dataclass

from mailserver.jmap.account import CallContext
from mailserver.jmap.downloads import resolve


@dataclass(frozen=True)
class BlobContent:
    content_type: str
    data: bytes


def read_blob(context: CallContext, blob_id: str) -> BlobContent | None:
    """The blob, or None when it does not exist for this user (``notFound`` / ``blobNotFound``)."""
    blob = resolve(context.resolve_id(blob_id), context.user, context.services)
    if blob is None:
        return None
    return BlobContent(blob.content_type, b"".join(blob.chunks))
