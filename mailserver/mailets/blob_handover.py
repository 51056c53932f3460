"""Blobs of a spool entry handed over to the mailbox while the spooler processes it.

Why: without deduplication every holder of a mail's content owns blobs of its own, so
LocalDelivery used to write the body a second time for the mailbox, and the spool entry then
deleted the first copy. When the body written at intake becomes the stored message's body
instead, the mail costs one S3 PUT and one DELETE less (issue 16).

How ownership moves: the spooler opens a ``processing()`` scope around the mailet container;
LocalDelivery ``claim``s the body blob for one recipient's message (at most once per blob and
scope, so two messages never share a blob that either would delete) and ``release``s it when
that append stored nothing under it; the spooler then settles the entry with the claimed ids,
which the queue keeps instead of deleting. Outside a scope (no spooler) nothing can be claimed.

When in doubt a claim is kept: a blob left behind costs storage, a blob deleted under a stored
message loses mail.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_claimed: ContextVar[set[str] | None] = ContextVar("handed_over_blobs", default=None)


@contextmanager
def processing() -> Iterator[set[str]]:
    """A scope for one spool entry; yields the ids claimed in it (read once the mailets are done)."""
    claimed: set[str] = set()
    token = _claimed.set(claimed)
    try:
        yield claimed
    finally:
        _claimed.reset(token)


def claim(blob_id: str) -> bool:
    """Take ``blob_id`` for a message about to be stored; False outside a scope or when taken already."""
    claimed = _claimed.get()
    if claimed is None or blob_id in claimed:
        return False
    claimed.add(blob_id)
    return True


def release(blob_id: str) -> None:
    """Give back a claim whose message does not use the blob (the spool entry deletes it again)."""
    claimed = _claimed.get()
    if claimed is not None:
        claimed.discard(blob_id)
