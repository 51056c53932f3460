"""Mail stored through the Cassandra + S3 mailbox layer is found in OpenSearch through the indexing
listener on the in-process bus: by sender, subject, body word and flag, within seconds; an expunged
message is not; a deleted mailbox leaves no document. No explicit refresh: OpenSearch's own."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from mailserver.events.in_process import InProcessEventBus
from mailserver.mailbox.wiring import cassandra_context
from mailserver.model.address import Username
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.mailbox import MailboxPath
from mailserver.search.api import SearchQuery
from mailserver.search.config import SearchConfig
from mailserver.search.index import make_client
from mailserver.search.listener import GROUP
from mailserver.search.opensearch import OpenSearchSearchIndex
from mailserver.search.wiring import opensearch_search
from tests.contract.search_contract import raw_message

pytestmark = pytest.mark.integration


def eventually(probe: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    value = probe()
    while not value and time.monotonic() < deadline:
        time.sleep(0.1)
        value = probe()
    return value


@pytest.fixture(scope="module")
def search_config(stack, unique):
    config = SearchConfig(urls=(stack.opensearch_url,), index_name=f"mailbox_listener_{unique}",
                          read_alias=f"mailboxReadAlias_listener_{unique}",
                          write_alias=f"mailboxWriteAlias_listener_{unique}", shards=2, replicas=0,
                          state_index=f"mailserver_search_state_listener_{unique}")
    yield config
    make_client(config, max_retries=3).indices.delete(index=f"{config.index_name},{config.state_index}",
                                                       ignore_unavailable=True)


@pytest.fixture
def world(cassandra, s3_blobs, search_config):
    context = cassandra_context(cassandra, s3_blobs, InProcessEventBus())
    index = opensearch_search(context, search_config)
    return context, index


def found(index: OpenSearchSearchIndex, mailbox_id, **criteria) -> list[int]:
    return [hit.uid for hit in index.search(SearchQuery.of(mailbox_id, **criteria))]


def test_appended_mail_is_found_by_sender_subject_body_and_flag(world):
    context, index = world
    user = Username.of(f"u{uuid.uuid4().hex[:10]}@example.com")
    inbox = MailboxPath.inbox(user)
    mailbox_id = context.manager.create_mailbox(inbox)
    wanted = context.manager.append(inbox, raw_message(sender="Grace Hopper <grace@navy.com>",
                                                       subject="Compiler notes", body="the first bug was a moth"))
    context.manager.append(inbox, raw_message(sender="Alan <alan@bletchley.org>", subject="Enigma"))
    uid = wanted.id.uid
    assert eventually(lambda: found(index, mailbox_id, from_="grace@navy.com")) == [uid]
    assert found(index, mailbox_id, from_="Hopper") == [uid]
    assert found(index, mailbox_id, subject="compiler notes") == [uid]
    assert found(index, mailbox_id, body="moth") == [uid]

    context.manager.set_flags(inbox, Flags.of(SystemFlag.FLAGGED), FlagsUpdateMode.ADD, uids=[uid])
    assert eventually(lambda: found(index, mailbox_id, flags_set={SystemFlag.FLAGGED})) == [uid]
    document = index.get(mailbox_id, uid)
    assert (document["user"], document["messageId"]) == (user.value, str(wanted.id.message_id))


def test_an_expunged_message_is_not_found_and_a_deleted_mailbox_leaves_nothing(world):
    context, index = world
    user = Username.of(f"u{uuid.uuid4().hex[:10]}@example.com")
    inbox, archive = MailboxPath.inbox(user), MailboxPath.of(user, "Archive")
    inbox_id = context.manager.create_mailbox(inbox)
    archive_id = context.manager.create_mailbox(archive)
    expunged = context.manager.append(inbox, raw_message(subject="delete me"))
    kept = context.manager.append(inbox, raw_message(subject="keep me"))
    for _ in range(3):
        context.manager.append(archive, raw_message(subject="archived"))
    assert eventually(lambda: len(found(index, archive_id)) == 3)
    assert eventually(lambda: len(found(index, inbox_id)) == 2)

    context.manager.set_flags(inbox, Flags.of(SystemFlag.DELETED), FlagsUpdateMode.ADD, uids=[expunged.id.uid])
    context.manager.expunge(inbox)
    assert eventually(lambda: found(index, inbox_id) == [kept.id.uid])
    assert found(index, inbox_id, subject="delete me") == []

    context.manager.delete_mailbox(archive)   # right after indexing: delete-by-query must still see them
    assert eventually(lambda: found(index, archive_id) == [])
    assert found(index, inbox_id) == [kept.id.uid]


def test_an_unreachable_opensearch_leaves_a_dead_letter_of_the_indexing_group(cassandra, s3_blobs, search_config):
    bus = InProcessEventBus(retries=1)
    context = cassandra_context(cassandra, s3_blobs, bus)
    opensearch_search(context, replace(search_config, urls=("http://127.0.0.1:1",), timeout=2.0))   # starts anyway
    user = Username.of(f"u{uuid.uuid4().hex[:10]}@example.com")
    inbox = MailboxPath.inbox(user)
    context.manager.create_mailbox(inbox)
    result = context.manager.append(inbox, raw_message())   # the mail is stored all the same
    assert context.manager.get_messages(inbox)[0].uid == result.id.uid
    assert GROUP in bus.dead_letters.groups()
