"""The search contract on OpenSearch 2.19: James's mapping and aliases, an index of this session's own."""

from __future__ import annotations

import pytest

from mailserver.search.config import SearchConfig
from mailserver.search.index import make_client
from mailserver.search.opensearch import OpenSearchSearchIndex
from tests.contract.search_contract import SearchIndexContract

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def opensearch_index(stack, unique):
    """Index ``mailbox_test_<session>`` with aliases of its own, two shards (routing matters), dropped at the end."""
    config = SearchConfig(urls=(stack.opensearch_url,), index_name=f"mailbox_contract_{unique}",
                          read_alias=f"mailboxReadAlias_contract_{unique}",
                          write_alias=f"mailboxWriteAlias_contract_{unique}", shards=2, replicas=0,
                          state_index=f"mailserver_search_state_contract_{unique}")
    client = make_client(config, max_retries=3)
    index = OpenSearchSearchIndex(client, config)
    index.ensure()
    yield index
    client.indices.delete(index=f"{config.index_name},{config.state_index}", ignore_unavailable=True)


class TestOpenSearchSearchIndex(SearchIndexContract):
    @pytest.fixture
    def index(self, opensearch_index):
        return opensearch_index
