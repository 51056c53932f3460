"""Group commit of the indexing listener's writes: concurrent callers share bulk requests, and each
returns only once its own documents are written, with its own part of the report."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from mailserver.search import mapping as f
from mailserver.search.api import BulkReport, SearchIndexError
from mailserver.search.document import document_id
from mailserver.search.group_commit import GroupCommitSearchIndex
from mailserver.search.memory import MemorySearchIndex
from tests.contract.search_contract import SearchIndexContract


class TestGroupCommitOverMemory(SearchIndexContract):
    """The decorator is a search index like any other."""

    @pytest.fixture
    def index(self):
        return GroupCommitSearchIndex(MemorySearchIndex())


def doc(uid: int, mailbox: str = "mbx") -> dict[str, Any]:
    return {f.MAILBOX_ID: mailbox, f.UID: uid}


class GatedIndex(MemorySearchIndex):
    """Records each bulk; the first one waits at the gate, so callers arriving meanwhile queue up."""

    def __init__(self, refuse: set[int] = frozenset(), fail: bool = False) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.bulks: list[list[int]] = []
        self.refuse, self.fail = refuse, fail

    def index_documents(self, documents: Iterable[dict[str, Any]]) -> BulkReport:
        documents = list(documents)
        self.bulks.append([d[f.UID] for d in documents])
        if len(self.bulks) == 1:
            self.entered.set()
            assert self.gate.wait(10)
        if self.fail:
            raise SearchIndexError("OpenSearch unreachable")
        kept = [d for d in documents if d[f.UID] not in self.refuse]
        report = super().index_documents(kept)
        report.failures.update({document_id(d[f.MAILBOX_ID], d[f.UID]): "mapper_parsing_exception"
                                for d in documents if d[f.UID] in self.refuse})
        return report


def run_queued(index: GroupCommitSearchIndex, inner: GatedIndex, batches: list[list[int]]):
    """The first batch enters the inner index and is held; the others queue behind it; then all go."""
    pool = ThreadPoolExecutor(max_workers=len(batches))
    first = pool.submit(index.index_documents, [doc(u) for u in batches[0]])
    assert inner.entered.wait(5)
    rest = [pool.submit(index.index_documents, [doc(u) for u in uids]) for uids in batches[1:]]
    deadline = time.monotonic() + 5
    while index.waiting < len(batches) - 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert index.waiting == len(batches) - 1, "the other callers did not queue"
    inner.gate.set()
    futures = [first, *rest]
    pool.shutdown(wait=True)
    return futures


def test_alone_a_caller_writes_at_once_in_a_request_of_its_own():
    inner = GatedIndex()
    inner.gate.set()
    index = GroupCommitSearchIndex(inner)
    for uid in (1, 2, 3):
        assert index.index_documents([doc(uid)]).succeeded == 1
    assert inner.bulks == [[1], [2], [3]]
    assert index.requests == 3


def test_callers_arriving_during_a_write_share_the_next_request():
    inner = GatedIndex()
    index = GroupCommitSearchIndex(inner)
    futures = run_queued(index, inner, [[1], [2], [3], [4, 5]])
    assert [fut.result().succeeded for fut in futures] == [1, 1, 1, 2]
    assert inner.bulks[0] == [1]
    assert sorted(inner.bulks[1]) == [2, 3, 4, 5] and len(inner.bulks) == 2
    assert index.requests == 2
    assert sorted(d[f.UID] for d in inner.documents.values()) == [1, 2, 3, 4, 5]


def test_a_caller_returns_only_once_its_documents_are_written():
    inner = GatedIndex()
    index = GroupCommitSearchIndex(inner)
    futures = run_queued(index, inner, [[1], [2]])
    for fut in futures:
        fut.result()
    # Written before returning: both are in the inner index the moment their callers came back.
    assert {document_id("mbx", 1), document_id("mbx", 2)} <= set(inner.documents)


def test_a_refused_document_fails_its_own_caller_only():
    inner = GatedIndex(refuse={3})
    index = GroupCommitSearchIndex(inner)
    futures = run_queued(index, inner, [[1], [2], [3]])
    reports = [fut.result() for fut in futures]
    assert [r.failed for r in reports] == [0, 0, 1]
    assert list(reports[2].failures) == [document_id("mbx", 3)]
    assert reports[1].succeeded == 1 and not reports[1].failures
    with pytest.raises(SearchIndexError):
        reports[2].raise_for_failures()


def test_a_failed_request_fails_every_caller_it_carried():
    inner = GatedIndex(fail=True)
    index = GroupCommitSearchIndex(inner)
    futures = run_queued(index, inner, [[1], [2], [3]])
    for fut in futures:
        with pytest.raises(SearchIndexError, match="unreachable"):
            fut.result()
    # The next caller is not stuck behind the failure.
    inner.fail = False
    assert index.index_documents([doc(9)]).succeeded == 1


def test_a_batch_holds_at_most_max_documents():
    inner = GatedIndex()
    index = GroupCommitSearchIndex(inner, max_documents=3)
    futures = run_queued(index, inner, [[1], [2, 3], [4], [5, 6]])
    for fut in futures:
        fut.result()
    assert inner.bulks[0] == [1]
    assert all(len(bulk) <= 3 for bulk in inner.bulks)
    assert sorted(u for bulk in inner.bulks[1:] for u in bulk) == [2, 3, 4, 5, 6]


def test_many_threads_lose_no_document_and_make_fewer_requests():
    class SlowIndex(MemorySearchIndex):
        def index_documents(self, documents):
            time.sleep(0.005)   # a request's round trip: others arrive meanwhile
            return super().index_documents(documents)

    inner = SlowIndex()
    index = GroupCommitSearchIndex(inner)
    with ThreadPoolExecutor(max_workers=8) as pool:
        reports = list(pool.map(lambda uid: index.index_documents([doc(uid)]), range(200)))
    assert all(r.succeeded == 1 for r in reports)
    assert len(inner.documents) == 200
    assert index.requests < 200


def test_no_documents_makes_no_request():
    inner = GatedIndex()
    index = GroupCommitSearchIndex(inner)
    assert index.index_documents([]).succeeded == 0
    assert inner.bulks == []


def test_max_documents_must_be_positive():
    with pytest.raises(ValueError):
        GroupCommitSearchIndex(MemorySearchIndex(), max_documents=0)


def test_an_interrupt_in_the_writer_leaves_no_caller_waiting():
    class Interrupted(BaseException):
        pass

    class InterruptedIndex(GatedIndex):
        interrupt = True

        def index_documents(self, documents):
            report = super().index_documents(documents)
            if self.interrupt:
                raise Interrupted()
            return report

    inner = InterruptedIndex()
    index = GroupCommitSearchIndex(inner)
    pool = ThreadPoolExecutor(max_workers=3)
    first = pool.submit(index.index_documents, [doc(1)])
    assert inner.entered.wait(5)
    second = pool.submit(index.index_documents, [doc(2)])
    deadline = time.monotonic() + 5
    while not index.waiting and time.monotonic() < deadline:
        time.sleep(0.01)
    inner.gate.set()
    with pytest.raises(Interrupted):
        first.result(5)
    with pytest.raises(Interrupted):
        second.result(5)   # handed the next turn, it wrote its own batch and was interrupted too
    inner.interrupt = False
    assert pool.submit(index.index_documents, [doc(3)]).result(5).succeeded == 1
    pool.shutdown()
