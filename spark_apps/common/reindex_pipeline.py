"""Executor side of the search reindex: one partition's items turned into index writes, every stage overlapped.

The rows come from Spark already joined with what a document needs (``ReindexMailboxes.with_sources``):
``truth`` (the ``imapUidTable`` row read again by the connector just before this partition runs, null when the
message is gone), ``content`` (the ``messageV3`` blob ids, null without a row) and, for an orphan document,
``projected`` (whether ``messageIdTable`` still has the message). No Cassandra request is made from Python.

What is left per message is I/O and a little CPU, so they overlap: the message contents are fetched from S3
(two GETs) and the documents built by a bounded thread pool (``FETCH_THREADS`` messages in flight, the
partition never read further ahead than that), and the documents go out in ``_bulk`` requests of ``BATCH``
with up to ``BULK_IN_FLIGHT`` requests outstanding while the next batch is being fetched. Outcomes are the
job's: ``skipped`` when the message went away (or, for an orphan, is still there), ``failed`` with the
reason for that one message (or for every message of a ``_bulk`` request that could not be sent), else
``fixed`` with the report counter of the item's kind.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from spark_apps.common.procedure import FAILED, FIXED, SKIPPED

BATCH = 200            # documents (or deletions) per _bulk request
FETCH_THREADS = 16     # messages whose contents are fetched and built at once, per partition
BULK_IN_FLIGHT = 2     # _bulk requests outstanding at once, per partition
# Columns the rows carry besides the item's own; never part of the item reported back.
SOURCE_COLUMNS = ("slice", "truth", "content", "projected")
TIMESTAMP_COLUMNS = ("internaldate", "save_date")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def from_micros(value: Any) -> Any:
    """A timestamp shipped as microseconds since the epoch (``unix_micros``): an aware UTC datetime.

    Spark would hand a naive datetime in the Python worker's local time zone; the micros are exact anywhere."""
    return EPOCH + timedelta(microseconds=value) if isinstance(value, int) else value


def merged_row(truth: Mapping[str, Any], content: Mapping[str, Any]) -> dict[str, Any]:
    """The row a document is built from: ``messageV3``'s values, overridden by the non-null ``imapUidTable`` ones."""
    row = {k: (from_micros(v) if k in TIMESTAMP_COLUMNS else v) for k, v in content.items()}
    row.update({k: (from_micros(v) if k in TIMESTAMP_COLUMNS else v) for k, v in truth.items() if v is not None})
    return row


