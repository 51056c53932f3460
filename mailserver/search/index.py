"""Index administration on OpenSearch: creation with both aliases, alias moves, the recorded current
index, and batched writes through the write alias. What the server does at start and what the
search-index DAGs (alias swap, reindex) call.

The *recorded current index* lives in OpenSearch itself, in a small index of ours
(``mailserver_search_state`` by default, ``OPENSEARCH_STATE_INDEX``): one document per read
alias, id = the read alias name, ``{"index": ..., "readAlias": ..., "writeAlias": ...,
"previousIndex": ..., "recordedAt": ...}``. A server starting takes the recorded index over
``OPENSEARCH_INDEX_MAILBOX_NAME``, so after an alias swap it never recreates the old index (the
step James's guide asks operators to do by hand in ``opensearch.properties``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from opensearchpy import OpenSearch, helpers
from opensearchpy.exceptions import NotFoundError, OpenSearchException, RequestError, TransportError

from mailserver.search import mapping as f
from mailserver.search.api import BulkReport, SearchIndexError
from mailserver.search.config import DEFAULT_READ_ALIAS, DEFAULT_STATE_INDEX, DEFAULT_WRITE_ALIAS, SearchConfig
from mailserver.search.document import document_id, routing_key
from mailserver.search.mapping import index_body

log = logging.getLogger(__name__)

BULK_CHUNK = 500
STATE_MAPPING: dict[str, Any] = {"dynamic": "strict", "properties": {
    "index": {"type": "keyword"}, "readAlias": {"type": "keyword"}, "writeAlias": {"type": "keyword"},
    "previousIndex": {"type": "keyword"}, "recordedAt": {"type": "date"}}}


def make_client(config: SearchConfig, *, max_retries: int = 1, connections: int = 32) -> OpenSearch:
    """A client on ``config.urls``; few retries: the event bus retries a failed listener with backoff.

    ``connections`` per node: at least the threads that use the client at once (the event bus's
    listener pool, IMAP SEARCH, WebAdmin); urllib3's default of 10 made it drop and reopen
    connections under load ("Connection pool is full").
    """
    return OpenSearch(hosts=list(config.urls), timeout=config.timeout, max_retries=max_retries,
                      retry_on_timeout=False, pool_maxsize=connections)


# ---------------------------------------------------------------- index and aliases
def create_index(client: OpenSearch, name: str, body: dict[str, Any] | None = None, *,
                 wait_for_active_shards: int = 1) -> bool:
    """Create ``name`` with ``body`` (James's settings and mapping by default); False if it exists."""
    if client.indices.exists(index=name):
        return False
    try:
        client.indices.create(index=name, body=body if body is not None else index_body(),
                              params={"wait_for_active_shards": str(wait_for_active_shards)})
    except RequestError as error:
        if error.error == "resource_already_exists_exception":   # created concurrently
            return False
        raise
    log.info("search index %s created", name)
    return True


def ensure_index(client: OpenSearch, name: str, body: dict[str, Any] | None = None, *,
                 read_alias: str = DEFAULT_READ_ALIAS, write_alias: str = DEFAULT_WRITE_ALIAS,
                 wait_for_active_shards: int = 1) -> bool:
    """James's start-up: create ``name`` if missing, then each alias that exists nowhere, on ``name``.

    An alias that already names another index is left alone (during a swap both may exist).
    Idempotent; returns whether the index was created.
    """
    created = create_index(client, name, body, wait_for_active_shards=wait_for_active_shards)
    for alias in (read_alias, write_alias):
        if not client.indices.exists_alias(name=alias):
            add_alias(client, name, alias)
    return created


def alias_indices(client: OpenSearch, alias: str) -> list[str]:
    """The indices ``alias`` names (sorted), none when it does not exist."""
    try:
        return sorted(client.indices.get_alias(name=alias))
    except NotFoundError:
        return []


def add_alias(client: OpenSearch, index: str, alias: str) -> None:
    client.indices.update_aliases(body={"actions": [{"add": {"index": index, "alias": alias}}]})
    log.info("alias %s added to index %s", alias, index)


def remove_alias(client: OpenSearch, index: str, alias: str) -> None:
    client.indices.update_aliases(body={"actions": [{"remove": {"index": index, "alias": alias}}]})
    log.info("alias %s removed from index %s", alias, index)


def move_alias(client: OpenSearch, alias: str, index: str) -> list[str]:
    """Point ``alias`` at ``index`` only, atomically (one ``_aliases`` call); returns the indices it left."""
    previous = [i for i in alias_indices(client, alias) if i != index]
    actions = [{"remove": {"index": i, "alias": alias}} for i in previous]
    actions.append({"add": {"index": index, "alias": alias}})
    client.indices.update_aliases(body={"actions": actions})
    log.info("alias %s moved to index %s (was on %s)", alias, index, previous or "nothing")
    return previous


def drop_index(client: OpenSearch, index: str, *, protected_aliases: Iterable[str] = (DEFAULT_READ_ALIAS,)) -> bool:
    """Delete ``index`` unless one of ``protected_aliases`` still names it (ValueError); False if missing."""
    for alias in protected_aliases:
        if index in alias_indices(client, alias):
            raise ValueError(f"index {index} is still behind alias {alias}: move the alias first")
    try:
        client.indices.delete(index=index)
    except NotFoundError:
        return False
    log.info("search index %s dropped", index)
    return True


# ---------------------------------------------------------------- the recorded current index
def record_current_index(client: OpenSearch, index: str, *, read_alias: str = DEFAULT_READ_ALIAS,
                         write_alias: str = DEFAULT_WRITE_ALIAS, state_index: str = DEFAULT_STATE_INDEX) -> None:
    """Record ``index`` as the current index of ``read_alias`` (the previous one is kept as ``previousIndex``)."""
    create_index(client, state_index, {"settings": {"number_of_shards": 1, "auto_expand_replicas": "0-1"},
                                       "mappings": STATE_MAPPING})
    previous = recorded_index(client, read_alias=read_alias, state_index=state_index)
    document = {"index": index, "readAlias": read_alias, "writeAlias": write_alias,
                "recordedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    if previous is not None and previous != index:
        document["previousIndex"] = previous
    client.index(index=state_index, id=read_alias, body=document, refresh="wait_for")
    log.info("search index %s recorded as current for %s", index, read_alias)


def recorded_index(client: OpenSearch, *, read_alias: str = DEFAULT_READ_ALIAS,
                   state_index: str = DEFAULT_STATE_INDEX) -> str | None:
    try:
        return client.get(index=state_index, id=read_alias)["_source"]["index"]
    except NotFoundError:   # no state index, or nothing recorded for this alias
        return None


def resolve_index_name(client: OpenSearch, config: SearchConfig) -> str:
    """The recorded current index if any, else the configured one (a mismatch is logged)."""
    recorded = recorded_index(client, read_alias=config.read_alias, state_index=config.state_index)
    if recorded is None:
        return config.index_name
    if recorded != config.index_name:
        log.warning("search index: %s is recorded as current for %s, OPENSEARCH_INDEX_MAILBOX_NAME says %s; "
                    "using %s", recorded, config.read_alias, config.index_name, recorded)
    return recorded


def ensure_configured_index(client: OpenSearch, config: SearchConfig) -> str:
    """What a server does at start: ensure the current index and both aliases, record it; returns its name."""
    name = resolve_index_name(client, config)
    ensure_index(client, name, index_body(config.shards, config.replicas), read_alias=config.read_alias,
                 write_alias=config.write_alias, wait_for_active_shards=config.wait_for_active_shards)
    if recorded_index(client, read_alias=config.read_alias, state_index=config.state_index) is None:
        record_current_index(client, name, read_alias=config.read_alias, write_alias=config.write_alias,
                             state_index=config.state_index)
    return name


# ---------------------------------------------------------------- batched writes
def write_targets(client: OpenSearch, write_alias: str) -> list[str]:
    """The indices behind the write alias: writes go to each (two during an alias swap)."""
    targets = alias_indices(client, write_alias)
    if not targets:
        raise SearchIndexError(f"the write alias {write_alias} names no index (create it: ensure_index)")
    return targets


def bulk_index(client: OpenSearch, documents: Iterable[dict[str, Any]], *, write_alias: str = DEFAULT_WRITE_ALIAS,
               chunk_size: int = BULK_CHUNK, refresh: bool | str = False,
               targets: list[str] | None = None, through_alias: bool = False,
               ignore: tuple[str, ...] = ()) -> BulkReport:
    """Index documents built by ``message_document`` through the write alias, in bulk requests.

    Each document's id (``<mailboxId>:<uid>``) and routing (the mailbox id) come from the document.
    Refused documents are reported, keyed by document id, not raised; an unreachable server raises
    ``SearchIndexError``. ``documents`` may be a generator (Spark partitions): it is read once.

    ``through_alias``: write to ``write_alias`` itself and let OpenSearch resolve it (no lookup
    first); with ``require_alias``, so that a missing alias is refused rather than auto-created as
    an index, and an alias naming two indices is refused too (no write index is ever designated).
    """
    if through_alias:
        targets = [write_alias]
    elif targets is None:
        targets = write_targets(client, write_alias)

    def actions() -> Iterator[dict[str, Any]]:
        for document in documents:
            mailbox_id = document[f.MAILBOX_ID]
            for index in targets:
                yield {"_op_type": "index", "_index": index, "_id": document_id(mailbox_id, document[f.UID]),
                       "routing": routing_key(mailbox_id), "_source": document}

    return run_bulk(client, actions(), chunk_size=chunk_size, refresh=refresh, ignore=ignore,
                    **({"require_alias": True} if through_alias else {}))


def run_bulk(client: OpenSearch, actions: Iterable[dict[str, Any]], *, chunk_size: int = BULK_CHUNK,
             refresh: bool | str = False, ignore: tuple[str, ...] = (), **params: Any) -> BulkReport:
    """Run bulk actions; per-item errors whose type is in ``ignore`` (e.g. ``not_found``) are not
    failures: they are reported in ``skipped``. ``params``: more query parameters of ``_bulk``."""
    report = BulkReport()
    try:
        for ok, item in helpers.streaming_bulk(client, actions, chunk_size=chunk_size, raise_on_error=False,
                                               raise_on_exception=True, refresh=refresh, **params):
            operation, result = next(iter(item.items()))
            key = result.get("_id", "?")
            if ok:
                report.succeeded += 1
                continue
            if _error_type(result) in ignore:
                report.skipped[key] = _error_type(result)
                continue
            reason = f"{result.get('_index', '?')}: {_error_type(result)}: {_error_reason(result)}"
            report.failures[key] = reason
            log.warning("search index %s of %s refused: %s", operation, key, reason)
    except (TransportError, OpenSearchException) as error:
        raise SearchIndexError(f"bulk request failed: {error}") from error
    return report


def _error_type(result: dict[str, Any]) -> str:
    error = result.get("error")
    if isinstance(error, dict):
        return str(error.get("type", "error"))
    return str(result.get("result", "error")) if error is None else "error"


def _error_reason(result: dict[str, Any]) -> str:
    error = result.get("error")
    if isinstance(error, dict):
        return str(error.get("reason", ""))[:500]
    return str(error or result.get("status"))[:500]
