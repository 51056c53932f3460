"""GroupCommit: items submitted while a batch runs share the next batch; each caller gets its own
result, or the failure of the batch that carried its item, and nobody is left waiting."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from mailserver.group_commit import BatchInterrupted, GroupCommit


class Gated:
    """A batch function recording each batch; the first batch waits at the gate."""

    def __init__(self, fail: BaseException | None = None, results: int | None = None) -> None:
        self.batches: list[list[int]] = []
        self.gate, self.entered = threading.Event(), threading.Event()
        self.fail, self.results = fail, results

    def __call__(self, items: list[int]) -> list[int]:
        self.batches.append(list(items))
        if len(self.batches) == 1:
            self.entered.set()
            assert self.gate.wait(10)
        if self.fail is not None:
            raise self.fail
        doubled = [2 * i for i in items]
        return doubled if self.results is None else doubled[:self.results]


def queued(commits: GroupCommit, run: Gated, items: list[int]) -> list[Future]:
    pool = ThreadPoolExecutor(max_workers=len(items))
    first = pool.submit(commits.submit, items[0])
    assert run.entered.wait(5)
    rest = [pool.submit(commits.submit, i) for i in items[1:]]
    deadline = time.monotonic() + 5
    while commits.waiting < len(items) - 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert commits.waiting == len(items) - 1, "the other callers did not queue"
    run.gate.set()
    pool.shutdown(wait=True)
    return [first, *rest]


def test_alone_a_caller_runs_its_item_at_once():
    run = Gated()
    run.gate.set()
    commits = GroupCommit(run, max_weight=10)
    assert [commits.submit(i) for i in (1, 2, 3)] == [2, 4, 6]
    assert run.batches == [[1], [2], [3]]


def test_callers_arriving_during_a_batch_share_the_next_and_each_gets_its_own_result():
    run = Gated()
    commits = GroupCommit(run, max_weight=10)
    futures = queued(commits, run, [1, 2, 3, 4])
    assert [f.result() for f in futures] == [2, 4, 6, 8]
    assert run.batches == [[1], [2, 3, 4]]
    assert commits.batches == 2


def test_a_batch_weighs_at_most_max_weight():
    run = Gated()
    commits = GroupCommit(run, max_weight=5, weight=lambda item: item)
    futures = queued(commits, run, [1, 2, 3, 1, 4])
    assert [f.result() for f in futures] == [2, 4, 6, 2, 8]
    assert run.batches == [[1], [2, 3], [1, 4]]


def test_a_failed_batch_fails_every_caller_it_carried_and_the_next_batch_runs():
    run = Gated(fail=RuntimeError("backend down"))
    commits = GroupCommit(run, max_weight=10)
    futures = queued(commits, run, [1, 2, 3])
    for f in futures:
        with pytest.raises(RuntimeError, match="backend down"):
            f.result()
    run.fail = None
    assert commits.submit(5) == 10


def test_a_batch_giving_the_wrong_number_of_results_fails_its_callers():
    run = Gated(results=1)
    commits = GroupCommit(run, max_weight=10)
    futures = queued(commits, run, [1, 2, 3])
    assert futures[0].result() == 2                      # a batch of one: one result, right
    for f in futures[1:]:
        with pytest.raises(RuntimeError, match="2 items gave 1 results"):
            f.result()


def test_an_interrupt_stays_in_its_thread_and_leaves_no_caller_waiting():
    class Interrupted(BaseException):
        pass

    run = Gated(fail=Interrupted())
    commits = GroupCommit(run, max_weight=10)
    pool = ThreadPoolExecutor(max_workers=2)
    first = pool.submit(commits.submit, 1)
    assert run.entered.wait(5)
    second = pool.submit(commits.submit, 2)
    deadline = time.monotonic() + 5
    while not commits.waiting and time.monotonic() < deadline:
        time.sleep(0.01)
    run.gate.set()
    with pytest.raises(Interrupted):
        first.result(5)
    with pytest.raises(Interrupted):
        second.result(5)   # handed the next turn, it ran its own batch and was interrupted there
    run.fail = None
    assert commits.submit(3) == 6
    pool.shutdown()


def test_the_other_callers_of_an_interrupted_batch_get_an_ordinary_error():
    class Interrupted(BaseException):
        pass

    run = Gated()

    def interrupted_second_batch(items: list[int]) -> list[int]:
        if len(run.batches) == 1:
            run.fail = Interrupted()
        return run(items)

    commits = GroupCommit(interrupted_second_batch, max_weight=10)
    futures = queued(commits, run, [1, 2, 3])
    assert futures[0].result() == 2
    errors = [f.exception() for f in futures[1:]]
    assert sum(isinstance(e, Interrupted) for e in errors) == 1            # the thread running the batch
    assert sum(isinstance(e, BatchInterrupted) for e in errors) == 1       # the other one it carried


def test_max_weight_must_be_positive():
    with pytest.raises(ValueError):
        GroupCommit(lambda items: items, max_weight=0)
