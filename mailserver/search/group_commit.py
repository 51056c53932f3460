"""Documents that threads index at the same time, written in one bulk request (a decorator).

Why: the indexing listener runs on the event bus's thread pool, one ``Added`` per thread, and
each wrote its one document in a bulk request of its own: under load that was a request per
mail, the client's HTTP cost and most of OpenSearch's work per mail (issue 16).

How (group commit, as a database's log writer does it): a caller that finds no write in
progress writes its documents and everything queued behind them, up to ``max_documents``;
callers arriving meanwhile queue theirs and wait. When the writer is done with the batch that
carried its own documents it returns, and the first caller still waiting takes its turn to write
the next batch, so no caller writes for others for long. Alone, a caller writes at once: no
waiting, no timer, the same request as before.

Every caller returns only once its own documents were written, with the report of their ids
only, or raises when the request carrying them failed: what the bus acknowledges is indexed.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from mailserver.model.ids import MailboxId
from mailserver.search import mapping as f
from mailserver.search.api import BulkReport, FlagsUpdate, SearchHit, SearchIndex, SearchIndexError, SearchQuery
from mailserver.search.document import document_id

DEFAULT_MAX_DOCUMENTS = 200


class _Turn:
    """One caller's documents, and how their write ended."""

    __slots__ = ("documents", "error", "ids", "report", "woken", "written")

    def __init__(self, documents: list[dict[str, Any]]) -> None:
        self.documents = documents
        self.ids = {document_id(d[f.MAILBOX_ID], d[f.UID]) for d in documents}
        self.woken = threading.Event()
        self.written = False           # False when woken: this caller writes the next batch
        self.report: BulkReport | None = None
        self.error: BaseException | None = None


class GroupCommitSearchIndex(SearchIndex):
    def __init__(self, inner: SearchIndex, *, max_documents: int = DEFAULT_MAX_DOCUMENTS) -> None:
        if max_documents < 1:
            raise ValueError("max_documents must be at least 1")
        self.inner = inner
        self.max_documents = max_documents
        self._lock = threading.Lock()
        self._waiting: deque[_Turn] = deque()
        self._writing = False          # invariant: not writing => nobody waiting
        self.requests = 0              # bulk requests made: what the batching saves (tests)

    def index_documents(self, documents: Iterable[dict[str, Any]]) -> BulkReport:
        turn = _Turn(list(documents))
        if not turn.documents:
            return BulkReport()
        with self._lock:
            self._waiting.append(turn)
            leads = not self._writing
            self._writing = True
        if not leads:
            turn.woken.wait()
        if not turn.written:
            self._write_batches_until(turn)
        if turn.error is not None:
            raise SearchIndexError(f"bulk indexing failed: {turn.error}") from turn.error
        assert turn.report is not None
        return turn.report

    def _write_batches_until(self, own: _Turn) -> None:
        """Write queued batches until ``own``'s is written, then wake the next caller to write.

        The hand-off happens whatever the write raised: a caller left waiting would wait forever.
        """
        try:
            while not own.written:
                batch = self._next_batch()
                documents = [d for turn in batch for d in turn.documents]
                report: BulkReport | None = None
                error: BaseException | None = None
                try:
                    self.requests += 1
                    report = self.inner.index_documents(documents)
                except BaseException as exc:   # every caller in the batch gets it; each event is retried
                    error = exc
                for turn in batch:
                    turn.report = _own_part(report, turn.ids) if report is not None else None
                    turn.error = error
                    turn.written = True
                    if turn is not own:
                        turn.woken.set()
        finally:
            with self._lock:
                if self._waiting:
                    self._waiting[0].woken.set()   # not written: it writes the next batch
                else:
                    self._writing = False
        if own.error is not None and not isinstance(own.error, Exception):
            raise own.error   # an interrupt stays an interrupt in the thread it hit

    def _next_batch(self) -> list[_Turn]:
        with self._lock:
            batch = [self._waiting.popleft()]
            count = len(batch[0].documents)
            while self._waiting and count + len(self._waiting[0].documents) <= self.max_documents:
                turn = self._waiting.popleft()
                batch.append(turn)
                count += len(turn.documents)
            return batch

    # -- everything else goes straight through ----------------------------------------------------
    def delete(self, mailbox_id: MailboxId, uids: Sequence[int]) -> None:
        self.inner.delete(mailbox_id, uids)

    def update_flags(self, mailbox_id: MailboxId, updates: Sequence[FlagsUpdate]) -> list[int]:
        return self.inner.update_flags(mailbox_id, updates)

    def delete_mailbox(self, mailbox_id: MailboxId) -> None:
        self.inner.delete_mailbox(mailbox_id)

    def search(self, query: SearchQuery) -> list[SearchHit]:
        return self.inner.search(query)

    def get(self, mailbox_id: MailboxId, uid: int) -> dict[str, Any] | None:
        return self.inner.get(mailbox_id, uid)

    def refresh(self) -> None:
        self.inner.refresh()

    def ensure(self) -> None:
        self.inner.ensure()


def _own_part(report: BulkReport, ids: set[str]) -> BulkReport:
    """The part of a batch's report about one caller's documents."""
    failures = {i: reason for i, reason in report.failures.items() if i in ids}
    skipped = {i: reason for i, reason in report.skipped.items() if i in ids}
    return BulkReport(succeeded=len(ids) - len(failures) - len(skipped), failures=failures, skipped=skipped)
