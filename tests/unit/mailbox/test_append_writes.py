"""What one append asks of the storage, and in which order: the blobs are written while the uid
and modseq are allocated (independent requests, sent together), the mailbox is looked up once
and nothing is listed. (The fast view's read-back of the new blobs is served by the blob cache the
roles put in front of S3, ``mailserver/blob/cache.py``.)"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from mailserver.blob.memory import MemoryBlobStore
from mailserver.mailbox.wiring import MailboxContext, memory_context
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath

INBOX = MailboxPath.inbox(Username.of("alice@append.test"))
MESSAGE = b"From: bob@append.test\r\nSubject: hi\r\n\r\nHello Alice.\r\n"


@pytest.fixture
def ctx() -> MailboxContext:
    context = memory_context(MemoryBlobStore())
    context.manager.create_mailbox(INBOX)
    return context


def counted(monkeypatch: pytest.MonkeyPatch, owner: object, name: str, counts: Counter,
            before: Callable[[], None] = lambda: None) -> None:
    method = getattr(owner, name)

    def call(*args: Any, **kwargs: Any) -> Any:
        counts[name] += 1
        before()
        return method(*args, **kwargs)
    monkeypatch.setattr(owner, name, call)


def test_the_blobs_are_written_while_the_uid_is_allocated(ctx, monkeypatch):
    allocating = threading.Event()
    saved_during_allocation: list[bool] = []
    counts: Counter = Counter()
    counted(monkeypatch, ctx.messages, "next_uid", counts, before=allocating.set)
    # A save that waits for the allocation to start: done one after the other, it would wait in vain.
    counted(monkeypatch, ctx.blobs, "save", counts,
            before=lambda: saved_during_allocation.append(allocating.wait(timeout=5)))

    ctx.manager.append(INBOX, MESSAGE)

    assert counts == Counter({"next_uid": 1, "save": 2})
    assert saved_during_allocation == [True, True]


def test_an_append_looks_the_mailbox_up_once_and_lists_nothing(ctx, monkeypatch):
    counts: Counter = Counter()
    for owner, name in ((ctx.mailboxes, "find_by_path"), (ctx.messages, "list")):
        counted(monkeypatch, owner, name, counts)

    result = ctx.manager.append(INBOX, MESSAGE)

    assert counts == Counter({"find_by_path": 1})
    assert ctx.manager.read_message(result.metadata.message_id) == MESSAGE


def test_a_failed_allocation_leaves_no_message_and_waits_for_the_blob_writes(ctx, monkeypatch):
    def refused(*args: Any, **kwargs: Any) -> int:
        raise RuntimeError("allocation refused")
    monkeypatch.setattr(ctx.messages, "next_modseq", refused)

    with pytest.raises(RuntimeError, match="allocation refused"):
        ctx.manager.append(INBOX, MESSAGE)

    assert ctx.manager.get_messages(INBOX) == []
    assert ctx.manager.counters(INBOX).count == 0
