"""The indexing group listener on the memory mailbox layer and the memory index (in-process bus)."""

from __future__ import annotations

import pytest

from mailserver.blob.memory import MemoryBlobStore
from mailserver.events.in_process import InProcessEventBus
from mailserver.mailbox.wiring import memory_context
from mailserver.model.address import Username
from mailserver.model.events import Added, FlagsUpdated, MailboxAdded, MailboxDeletion
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.ids import MailboxId
from mailserver.model.mailbox import MailboxPath
from mailserver.model.quota import QuotaRoot
from mailserver.search import listener as listener_module
from mailserver.search.api import SearchIndexError, SearchQuery
from mailserver.search.listener import GROUP, OpenSearchListeningMessageSearchIndex
from mailserver.search.memory import MemorySearchIndex
from mailserver.search.wiring import memory_search, register_search
from tests.contract.search_contract import raw_message

ALICE = Username.of("alice@example.com")


@pytest.fixture
def ctx():
    return memory_context(MemoryBlobStore())


@pytest.fixture
def index(ctx) -> MemorySearchIndex:
    return memory_search(ctx)


@pytest.fixture
def listener(ctx, index) -> OpenSearchListeningMessageSearchIndex:
    return next(x for x in ctx.bus.listeners if x.group == GROUP)


@pytest.fixture
def inbox(ctx) -> MailboxPath:
    path = MailboxPath.inbox(ALICE)
    ctx.manager.create_mailbox(path)
    return path


def uids(index, mailbox_id: MailboxId, **criteria) -> list[int]:
    return [hit.uid for hit in index.search(SearchQuery.of(mailbox_id, **criteria))]


def test_group_is_james_and_only_indexing_events_are_accepted(listener, ctx, inbox):
    assert GROUP == ("org.apache.james.mailbox.opensearch.events.OpenSearchListeningMessageSearchIndex"
                     "$OpenSearchListeningMessageSearchIndexGroup")
    assert listener.group == GROUP
    mailbox = ctx.manager.get_mailbox(inbox)
    deletion = MailboxDeletion(user=ALICE, path=inbox, mailbox_id=mailbox.id, quota_root=QuotaRoot.for_user(ALICE),
                               deleted_message_count=0, total_deleted_size=0)
    assert listener.accepts(deletion)
    assert not listener.accepts(MailboxAdded(user=ALICE, path=inbox, mailbox_id=mailbox.id))


def test_an_appended_message_is_indexed_with_its_owner(ctx, index, inbox):
    result = ctx.manager.append(inbox, raw_message(sender="Bob <bob@sender.com>", subject="Lunch plans",
                                                   body="pizza on friday"), is_delivery=True)
    mailbox_id = result.id.mailbox_id
    assert uids(index, mailbox_id, from_="bob@sender.com", subject="lunch", body="pizza") == [result.id.uid]
    document = index.get(mailbox_id, result.id.uid)
    assert document["user"] == "alice@example.com"
    assert document["messageId"] == str(result.id.message_id)
    assert (document["isRecent"], document["isUnread"], document["size"]) == (True, True, result.size)


def test_added_reads_the_message_as_stored_now(ctx, index, listener, inbox):
    """An Added handled late (after a flags change) indexes the current flags, as James re-reads the message."""
    result = ctx.manager.append(inbox, raw_message())
    ctx.manager.set_flags(inbox, Flags.of(SystemFlag.SEEN), FlagsUpdateMode.ADD)
    index.documents.clear()
    listener.handle(Added(user=ALICE, path=inbox, mailbox_id=result.id.mailbox_id,
                          added=(result.metadata,)))   # the original event: Seen unset
    assert index.get(result.id.mailbox_id, result.id.uid)["isUnread"] is False


def test_added_for_a_deleted_mailbox_or_an_expunged_message_is_skipped(ctx, index, listener, inbox):
    result = ctx.manager.append(inbox, raw_message())
    event = Added(user=ALICE, path=inbox, mailbox_id=result.id.mailbox_id, added=(result.metadata,))
    ctx.manager.set_flags(inbox, Flags.of(SystemFlag.DELETED), FlagsUpdateMode.ADD)
    ctx.manager.expunge(inbox)
    listener.handle(event)   # the message is gone
    assert index.documents == {}
    ctx.manager.delete_mailbox(inbox, recursive=True)
    listener.handle(event)   # the mailbox is gone
    assert index.documents == {}


def test_expunged_messages_are_deleted(ctx, index, inbox):
    kept = ctx.manager.append(inbox, raw_message(subject="kept"))
    gone = ctx.manager.append(inbox, raw_message(subject="gone"))
    ctx.manager.set_flags(inbox, Flags.of(SystemFlag.DELETED), FlagsUpdateMode.ADD, uids=[gone.id.uid])
    ctx.manager.expunge(inbox)
    assert uids(index, kept.id.mailbox_id) == [kept.id.uid]


