"""Content rows of messages this process added are served from memory, and only those."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from mailserver.cassandra.faults import InjectedWriteFailure
from mailserver.mailbox.cassandra_messages import CassandraMessageStore
from mailserver.model.flags import Flags
from mailserver.model.ids import MailboxId, MessageId
from mailserver.model.message import Attachment, MessageContent, MessageMetadata

pytestmark = pytest.mark.integration


class ContentReadsCounted:
    """The real session, counting the reads of ``messageV3``."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self.content_reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def one(self, cql, params=None, **kwargs):
        if "FROM messageV3" in cql:
            self.content_reads += 1
        return self._session.one(cql, params, **kwargs)


def content(message_id: MessageId) -> MessageContent:
    return MessageContent(message_id=message_id, internal_date=datetime(2026, 11, 27, 5, 1, 2, 345678, tzinfo=UTC),
                          body_start_octet=40, full_content_octets=4136, header_blob_id=f"h-{uuid.uuid4()}",
                          body_blob_id=f"b-{uuid.uuid4()}",
                          attachments=(Attachment("att-" + uuid.uuid4().hex, "a.pdf", None, False, f"a-{uuid.uuid4()}",
                                                  "application/pdf", 12),))


def metadata(stored: MessageContent, mailbox: MailboxId, uid: int) -> MessageMetadata:
    return MessageMetadata(mailbox_id=mailbox, message_id=stored.message_id, uid=uid, mod_seq=uid, flags=Flags(),
                           thread_id=stored.message_id, internal_date=stored.internal_date, save_date=None,
                           body_start_octet=stored.body_start_octet, size=stored.full_content_octets,
                           header_blob_id=stored.header_blob_id)


def test_the_row_of_a_message_added_here_is_read_back_from_memory_as_cassandra_holds_it(cassandra):
    counted = ContentReadsCounted(cassandra)
    store = CassandraMessageStore(counted)
    stored = content(MessageId.generate())
    store.save_content(stored)
    store.add(metadata(stored, MailboxId(uuid.uuid1()), 1))

    served = store.get_content(stored.message_id)

    assert counted.content_reads == 0
    assert served == CassandraMessageStore(cassandra).get_content(stored.message_id)   # what another process reads


def test_a_row_whose_message_was_not_added_is_read_from_cassandra(cassandra, faults):
    counted = ContentReadsCounted(cassandra)
    store = CassandraMessageStore(counted)
    lost = content(MessageId.generate())
    store.save_content(lost)
    faults.fail("imapUidTable", "INSERT")
    with pytest.raises(InjectedWriteFailure):
        store.add(metadata(lost, MailboxId(uuid.uuid1()), 1))   # this append failed half-way
    rewritten = content(lost.message_id)        # a retry elsewhere stored it again, with other blobs
    CassandraMessageStore(cassandra).save_content(rewritten)

    assert store.get_content(lost.message_id).header_blob_id == rewritten.header_blob_id
    assert counted.content_reads == 1


def test_a_deleted_row_is_not_served_any_more(cassandra):
    store = CassandraMessageStore(cassandra)
    stored = content(MessageId.generate())
    store.save_content(stored)
    store.add(metadata(stored, MailboxId(uuid.uuid1()), 1))

    store.delete_content(stored.message_id)

    assert store.get_content(stored.message_id) is None
