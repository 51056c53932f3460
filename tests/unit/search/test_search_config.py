"""Search settings: James's names and defaults, from the environment; malformed values stop the server."""

from __future__ import annotations

import pytest

from mailserver.runtime.settings import ServeSettings, SettingsError
from mailserver.search.config import DocumentOptions, SearchConfig


def test_no_opensearch_url_means_no_search():
    assert SearchConfig.from_env({}) is None
    assert ServeSettings.from_env({}).search is None


def test_james_defaults():
    config = SearchConfig.from_env({"OPENSEARCH_URL": "http://os.local:9200/"})
    assert config == SearchConfig(urls=("http://os.local:9200",), index_name="mailbox_v1",
                                  read_alias="mailboxReadAlias", write_alias="mailboxWriteAlias", shards=5,
                                  replicas=1, wait_for_active_shards=1, documents=DocumentOptions(), timeout=30.0,
                                  state_index="mailserver_search_state")
    assert ServeSettings.from_env({"OPENSEARCH_URL": "http://os.local:9200"}).search == config


def test_overrides_and_james_legacy_names():
    config = SearchConfig.from_env({
        "OPENSEARCH_URL": "http://a:9200, https://b:9200", "OPENSEARCH_INDEX_NAME": "mailbox_v2",
        "OPENSEARCH_ALIAS_READ_MAILBOX_NAME": "readMe", "OPENSEARCH_ALIAS_WRITE_NAME": "writeMe",
        "OPENSEARCH_NB_SHARDS": "2", "OPENSEARCH_NB_REPLICA": "0", "OPENSEARCH_INDEX_WAIT_FOR_ACTIVE_SHARDS": "0",
        "OPENSEARCH_INDEX_ATTACHMENTS": "false", "OPENSEARCH_INDEX_HEADERS": "no", "OPENSEARCH_INDEX_BODY": "0",
        "OPENSEARCH_INDEX_USER": "off", "OPENSEARCH_REQUEST_TIMEOUT_SECONDS": "5",
        "OPENSEARCH_STATE_INDEX": "state_x"})
    assert config.urls == ("http://a:9200", "https://b:9200")
    assert (config.index_name, config.read_alias, config.write_alias) == ("mailbox_v2", "readMe", "writeMe")
    assert (config.shards, config.replicas, config.wait_for_active_shards, config.timeout) == (2, 0, 0, 5.0)
    assert config.documents == DocumentOptions(False, False, False, False)
    assert config.state_index == "state_x"
    # the mailbox-specific name wins over James's generic fallback
    assert SearchConfig.from_env({"OPENSEARCH_URL": "http://a", "OPENSEARCH_INDEX_NAME": "generic",
                                  "OPENSEARCH_INDEX_MAILBOX_NAME": "specific"}).index_name == "specific"


@pytest.mark.parametrize(("env", "message"), [
    ({"OPENSEARCH_URL": "os.local:9200"}, "OPENSEARCH_URL"),
    ({"OPENSEARCH_NB_SHARDS": "0"}, "OPENSEARCH_NB_SHARDS"),
    ({"OPENSEARCH_NB_REPLICA": "one"}, "OPENSEARCH_NB_REPLICA"),
    ({"OPENSEARCH_INDEX_BODY": "maybe"}, "OPENSEARCH_INDEX_BODY"),
    ({"OPENSEARCH_INDEX_MAILBOX_NAME": "Mailbox_V1"}, "index_name"),
    ({"OPENSEARCH_ALIAS_READ_MAILBOX_NAME": "bad alias"}, "read_alias"),
    ({"OPENSEARCH_ALIAS_READ_MAILBOX_NAME": "same", "OPENSEARCH_ALIAS_WRITE_MAILBOX_NAME": "same"}, "must differ"),
])
def test_malformed_values_are_refused_with_the_variable_named(env, message):
    env = {"OPENSEARCH_URL": "http://os.local:9200", **env}
    with pytest.raises(ValueError, match=message):
        SearchConfig.from_env(env)
    with pytest.raises(SettingsError, match=message):
        ServeSettings.from_env(env)
