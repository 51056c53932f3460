"""The OpenSearch adapter's requests (no server): James's routing, aliases and query shapes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from mailserver.model.flags import SystemFlag
from mailserver.model.ids import MailboxId, MessageId
from mailserver.search.api import SearchQuery, Snippet, Sort, SortClause
from mailserver.search.config import SearchConfig
from mailserver.search.opensearch import OpenSearchSearchIndex, to_query, to_sort

CONFIG = SearchConfig(read_alias="readAlias", write_alias="writeAlias")


class FakeClient:
    def __init__(self) -> None:
        self.searches: list[dict[str, Any]] = []

    def search(self, index: str, body: dict[str, Any], **params: Any) -> dict[str, Any]:
        self.searches.append({"index": index, "body": body, **params})
        return {"hits": {"hits": []}}


def test_searches_read_the_read_alias_routed_by_mailbox_below_five_mailboxes():
    client = FakeClient()
    index = OpenSearchSearchIndex(client, CONFIG)  # type: ignore[arg-type]
    few = [MailboxId.generate() for _ in range(4)]
    index.search(SearchQuery.of(few))
    index.search(SearchQuery.of([*few, MailboxId.generate()]))
    assert client.searches[0]["index"] == "readAlias"
    assert client.searches[0]["routing"] == ",".join(str(m) for m in few)
    assert "routing" not in client.searches[1]
    assert client.searches[0]["body"]["_source"] == ["messageId", "mailboxId", "uid"]
    assert index.search(SearchQuery(mailbox_ids=())) == [] and len(client.searches) == 2


def test_query_shapes_follow_james_criterion_converter():
    mailbox = MailboxId.generate()
    query = to_query(SearchQuery.of(mailbox, from_="bob", subject="quarterly report", body="moth",
                                    flags_set={SystemFlag.SEEN}, flags_unset={SystemFlag.DELETED},
                                    user_flags_unset={"$junk"},
                                    internal_date_from=datetime(2024, 5, 2, 10, 0, 0, 1, tzinfo=UTC),
                                    size_less_than=1000))["bool"]
    assert query["filter"][0] == {"terms": {"mailboxId": [str(mailbox)]}}
    assert {"term": {"isUnread": False}} in query["filter"]
    assert {"term": {"isDeleted": False}} in query["filter"]
    assert {"range": {"date": {"gte": "2024-05-02T10:00:01+0000"}}} in query["filter"]   # rounded up
    assert {"range": {"size": {"lt": 1000}}} in query["filter"]
    address = query["must"][0]["bool"]["should"]
    assert [next(iter(q["match"])) for q in address] == ["from.name", "from.address", "from.domain", "from.address.raw"]
    assert query["must"][1] == {"match": {"subject": {"query": "quarterly report", "operator": "and"}}}
    assert [next(iter(q["match"])) for q in query["must"][2]["bool"]["should"]] == ["textBody", "htmlBody"]
    assert query["must_not"] == [{"term": {"userFlags": "$junk"}}]


def test_sorts_with_tie_breakers():
    query = SearchQuery.of(MailboxId.generate(), sort=(Sort(SortClause.ARRIVAL, reverse=True), Sort(SortClause.SIZE)))
    assert to_sort(query) == [{"date": {"order": "desc", "mode": "min"}}, {"size": {"order": "asc", "mode": "min"}},
                              {"mailboxId": {"order": "asc"}}, {"uid": {"order": "asc"}}]
    assert to_sort(SearchQuery.of(MailboxId.generate()))[0] == {"uid": {"order": "asc", "mode": "min"}}


def test_query_model_validation():
    mailbox = MailboxId.generate()
    assert SearchQuery.of([mailbox, mailbox]).mailbox_ids == (mailbox,)
    assert SearchQuery.of(mailbox, sort=()).sort == (Sort(SortClause.UID),)
    for bad in ({"limit": 0}, {"limit": 10_001}, {"subject": "  "}, {"size_less_than": -1}):
        with pytest.raises(ValueError):
            SearchQuery.of(mailbox, **bad)


def test_highlight_asks_james_highlight_fields_and_reads_the_body_fragment_by_preference():
    message_id = MessageId.generate()

    class Highlighting(FakeClient):
        def search(self, index: str, body: dict[str, Any], **params: Any) -> dict[str, Any]:
            super().search(index, body, **params)
            return {"hits": {"hits": [{"_source": {"messageId": str(message_id)}, "highlight": {
                "htmlBody": ["<mark>moth</mark> in html"], "attachments.textContent": ["a <mark>moth</mark>"]}}]}}

    client = Highlighting()
    snippets = OpenSearchSearchIndex(client, CONFIG).highlight(SearchQuery.of(MailboxId.generate(), body="moth"))  # type: ignore[arg-type]
    highlight = client.searches[0]["body"]["highlight"]
    assert highlight["encoder"] == "html"
    assert set(highlight["fields"]) == {"subject", "textBody", "htmlBody", "attachments.textContent"}
    assert highlight["fields"]["subject"]["pre_tags"] == ["<mark>"]
    assert snippets == [Snippet(message_id, None, "<mark>moth</mark> in html")]
