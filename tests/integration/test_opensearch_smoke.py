"""OpenSearch does what the search-index procedures need: aliases, bulk, search, _reindex."""

from __future__ import annotations

import pytest
from opensearchpy import helpers

from tests.support.clients import opensearch_client

pytestmark = pytest.mark.integration

SETTINGS = {"settings": {"number_of_shards": 1, "number_of_replicas": 0},
            "mappings": {"properties": {"subject": {"type": "text"}, "userId": {"type": "keyword"}}}}


def test_alias_bulk_search_and_reindex(stack, unique):
    client = opensearch_client(stack)
    old, new, alias = f"mailbox_v1_{unique}", f"mailbox_v2_{unique}", f"mailbox_read_{unique}"
    try:
        client.indices.create(index=old, body=SETTINGS)
        client.indices.put_alias(index=old, name=alias)
        docs = [{"_index": alias, "_id": str(i), "subject": f"hello number {i}", "userId": f"u{i % 2}"}
                for i in range(10)]
        ok, errors = helpers.bulk(client, docs, refresh="wait_for")
        assert (ok, errors) == (10, [])

        hits = client.search(index=alias, body={"query": {"term": {"userId": "u1"}}})["hits"]
        assert hits["total"]["value"] == 5

        client.indices.create(index=new, body=SETTINGS)
        result = client.reindex(body={"source": {"index": old}, "dest": {"index": new}},
                                refresh=True, wait_for_completion=True)
        assert result["created"] == 10 and result["failures"] == []

        # Alias swap: move the alias atomically from the old index to the new one.
        client.indices.update_aliases(body={"actions": [
            {"remove": {"index": old, "alias": alias}}, {"add": {"index": new, "alias": alias}}]})
        assert list(client.indices.get_alias(name=alias)) == [new]
        assert client.count(index=alias)["count"] == 10

        client.indices.delete_alias(index=new, name=alias)
        assert not client.indices.exists_alias(name=alias)
    finally:
        client.indices.delete(index=f"{old},{new}", ignore_unavailable=True)
