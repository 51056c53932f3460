"""Documents that threads index at the same time, written in one bulk request (a decorator).

Why: the indexing listener runs on the event bus's thread pool, one ``Added`` per thread, and
each wrote its one document in a bulk request of its own: under load that was a request per
mail, the client's HTTP cost and most of OpenSearch's work per mail (issue 16).

How: a group commit (``mailserver/group_commit.py``). A caller that finds no write in progress
writes its documents and everything queued behind them, up to ``max_documents``; callers
arriving meanwhile queue theirs and wait. Alone, a caller writes at once: no waiting, no timer,
the same request as before.

Every caller returns only once its own documents were written, with the report of their ids
only, or raises when the request carrying them failed: what the bus acknowledges is indexed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from mailserver.group_commit import GroupCommit
from mailserver.model.ids import MailboxId
from mailserver.search import api
from mailserver.search import mapping as f
from mailserver.search.api import BulkReport, FlagsUpdate, SearchHit, SearchIndex, SearchIndexError, SearchQuery
from mailserver.search.document import document_id

DEFAULT_MAX_DOCUMENTS = 200


class GroupCommitSearchIndex(SearchIndex):
    def __init__(self, inner: SearchIndex, *, max_documents: int = DEFAULT_MAX_DOCUMENTS) -> None:
        if max_documents < 1:
            raise ValueError("max_documents must be at least 1")
        self.inner = inner
        self.max_documents = max_documents
        self._commits: GroupCommit[list[dict[str, Any]], BulkReport] = GroupCommit(
            self._write, max_weight=max_documents, weight=len)

    @property
    def requests(self) -> int:
        """Bulk requests made: what the batching saves (tests)."""
        return self._commits.batches

    @property
    def waiting(self) -> int:
        """Callers whose documents wait for a bulk request."""
        return self._commits.waiting

    def index_documents(self, documents: Iterable[dict[str, Any]]) -> BulkReport:
        documents = list(documents)
        if not documents:
            return BulkReport()
        try:
            return self._commits.submit(documents)
        except Exception as exc:   # each event of the failed request is retried by the bus
            raise SearchIndexError(f"bulk indexing failed: {exc}") from exc

    def _write(self, batch: list[list[dict[str, Any]]]) -> list[BulkReport]:
        report = self.inner.index_documents([d for documents in batch for d in documents])
        return [_own_part(report, {document_id(d[f.MAILBOX_ID], d[f.UID]) for d in documents})
                for documents in batch]

    # -- everything else goes straight through ----------------------------------------------------
    def delete(self, mailbox_id: MailboxId, uids: Sequence[int]) -> None:
        self.inner.delete(mailbox_id, uids)

    def update_flags(self, mailbox_id: MailboxId, updates: Sequence[FlagsUpdate]) -> list[int]:
        return self.inner.update_flags(mailbox_id, updates)

    def delete_mailbox(self, mailbox_id: MailboxId) -> None:
        self.inner.delete_mailbox(mailbox_id)

    def search(self, query: SearchQuery) -> list[SearchHit]:
        return self.inner.search(query)

    def highlight(self, query: SearchQuery) -> list[api.Snippet]:
        return self.inner.highlight(query)

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
