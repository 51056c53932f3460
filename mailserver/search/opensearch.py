"""The search index on OpenSearch, as James's ``OpenSearchListeningMessageSearchIndex`` uses it.

Writes go through the write alias (to every index it names: two during an alias swap), reads
through the read alias; every request carries the mailbox id as routing (searches over fewer
than five mailboxes too, as ``OpenSearchSearcher``). Queries are James's ``DefaultCriterionConverter``
ones for the criteria of ``SearchQuery``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from opensearchpy import OpenSearch
from opensearchpy.exceptions import NotFoundError, OpenSearchException, TransportError

from mailserver.model.flags import SystemFlag
from mailserver.model.ids import MailboxId, MessageId
from mailserver.search import mapping as f
from mailserver.search.api import (
    FRAGMENT_SIZE,
    HIGHLIGHT_POST,
    HIGHLIGHT_PRE,
    BulkReport,
    FlagsUpdate,
    SearchHit,
    SearchIndex,
    SearchIndexError,
    SearchQuery,
    Snippet,
    SortClause,
    whole_second,
)
from mailserver.search.config import SearchConfig
from mailserver.search.document import document_id, flags_document, format_date, routing_key
from mailserver.search.index import bulk_index, ensure_configured_index, run_bulk, write_targets

log = logging.getLogger(__name__)

MAX_ROUTING_KEYS = 5          # OpenSearchSearcher: route only searches over fewer mailboxes
FLAGS_UPDATE_WINDOW = 32      # FLAGS_UPDATE_PROCESSING_WINDOW_SIZE
# A partial update that never goes back in time: updates delivered out of order keep the newest flags.
FLAGS_SCRIPT = ("if (ctx._source.modSeq != null && ctx._source.modSeq > params.doc.modSeq) { ctx.op = 'none' } "
                "else { ctx._source.putAll(params.doc) }")
SORT_FIELDS = {SortClause.ARRIVAL: f.DATE, SortClause.SENT_DATE: f.SENT_DATE, SortClause.SIZE: f.SIZE,
               SortClause.UID: f.UID}
FLAG_FIELDS = {SystemFlag.ANSWERED: f.IS_ANSWERED, SystemFlag.DELETED: f.IS_DELETED, SystemFlag.DRAFT: f.IS_DRAFT,
               SystemFlag.FLAGGED: f.IS_FLAGGED, SystemFlag.RECENT: f.IS_RECENT}
HIT_FIELDS = [f.MESSAGE_ID, f.MAILBOX_ID, f.UID]
ATTACHMENT_TEXT = f"{f.ATTACHMENTS}.{f.TEXT_CONTENT}"
# OpenSearchSearcher's highlight: the plain highlighter, two fragments, HTML-escaped text
_HIGHLIGHT_FIELD = {"force_source": True, "pre_tags": [HIGHLIGHT_PRE], "post_tags": [HIGHLIGHT_POST],
                    "fragment_size": FRAGMENT_SIZE, "number_of_fragments": 2, "type": "plain"}
HIGHLIGHT = {"encoder": "html", "fields": {name: dict(_HIGHLIGHT_FIELD)
                                           for name in (f.SUBJECT, f.TEXT_BODY, f.HTML_BODY, ATTACHMENT_TEXT)}}
# The body fragment: of the text body, else the HTML body, else an attachment's text (OpenSearchSearchHighlighter)
BODY_HIGHLIGHTS = (f.TEXT_BODY, f.HTML_BODY, ATTACHMENT_TEXT)
# What OpenSearch answers a write through an alias that names two indices (no write index) or none
# (``require_alias``): the documents are then written to the indices the alias names.
ALIAS_REFUSALS = ("illegal_argument_exception", "index_not_found_exception")

T = TypeVar("T")


def _wrapped(method: Callable[..., T]) -> Callable[..., T]:
    """Client and server errors become SearchIndexError (the listener raises it: the bus retries)."""

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> T:
        try:
            return method(*args, **kwargs)
        except (TransportError, OpenSearchException) as error:
            raise SearchIndexError(f"OpenSearch {method.__name__} failed: {error}") from error

    return call


class OpenSearchSearchIndex(SearchIndex):
    def __init__(self, client: OpenSearch, config: SearchConfig) -> None:
        self.client = client
        self.config = config
        self._ensured = False
        # The write alias named one index when last looked up: index through it without a lookup.
        # Shared by the listener threads; a stale value costs one refused request, never a lost write.
        self._alias_on_one_index = False

    @_wrapped
    def ensure(self) -> None:
        ensure_configured_index(self.client, self.config)
        self._ensured = True

    def _targets(self) -> list[str]:
        try:
            return write_targets(self.client, self.config.write_alias)
        except SearchIndexError:
            if self._ensured:
                raise
            self.ensure()   # first write of a process that could not ensure the index at start
            return write_targets(self.client, self.config.write_alias)

    @_wrapped
    def index_documents(self, documents: Iterable[dict[str, Any]]) -> BulkReport:
        """While the write alias names one index, documents go through the alias without looking it up
        (the lookup was a second request per event, issue 16). When OpenSearch refuses the alias (a swap
        added a second index, or it is gone), it is looked up and those documents are written to each
        index it names; the lookup is then made before every batch until it names one index again."""
        documents = list(documents)
        if not self._alias_on_one_index:
            return self._index_to_each_target(documents)
        report = bulk_index(self.client, documents, write_alias=self.config.write_alias, through_alias=True,
                            ignore=ALIAS_REFUSALS)
        if not report.skipped:
            return report
        again = [d for d in documents if document_id(d[f.MAILBOX_ID], d[f.UID]) in report.skipped]
        rest = self._index_to_each_target(again)
        return BulkReport(report.succeeded + rest.succeeded, {**report.failures, **rest.failures}, rest.skipped)

    def _index_to_each_target(self, documents: list[dict[str, Any]]) -> BulkReport:
        targets = self._targets()
        self._alias_on_one_index = len(targets) == 1
        return bulk_index(self.client, documents, write_alias=self.config.write_alias, targets=targets)

    @_wrapped
    def delete(self, mailbox_id: MailboxId, uids: Sequence[int]) -> None:
        if not uids:
            return
        actions = [{"_op_type": "delete", "_index": index, "_id": document_id(mailbox_id, uid),
                    "routing": routing_key(mailbox_id)} for index in self._targets() for uid in uids]
        run_bulk(self.client, actions, ignore=("not_found",)).raise_for_failures()

    @_wrapped
    def update_flags(self, mailbox_id: MailboxId, updates: Sequence[FlagsUpdate]) -> list[int]:
        targets = self._targets()
        missing: set[str] = set()
        for start in range(0, len(updates), FLAGS_UPDATE_WINDOW):
            window = updates[start:start + FLAGS_UPDATE_WINDOW]
            actions = [{"_op_type": "update", "_index": index, "_id": document_id(mailbox_id, u.uid),
                        "routing": routing_key(mailbox_id),
                        "script": {"lang": "painless", "source": FLAGS_SCRIPT,
                                   "params": {"doc": flags_document(u.flags, u.mod_seq)}}}
                       for index in targets for u in window]
            report = run_bulk(self.client, actions, ignore=("document_missing_exception",))
            report.raise_for_failures()
            missing.update(report.skipped)
        return sorted(int(key.rpartition(":")[2]) for key in missing)

    @_wrapped
    def delete_mailbox(self, mailbox_id: MailboxId) -> None:
        targets = ",".join(self._targets())
        # delete-by-query sees refreshed documents only: refresh first, or a message indexed in the
        # last second would survive its mailbox.
        self.client.indices.refresh(index=targets)
        response = self.client.delete_by_query(index=targets, routing=routing_key(mailbox_id), conflicts="proceed",
                                               body={"query": {"term": {f.MAILBOX_ID: str(mailbox_id)}}})
        if response.get("failures"):   # e.g. a shard unavailable: retried by the bus, delete-by-query is idempotent
            raise SearchIndexError(f"deleting the documents of mailbox {mailbox_id} failed: "
                                   f"{str(response['failures'])[:500]}")

    @_wrapped
    def search(self, query: SearchQuery) -> list[SearchHit]:
        return [SearchHit.of_document(hit["_source"]) for hit in self._hits(query, {})]

    @_wrapped
    def highlight(self, query: SearchQuery) -> list[Snippet]:
        return [_snippet(hit) for hit in self._hits(query, {"highlight": HIGHLIGHT})]

    def _hits(self, query: SearchQuery, extra: dict[str, Any]) -> list[dict[str, Any]]:
        if not query.mailbox_ids:
            return []
        params: dict[str, Any] = {}
        if len(query.mailbox_ids) < MAX_ROUTING_KEYS:
            params["routing"] = ",".join(routing_key(m) for m in query.mailbox_ids)
        body = {"query": to_query(query), "sort": to_sort(query), "size": query.limit, "_source": HIT_FIELDS,
                "track_total_hits": False, **extra}
        response = self.client.search(index=self.config.read_alias, body=body, **params)
        return list(response["hits"]["hits"])

    @_wrapped
    def get(self, mailbox_id: MailboxId, uid: int) -> dict[str, Any] | None:
        try:
            return self.client.get(index=self.config.read_alias, id=document_id(mailbox_id, uid),
                                   routing=routing_key(mailbox_id))["_source"]
        except NotFoundError:
            return None

    @_wrapped
    def refresh(self) -> None:
        self.client.indices.refresh(index=",".join([self.config.read_alias, self.config.write_alias]))


def _snippet(hit: dict[str, Any]) -> Snippet:
    found = hit.get("highlight") or {}
    subject = found.get(f.SUBJECT)
    body = next((found[name] for name in BODY_HIGHLIGHTS if found.get(name)), None)
    return Snippet(MessageId.of(hit["_source"][f.MESSAGE_ID]), subject[0] if subject else None,
                   body[0] if body else None)


# ---------------------------------------------------------------- SearchQuery -> OpenSearch
def _match(field_name: str, text: str, operator: str | None = None) -> dict[str, Any]:
    options: dict[str, Any] = {"query": text}
    if operator:
        options["operator"] = operator
    return {"match": {field_name: options}}


def _any(*queries: dict[str, Any]) -> dict[str, Any]:
    return {"bool": {"should": list(queries), "minimum_should_match": 1}}


def _address(field_name: str, value: str) -> dict[str, Any]:
    """DefaultCriterionConverter.manageAddressFields."""
    return _any(_match(f"{field_name}.{f.NAME}", value), _match(f"{field_name}.{f.ADDRESS}", value),
                _match(f"{field_name}.{f.DOMAIN}", value), _match(f"{field_name}.{f.ADDRESS}.{f.RAW}", value))


def _flag(flag: SystemFlag, is_set: bool) -> dict[str, Any]:
    if flag is SystemFlag.SEEN:
        return {"term": {f.IS_UNREAD: not is_set}}
    return {"term": {FLAG_FIELDS[flag]: is_set}}


def _header(name: str, value: str | None) -> dict[str, Any]:
    """James's ExistsOperator / ContainsOperator header queries, on the nested header fields."""
    term: dict[str, Any] = {"term": {f"{f.HEADERS}.{f.NAME}": name}}
    inner = term if value is None else {"bool": {"must": [term, _match(f"{f.HEADERS}.{f.VALUE}", value)]}}
    return {"nested": {"path": f.HEADERS, "query": inner, "score_mode": "avg"}}