def _outcome(status: str, item: dict[str, Any], counter: str | None = None,
             error: str | None = None) -> dict[str, Any]:
    return {"status": status, "item": item, "counter": counter, "error": error}


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class _Partition:
    """The state of one partition's pipeline: its clients, pools and what is in flight."""

    def __init__(self, procedure: Any, counters: Mapping[str, str]) -> None:
        assert procedure.search is not None and procedure.s3 is not None
        self.search, self.bucket, self.counters = procedure.search, procedure.bucket, counters
        self.s3 = procedure.s3.reader()
        self.client = self.search.client()

    def document(self, item: dict[str, Any], truth: Mapping[str, Any],
                 content: Mapping[str, Any] | None) -> dict[str, Any]:
        """The document of one message (in a fetch thread), or the item's failure outcome."""
        from spark_apps.common.mail_blobs import read_content
        from spark_apps.common.search_reindex import build_document

        try:
            if not content or not content.get("headercontent") or not content.get("bodycontent"):
                raise ValueError("no messageV3 row with blob ids: the content cannot be read")
            row = merged_row(truth, content)
            data = read_content(self.s3, self.bucket, row["headercontent"], row["bodycontent"])
            return {"document": build_document(row, data, item.get("user"))}
        except Exception as exc:   # one message must not stop the partition
            return _outcome(FAILED, item, error=_error(exc))

    def write(self, documents: list[tuple[dict[str, Any], dict[str, Any]]],
              orphans: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One batch written (in a bulk thread): the outcome of each of its items."""
        from mailserver.search.document import document_id, routing_key
        from mailserver.search.index import bulk_index, run_bulk, write_targets
        from spark_apps.common.search_reindex import delete_actions

        items = [item for item, _ in documents] + orphans
        try:
            targets = write_targets(self.client, self.search.write_alias)   # both indices during an alias swap
            failures: dict[str, str] = {}
            if documents:
                failures.update(bulk_index(self.client, [d for _, d in documents], targets=targets).failures)
            if orphans:
                keys = [(document_id(i["mailboxid"], i["uid"]), routing_key(i["mailboxid"])) for i in orphans]
                failures.update(run_bulk(self.client, delete_actions(targets, keys), ignore=("not_found",)).failures)
        except Exception as exc:   # OpenSearch unreachable: the whole batch is failed and replayable
            return [_outcome(FAILED, item, error=_error(exc)) for item in items]
        outcomes = []
        for item in items:
            key = document_id(item["mailboxid"], item["uid"])
            if key in failures:
                outcomes.append(_outcome(FAILED, item, error=failures[key]))
            else:
                outcomes.append(_outcome(FIXED, item, self.counters[item["kind"]]))
        return outcomes


def reindex_partition(procedure: Any, rate: float | None, rows: Iterable[Any], *, counters: Mapping[str, str],
                      orphan_kind: str, batch: int = BATCH, fetch_threads: int = FETCH_THREADS,
                      bulk_in_flight: int = BULK_IN_FLIGHT) -> Iterator[dict[str, Any]]:
    """mapPartitions body: the outcome of every row, the partition's fetches and writes overlapped.

    ``procedure`` gives ``search``, ``s3`` and ``bucket``; ``counters`` maps an item's kind to its report
    counter; items of ``orphan_kind`` are documents to delete. ``rate`` (items per second for this
    partition) is taken per row, in the task's thread, before the row enters the pipeline."""
    from spark_apps.common.throttle import RateLimiter

    limiter = RateLimiter(rate)
    part = _Partition(procedure, counters)
    fetching: deque[tuple[dict[str, Any], Future[dict[str, Any]]]] = deque()
    writing: deque[Future[list[dict[str, Any]]]] = deque()
    documents: list[tuple[dict[str, Any], dict[str, Any]]] = []
    orphans: list[dict[str, Any]] = []
    fetch_pool = ThreadPoolExecutor(fetch_threads, thread_name_prefix="reindex-fetch")
    bulk_pool = ThreadPoolExecutor(bulk_in_flight, thread_name_prefix="reindex-bulk")

    def settle_fetch() -> Iterator[dict[str, Any]]:
        item, future = fetching.popleft()
        result = future.result()
        if "document" in result:
            documents.append((item, result["document"]))
        else:
            yield result

    def send(force: bool = False) -> Iterator[dict[str, Any]]:
        nonlocal documents, orphans
        if documents or orphans:
            if force or len(documents) + len(orphans) >= batch:
                while len(writing) >= bulk_in_flight:
                    yield from writing.popleft().result()
                writing.append(bulk_pool.submit(part.write, documents, orphans))
                documents, orphans = [], []

    try:
        for row in rows:
            limiter.acquire()
            values = row.asDict(recursive=True) if hasattr(row, "asDict") else dict(row)
            item = {k: v for k, v in values.items() if k not in SOURCE_COLUMNS}
            if item["kind"] == orphan_kind:
                if values.get("projected"):
                    yield _outcome(SKIPPED, item)   # the message is there (a projection lagging): kept
                else:
                    orphans.append(item)
            elif values.get("truth") is None:
                yield _outcome(SKIPPED, item)        # expunged meanwhile: the listener removes it
            else:
                fetching.append((item, fetch_pool.submit(part.document, item, values["truth"], values.get("content"))))
            while len(fetching) >= fetch_threads:   # a free fetch slot before the next row is read
                yield from settle_fetch()
            yield from send()
        while fetching:
            yield from settle_fetch()
            yield from send()
        yield from send(force=True)
        while writing:
            yield from writing.popleft().result()
    finally:   # also when the task is cancelled: nothing queued is started, what runs is waited for
        fetch_pool.shutdown(wait=True, cancel_futures=True)
        bulk_pool.shutdown(wait=True, cancel_futures=True)
