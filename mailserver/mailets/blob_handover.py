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

The other way round, blobs a mailet writes for the mail while it is processed (a header rewritten
by SetMimeHeader, ``mime.rewrite_header``) are ``created`` in the scope: only mails in this
process refer to them (a queue or a repository taking the mail copies its content first), so the
spooler deletes them once the entry is settled, whatever its outcome. The queue entry deletes
only the content it was dequeued with, so without that every rewritten header (a second
rewrite's, a split copy's) outlived the mail.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass
class EntryBlobs:
    """What happened to blobs while one spool entry was processed."""

    claimed: set[str] = field(default_factory=set)   # taken by stored messages: the entry keeps them
    created: set[str] = field(default_factory=set)   # written for the mail in process: deleted after it


_scope: ContextVar[EntryBlobs | None] = ContextVar("spool_entry_blobs", default=None)


@contextmanager
def processing() -> Iterator[EntryBlobs]:
    """A scope for one spool entry; yields what was claimed and created in it (read once the mailets are done)."""
    blobs = EntryBlobs()
    token = _scope.set(blobs)
    try:
        yield blobs
    finally:
        _scope.reset(token)


def claim(blob_id: str) -> bool:
    """Take ``blob_id`` for a message about to be stored; False outside a scope or when taken already."""
    scope = _scope.get()
    if scope is None or blob_id in scope.claimed:
        return False
    scope.claimed.add(blob_id)
    return True


def release(blob_id: str) -> None:
    """Give back a claim whose message does not use the blob (the spool entry deletes it again)."""
    scope = _scope.get()
    if scope is not None:
        scope.claimed.discard(blob_id)


def created(blob_id: str) -> None:
    """Record a blob written for the mail being processed (nothing outside a scope: the caller owns it)."""
    scope = _scope.get()
    if scope is not None:
        scope.created.add(blob_id)