def to_query(query: SearchQuery) -> dict[str, Any]:
    scope = {"terms": {f.MAILBOX_ID: [str(m) for m in query.mailbox_ids]}}
    criteria = _criteria(query)
    criteria["bool"]["filter"].insert(0, scope)
    return criteria


def _criteria(query: SearchQuery) -> dict[str, Any]:
    """The query's criteria as a bool query, its scope aside (nested criteria have none)."""
    must: list[dict[str, Any]] = [_criteria(q) for q in query.all_of]
    must_not: list[dict[str, Any]] = [_criteria(q) for q in query.none_of]
    filters: list[dict[str, Any]] = []
    if query.any_of:
        must.append(_any(*(_criteria(q) for q in query.any_of)))
    must += [_header(name, value) for name, value in query.headers]
    if query.attachment_text is not None:
        must.append(_any(_match(f"{f.ATTACHMENTS}.{f.TEXT_CONTENT}", query.attachment_text, "and"),
                         {"term": {f"{f.ATTACHMENTS}.{f.FILE_EXTENSION}": query.attachment_text}}))
    for field_name, value in ((f.FROM, query.from_), (f.TO, query.to), (f.CC, query.cc), (f.BCC, query.bcc)):
        if value is not None:
            must.append(_address(field_name, value))
    if query.subject is not None:
        must.append(_match(f.SUBJECT, query.subject, "and"))
    if query.body is not None:
        must.append(_any(_match(f.TEXT_BODY, query.body, "and"), _match(f.HTML_BODY, query.body, "and")))
    if query.attachment_file_name is not None:
        must.append(_any(_match(f"{f.ATTACHMENTS}.{f.FILE_NAME}", query.attachment_file_name, "and"),
                         {"term": {f"{f.ATTACHMENTS}.{f.FILE_EXTENSION}": query.attachment_file_name}}))
    if query.has_attachment is not None:
        filters.append({"term": {f.HAS_ATTACHMENT: query.has_attachment}})
    filters += [_flag(flag, True) for flag in sorted(query.flags_set)]
    filters += [_flag(flag, False) for flag in sorted(query.flags_unset)]
    filters += [{"term": {f.USER_FLAGS: flag}} for flag in sorted(query.user_flags_set)]
    must_not += [{"term": {f.USER_FLAGS: flag}} for flag in sorted(query.user_flags_unset)]
    dates: dict[str, str] = {}
    if query.internal_date_from is not None:
        dates["gte"] = format_date(whole_second(query.internal_date_from))
    if query.internal_date_before is not None:
        dates["lt"] = format_date(whole_second(query.internal_date_before))
    if dates:
        filters.append({"range": {f.DATE: dates}})
    sizes: dict[str, int] = {}
    if query.size_greater_than is not None:
        sizes["gt"] = query.size_greater_than
    if query.size_less_than is not None:
        sizes["lt"] = query.size_less_than
    if sizes:
        filters.append({"range": {f.SIZE: sizes}})
    if query.uids is not None:
        filters.append({"terms": {f.UID: list(query.uids)}})
    if query.message_id is not None:
        filters.append({"term": {f.MESSAGE_ID: str(query.message_id)}})
    boolean: dict[str, Any] = {"filter": filters}
    if must:
        boolean["must"] = must
    if must_not:
        boolean["must_not"] = must_not
    return {"bool": boolean}


def to_sort(query: SearchQuery) -> list[dict[str, Any]]:
    """SortConverter (mode min), then mailbox id and uid ascending so equal keys come in a stable order."""
    sorts: list[dict[str, Any]] = [{SORT_FIELDS[s.clause]: {"order": "desc" if s.reverse else "asc", "mode": "min"}}
                                   for s in query.sort]
    sorts += [{f.MAILBOX_ID: {"order": "asc"}}, {f.UID: {"order": "asc"}}]
    return sorts
