"""Index administration on OpenSearch 2.19: what the server does at start and what the alias-swap and
reindex DAGs will call. Every test uses index, alias and state names of its own."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace

import pytest

from mailserver.model.flags import Flags, SystemFlag
from mailserver.model.ids import MailboxId, MessageId
from mailserver.model.message import MessageMetadata
from mailserver.search.api import FlagsUpdate, SearchIndexError, SearchQuery
from mailserver.search.config import SearchConfig
from mailserver.search.document import message_document
from mailserver.search.index import (
    alias_indices,
    bulk_index,
    create_index,
    drop_index,
    ensure_configured_index,
    ensure_index,
    make_client,
    move_alias,
    record_current_index,
    recorded_index,
)
from mailserver.search.mapping import MAILBOX_MAPPING, index_body
from mailserver.search.opensearch import OpenSearchSearchIndex
from tests.contract.search_contract import T0, raw_message

pytestmark = pytest.mark.integration


@pytest.fixture
def names(stack) -> Iterator[SearchConfig]:
    tag = uuid.uuid4().hex[:10]
    config = SearchConfig(urls=(stack.opensearch_url,), index_name=f"mailbox_admin_{tag}",
                          read_alias=f"read_{tag}", write_alias=f"write_{tag}", shards=1, replicas=0,
                          state_index=f"state_{tag}")
    yield config
    client = make_client(config, max_retries=3)
    client.indices.delete(index=f"*{tag}*", ignore_unavailable=True, expand_wildcards="all")


@pytest.fixture
def client(names):
    return make_client(names, max_retries=3)


def document(mailbox: MailboxId, uid: int, **extra) -> dict:
    meta = MessageMetadata(mailbox_id=mailbox, message_id=MessageId.generate(), uid=uid, mod_seq=1, flags=Flags(),
                           thread_id=MessageId.generate(), internal_date=T0, save_date=T0, body_start_octet=0,
                           size=100, header_blob_id="h")
    return {**message_document(meta, raw_message(subject=f"message {uid}"), "alice@example.com"), **extra}


def test_ensure_index_creates_james_mapping_and_both_aliases_once(client, names):
    body = index_body(shards=2, replicas=0)
    assert ensure_index(client, names.index_name, body, read_alias=names.read_alias, write_alias=names.write_alias)
    assert not ensure_index(client, names.index_name, body, read_alias=names.read_alias,
                            write_alias=names.write_alias)
    assert alias_indices(client, names.read_alias) == alias_indices(client, names.write_alias) == [names.index_name]
    mapping = client.indices.get_mapping(index=names.index_name)[names.index_name]["mappings"]
    assert mapping["dynamic"] == "strict" and mapping["_routing"] == {"required": True}
    assert mapping["properties"] == MAILBOX_MAPPING["properties"]   # OpenSearch kept James's mapping as sent
    settings = client.indices.get_settings(index=names.index_name)[names.index_name]["settings"]["index"]
    assert settings["number_of_shards"] == "2"
    assert settings["analysis"]["analyzer"]["keep_mail_and_url"]["tokenizer"] == "uax_url_email"


def test_ensure_index_leaves_an_alias_that_names_another_index(client, names):
    ensure_index(client, names.index_name, index_body(1, 0), read_alias=names.read_alias,
                 write_alias=names.write_alias)
    other = names.index_name + "_v2"
    ensure_index(client, other, index_body(1, 0), read_alias=names.read_alias, write_alias=names.write_alias)
    assert alias_indices(client, names.read_alias) == [names.index_name]


def test_the_recorded_index_wins_over_the_configured_name(client, names):
    """After an alias swap the DAG records the new index: a server starting must not recreate the old one."""
    swapped = names.index_name + "_v2"
    record_current_index(client, swapped, read_alias=names.read_alias, write_alias=names.write_alias,
                         state_index=names.state_index)
    assert ensure_configured_index(client, names) == swapped
    assert not client.indices.exists(index=names.index_name)
    assert alias_indices(client, names.read_alias) == [swapped]
    stored = client.get(index=names.state_index, id=names.read_alias)["_source"]
    assert (stored["index"], stored["writeAlias"]) == (swapped, names.write_alias)


def test_a_first_start_records_the_configured_index_and_a_new_record_keeps_the_previous(client, names):
    assert recorded_index(client, read_alias=names.read_alias, state_index=names.state_index) is None
    ensure_configured_index(client, names)
    assert recorded_index(client, read_alias=names.read_alias, state_index=names.state_index) == names.index_name
    record_current_index(client, "mailbox_v9", read_alias=names.read_alias, state_index=names.state_index)
    stored = client.get(index=names.state_index, id=names.read_alias)["_source"]
    assert (stored["index"], stored["previousIndex"]) == ("mailbox_v9", names.index_name)


def test_alias_swap_writes_to_both_indices_then_reads_move_atomically(client, names):
    old = ensure_configured_index(client, names)
    new = names.index_name + "_v2"
    index = OpenSearchSearchIndex(client, names)
    mailbox = MailboxId.generate()
    index.index_documents([document(mailbox, 1)])
    ensure_index(client, new, index_body(2, 0), read_alias=names.read_alias, write_alias=names.write_alias)
    client.indices.update_aliases(body={"actions": [{"add": {"index": new, "alias": names.write_alias}}]})
    assert alias_indices(client, names.write_alias) == sorted([old, new])

    # during the swap: to both (the alias, used directly since the first write, now refuses the write)
    assert index.index_documents([document(mailbox, 2)]).succeeded == 2
    assert index.update_flags(mailbox, [FlagsUpdate(2, Flags.of(SystemFlag.SEEN), 2)]) == []
    assert index.update_flags(mailbox, [FlagsUpdate(1, Flags.of(SystemFlag.SEEN), 2)]) == [1]   # not copied yet
    index.refresh()
    assert client.count(index=new)["count"] == 1 and client.count(index=old)["count"] == 2

    assert move_alias(client, names.read_alias, new) == [old]
    assert alias_indices(client, names.read_alias) == [new]
    with pytest.raises(ValueError, match="still behind alias"):
        drop_index(client, new, protected_aliases=[names.read_alias])
    assert [h.uid for h in index.search(SearchQuery.of(mailbox))] == [2]
    assert index.get(mailbox, 2)["isUnread"] is False

    index.delete(mailbox, [2])
    index.refresh()
    assert client.count(index=new)["count"] == 0 and client.count(index=old)["count"] == 1
    remove_write = {"actions": [{"remove": {"index": old, "alias": names.write_alias}}]}
    client.indices.update_aliases(body=remove_write)
    assert drop_index(client, old, protected_aliases=[names.read_alias])
    assert not drop_index(client, old)


def test_bulk_index_reads_a_generator_once_in_chunks_and_reports_refused_documents(client, names):
    ensure_configured_index(client, names)
    mailbox = MailboxId.generate()
    documents = (document(mailbox, uid) for uid in range(1, 11))
    report = bulk_index(client, documents, write_alias=names.write_alias, chunk_size=3, refresh=True)
    assert (report.succeeded, report.failures) == (10, {})
    assert client.count(index=names.read_alias)["count"] == 10

    refused = document(mailbox, 11, notInJamesMapping="x")   # dynamic: strict
    report = bulk_index(client, [refused, document(mailbox, 12)], write_alias=names.write_alias)
    assert report.succeeded == 1 and list(report.failures) == [f"{mailbox}:11"]
    assert "strict_dynamic_mapping_exception" in report.failures[f"{mailbox}:11"]
    with pytest.raises(SearchIndexError, match="1 document"):
        report.raise_for_failures()


def test_a_missing_write_alias_is_an_error_not_an_auto_created_index(client, names):
    with pytest.raises(SearchIndexError, match="names no index"):
        bulk_index(client, [document(MailboxId.generate(), 1)], write_alias=names.write_alias)
    assert not client.indices.exists(index=names.write_alias)


def test_the_adapter_creates_its_index_at_its_first_write_when_start_could_not(client, names):
    index = OpenSearchSearchIndex(client, names)   # never ensured
    mailbox = MailboxId.generate()
    assert index.index_documents([document(mailbox, 1)]).succeeded == 1
    assert alias_indices(client, names.write_alias) == [names.index_name]


def _counting_alias_lookups(client, monkeypatch) -> list[str]:
    lookups: list[str] = []
    original = client.indices.get_alias

    def counted(*args, **kwargs):
        lookups.append(kwargs.get("name", ""))
        return original(*args, **kwargs)
    monkeypatch.setattr(client.indices, "get_alias", counted)
    return lookups


def test_while_the_write_alias_names_one_index_writes_go_through_it_without_a_lookup(client, names, monkeypatch):
    ensure_configured_index(client, names)
    lookups = _counting_alias_lookups(client, monkeypatch)
    index = OpenSearchSearchIndex(client, names)
    mailbox = MailboxId.generate()
    for uid in (1, 2, 3):
        assert index.index_documents([document(mailbox, uid)]).succeeded == 1
    assert lookups == [names.write_alias]   # the first write only
    index.refresh()
    assert client.count(index=names.index_name)["count"] == 3


def test_a_write_after_the_alias_moved_to_another_index_lands_in_that_index(client, names, monkeypatch):
    old = ensure_configured_index(client, names)
    index = OpenSearchSearchIndex(client, names)
    mailbox = MailboxId.generate()
    index.index_documents([document(mailbox, 1)])
    new = names.index_name + "_v2"
    create_index(client, new, index_body(1, 0))
    move_alias(client, names.write_alias, new)
    lookups = _counting_alias_lookups(client, monkeypatch)
    assert index.index_documents([document(mailbox, 2)]).succeeded == 1
    assert lookups == []   # OpenSearch resolved the alias
    index.refresh()
    assert client.count(index=old)["count"] == 1 and client.count(index=new)["count"] == 1


def test_a_write_after_the_alias_was_removed_is_refused_and_creates_no_index(client, names):
    index = OpenSearchSearchIndex(client, names)
    index.ensure()   # as the server starts (an adapter never ensured would create the alias again)
    old = names.index_name
    mailbox = MailboxId.generate()
    index.index_documents([document(mailbox, 1)])
    client.indices.update_aliases(body={"actions": [{"remove": {"index": old, "alias": names.write_alias}}]})
    with pytest.raises(SearchIndexError, match="names no index"):
        index.index_documents([document(mailbox, 2)])
    assert not client.indices.exists(index=names.write_alias)


def test_an_unreachable_opensearch_raises_search_index_error(names):
    unreachable = replace(names, urls=("http://127.0.0.1:1",), timeout=2.0)
    index = OpenSearchSearchIndex(make_client(unreachable), unreachable)
    with pytest.raises(SearchIndexError):
        index.index_documents([document(MailboxId.generate(), 1)])
    with pytest.raises(SearchIndexError):
        index.search(SearchQuery.of(MailboxId.generate()))