def test_flags_updates_are_partial_updates(ctx, index, inbox):
    result = ctx.manager.append(inbox, raw_message(subject="flag me"))
    mailbox_id = result.id.mailbox_id
    ctx.manager.set_flags(inbox, Flags.of(SystemFlag.FLAGGED, user=["todo"]), FlagsUpdateMode.ADD)
    assert uids(index, mailbox_id, flags_set={SystemFlag.FLAGGED}, user_flags_set={"todo"}) == [result.id.uid]
    ctx.manager.set_flags(inbox, Flags.of(SystemFlag.FLAGGED), FlagsUpdateMode.REMOVE)
    assert uids(index, mailbox_id, flags_set={SystemFlag.FLAGGED}) == []
    document = index.get(mailbox_id, result.id.uid)
    assert document["subject"] == ["flag me"] and document["userFlags"] == ["todo"]


def test_a_flags_update_before_its_added_indexes_the_message_from_the_store(ctx, index, inbox):
    result = ctx.manager.append(inbox, raw_message(subject="early flags"))
    index.documents.clear()   # as if the Added were still queued behind the FlagsUpdated
    ctx.manager.set_flags(inbox, Flags.of(SystemFlag.ANSWERED), FlagsUpdateMode.ADD)
    document = index.get(result.id.mailbox_id, result.id.uid)
    assert document["isAnswered"] is True and document["subject"] == ["early flags"]


def test_a_flags_update_of_a_message_gone_from_the_store_indexes_nothing(ctx, index, listener, inbox):
    result = ctx.manager.append(inbox, raw_message())
    [update] = ctx.manager.set_flags(inbox, Flags.of(SystemFlag.DELETED), FlagsUpdateMode.ADD)
    ctx.manager.expunge(inbox)
    listener.handle(FlagsUpdated(user=ALICE, path=inbox, mailbox_id=result.id.mailbox_id, updated=(update,)))
    assert index.documents == {}


def test_mailbox_deletion_removes_its_documents(ctx, index, inbox):
    other = MailboxPath.of(ALICE, "Archive")
    ctx.manager.create_mailbox(other)
    doomed = ctx.manager.append(other, raw_message())
    kept = ctx.manager.append(inbox, raw_message())
    ctx.manager.delete_mailbox(other)
    assert uids(index, doomed.id.mailbox_id) == []
    assert uids(index, kept.id.mailbox_id) == [kept.id.uid]


def test_move_and_copy(ctx, index, inbox):
    archive = MailboxPath.of(ALICE, "Archive")
    archive_id = ctx.manager.create_mailbox(archive)
    moved = ctx.manager.append(inbox, raw_message(subject="moving"))
    copied = ctx.manager.append(inbox, raw_message(subject="copying"))
    ctx.manager.move(inbox, archive, [moved.id.uid])
    ctx.manager.copy(inbox, archive, [copied.id.uid])
    assert uids(index, moved.id.mailbox_id, subject="moving") == []
    assert uids(index, moved.id.mailbox_id, subject="copying") == [copied.id.uid]
    hits = index.search(SearchQuery.of(archive_id))
    assert sorted(h.message_id for h in hits) == sorted([moved.id.message_id, copied.id.message_id])


def test_delivering_an_event_again_is_harmless(ctx, index, listener, inbox):
    result = ctx.manager.append(inbox, raw_message())
    event = Added(user=ALICE, path=inbox, mailbox_id=result.id.mailbox_id, added=(result.metadata,))
    listener.handle(event)
    listener.handle(event)
    assert uids(index, result.id.mailbox_id) == [result.id.uid]


def test_a_copy_of_many_messages_is_indexed_in_batches(ctx, inbox, monkeypatch):
    index = memory_search(ctx)
    calls: list[int] = []
    original = index.index_documents

    def counting(documents):
        documents = list(documents)
        calls.append(len(documents))
        return original(documents)

    monkeypatch.setattr(index, "index_documents", counting)
    for _ in range(60):
        ctx.manager.append(inbox, raw_message())
    calls.clear()
    archive = MailboxPath.of(ALICE, "Archive")
    archive_id = ctx.manager.create_mailbox(archive)
    ctx.manager.copy(inbox, archive)
    assert calls == [listener_module.BATCH, 60 - listener_module.BATCH]
    assert len(index.search(SearchQuery.of(archive_id, limit=100))) == 60


class FailingIndex(MemorySearchIndex):
    def index_documents(self, documents):
        raise SearchIndexError("OpenSearch unreachable")


def test_an_unreachable_index_fails_the_listener_and_the_bus_keeps_a_dead_letter():
    bus = InProcessEventBus(retries=2)
    ctx = memory_context(MemoryBlobStore(), bus=bus)
    register_search(ctx, FailingIndex())
    path = MailboxPath.inbox(ALICE)
    ctx.manager.create_mailbox(path)
    ctx.manager.append(path, raw_message())   # the mailbox operation itself succeeds
    assert GROUP in bus.dead_letters.groups()


def test_a_document_that_cannot_be_built_falls_back_to_one_without_body(ctx, index, inbox, monkeypatch):
    real = listener_module.message_document

    def fragile(metadata, content, user, *, options, **kw):
        if options.index_body:
            raise RuntimeError("parser bug")
        return real(metadata, content, user, options=options, **kw)

    monkeypatch.setattr(listener_module, "message_document", fragile)
    result = ctx.manager.append(inbox, raw_message(subject="still findable", body="lost words"))
    document = index.get(result.id.mailbox_id, result.id.uid)
    assert document["subject"] == ["still findable"] and document["textBody"] is None
