"""Behaviour every task store must give the task manager and its workers (memory and Cassandra).

Runners provide ``store`` (a TaskStore). Stores may be shared with other tests (the session
keyspace): every test registers task types under a unique name, so its workers only ever claim
its own tasks, and it never assumes an empty store. Timings are short polling intervals and
generous upper bounds (``WAIT``); nothing asserts speed.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest

from mailserver.observability.metrics import Metrics
from mailserver.tasks.api import Result, Task, TaskNotFound, TaskStatus, utc_now
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.registry import TaskRegistry
from mailserver.tasks.worker import TaskWorker

WAIT = 20.0           # upper bound for anything that must happen; never reached when all is well
FAST = {"poll_interval": 0.05, "heartbeat_interval": 0.1}
RUNS: Counter[str] = Counter()   # token -> how many times a CountingTask with it ran (in this process)


class CountingTask(Task):
    """Counts ``steps`` steps of ``pause`` seconds, stopping early when canceled; the test task type."""

    def __init__(self, type_name: str, steps: int = 1, pause: float = 0.0, outcome: str = "complete",
                 token: str = "") -> None:
        self.type = type_name
        self.steps, self.pause, self.outcome, self.token = steps, pause, outcome, token
        self.count = 0

    def run(self) -> Result:
        RUNS[self.token] += 1
        if self.outcome == "raise":
            raise RuntimeError("boom")
        for _ in range(self.steps):
            if self.cancel_requested:
                break
            time.sleep(self.pause)
            self.count += 1
        return Result.FAILED if self.outcome == "fail" else Result.COMPLETED

    def parameters(self) -> dict[str, Any]:
        return {"steps": self.steps, "pause": self.pause, "outcome": self.outcome, "token": self.token}

    def additional_information(self) -> dict[str, Any]:
        if self.outcome == "flaky-details" and self.count > 0:
            raise RuntimeError("details unavailable")
        return {"count": self.count, "steps": self.steps}


def counting_factory(type_name: str) -> Callable[[dict[str, Any]], Task]:
    return lambda p: CountingTask(type_name, p["steps"], p["pause"], p["outcome"], p["token"])


def eventually(predicate: Callable[[], Any], timeout: float = WAIT, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout} s")
        time.sleep(0.02)


def submit_spaced(manager: TaskManager, tasks: list[Task]) -> list[uuid.UUID]:
    """Submitted a few milliseconds apart: submission dates (millisecond precision) then differ."""
    ids = []
    for task in tasks:
        ids.append(manager.submit(task))
        time.sleep(0.005)
    return ids


class TaskManagerContract:
    @pytest.fixture
    def store(self):
        raise NotImplementedError

    @pytest.fixture
    def kind(self) -> str:
        """This test's task type name: workers of other tests never claim it."""
        return f"counting-{uuid.uuid4().hex[:10]}"

    @pytest.fixture
    def registry(self, kind) -> TaskRegistry:
        registry = TaskRegistry()
        registry.register(kind, counting_factory(kind))
        return registry

    @pytest.fixture
    def metrics(self) -> Metrics:
        return Metrics()

    @pytest.fixture
    def manager(self, store, metrics) -> TaskManager:
        return TaskManager(store, "node-a", metrics=metrics)

    @pytest.fixture
    def worker(self, store, registry, metrics) -> Iterator[TaskWorker]:
        worker = TaskWorker(store, registry, "node-a", heartbeat_timeout=WAIT, metrics=metrics, **FAST)
        yield worker
        worker.stop()

    @contextmanager
    def running(self, worker: TaskWorker) -> Iterator[TaskWorker]:
        worker.start()
        try:
            yield worker
        finally:
            worker.stop()

    # ------------------------------------------------------------------ submission and reports
    def test_submitted_task_waits_with_james_report(self, manager, kind):
        task_id = manager.submit(CountingTask(kind, steps=3))
        details = manager.get(task_id)
        assert (details.status, details.type, details.submitted_node) == (TaskStatus.WAITING, kind, "node-a")
        report = details.to_json()
        assert report["taskId"] == str(task_id) and report["status"] == "waiting"
        assert report["submittedFrom"] == "node-a" and report["executedOn"] is None
        assert report["cancelledFrom"] is None
        assert not {"startedDate", "completedDate", "canceledDate", "failedDate"} & set(report)
        assert report["additionalInformation"]["type"] == kind
        assert report["additionalInformation"]["count"] == 0
        assert report["additionalInformation"]["timestamp"].endswith("Z")

    def test_unknown_task(self, manager):
        with pytest.raises(TaskNotFound):
            manager.get(uuid.uuid4())
        assert manager.cancel(uuid.uuid4()) is None

    def test_parameters_must_be_json(self, manager, kind):
        task = CountingTask(kind)
        task.token = object()   # type: ignore[assignment]
        with pytest.raises(TypeError):
            manager.submit(task)

    def test_list_is_newest_first_and_filters_on_status(self, manager, kind):
        ids = submit_spaced(manager, [CountingTask(kind) for _ in range(3)])
        manager.cancel(ids[1])
        mine = [d.task_id for d in manager.list() if d.task_id in ids]
        assert mine == list(reversed(ids))
        canceled = {d.task_id for d in manager.list(TaskStatus.CANCELLED)}
        waiting = {d.task_id for d in manager.list(TaskStatus.WAITING)}
        assert ids[1] in canceled and ids[1] not in waiting
        assert {ids[0], ids[2]} <= waiting

    # ------------------------------------------------------------------ execution
    def test_worker_runs_a_task_to_completion(self, manager, worker, kind):
        task_id = manager.submit(CountingTask(kind, steps=3))
        with self.running(worker):
            details = manager.await_(task_id, WAIT)
        assert details.status is TaskStatus.COMPLETED
        assert details.ran_node == "node-a"
        assert details.submitted_date <= details.started_date <= details.completed_date
        assert details.additional_information["count"] == 3
        report = details.to_json()
        assert report["executedOn"] == "node-a" and {"startedDate", "completedDate"} <= set(report)
        assert "failedDate" not in report and "canceledDate" not in report

    def test_failed_and_raising_tasks_fail(self, manager, worker, kind):
        failing = manager.submit(CountingTask(kind, outcome="fail"))
        raising = manager.submit(CountingTask(kind, outcome="raise"))
        with self.running(worker):
            for task_id in (failing, raising):
                details = manager.await_(task_id, WAIT)
                assert details.status is TaskStatus.FAILED
                assert details.failed_date is not None and details.completed_date is None
                assert "failedDate" in details.to_json()

    def test_tasks_run_oldest_first(self, manager, worker, kind):
        ids = submit_spaced(manager, [CountingTask(kind) for _ in range(4)])
        with self.running(worker):
            reports = [manager.await_(task_id, WAIT) for task_id in ids]
        starts = [r.started_date for r in reports]
        assert starts == sorted(starts)

    def test_progress_is_published_while_running(self, manager, worker, kind):
        task_id = manager.submit(CountingTask(kind, steps=400, pause=0.02))
        with self.running(worker):
            eventually(lambda: (d := manager.get(task_id)).status is TaskStatus.IN_PROGRESS
                       and d.additional_information["count"] > 0, what="progress published")
            manager.cancel(task_id)
            manager.await_(task_id, WAIT)

    def test_unknown_types_are_left_to_other_nodes(self, store, manager, worker, kind):
        other = manager.submit(CountingTask(f"other-{kind}"))
        mine = manager.submit(CountingTask(kind))
        with self.running(worker):
            manager.await_(mine, WAIT)   # the poll claiming it looked at the older one first
        assert manager.get(other).status is TaskStatus.WAITING
        manager.cancel(other)

    def test_a_task_that_cannot_be_rebuilt_fails(self, manager, worker, registry, kind):
        broken = f"broken-{kind}"
        registry.register(broken, lambda p: p["missing"])
        task_id = manager.submit(CountingTask(broken))
        with self.running(worker):
            assert manager.await_(task_id, WAIT).status is TaskStatus.FAILED

    def test_await_times_out(self, manager, kind):
        task_id = manager.submit(CountingTask(kind))
        with pytest.raises(TimeoutError):
            manager.await_(task_id, 0.2)
        manager.cancel(task_id)

    # ------------------------------------------------------------------ cancellation
    def test_cancel_waiting_task_is_immediate(self, manager, kind):
        task_id = manager.submit(CountingTask(kind))
        assert manager.cancel(task_id) is TaskStatus.CANCELLED
        details = manager.get(task_id)
        assert details.status is TaskStatus.CANCELLED and details.cancel_requested_node == "node-a"
        report = details.to_json()
        assert report["status"] == "canceled" and report["cancelledFrom"] == "node-a" and "canceledDate" in report

    def test_cancel_running_task_is_cooperative(self, manager, worker, kind):
        task_id = manager.submit(CountingTask(kind, steps=1000, pause=0.02))
        with self.running(worker):
            eventually(lambda: manager.get(task_id).status is TaskStatus.IN_PROGRESS, what="started")
            assert manager.cancel(task_id) is TaskStatus.CANCEL_REQUESTED
            assert manager.get(task_id).to_json()["status"] == "canceledRequested"
            details = manager.await_(task_id, WAIT)
        assert details.status is TaskStatus.CANCELLED and details.canceled_date is not None
        assert details.additional_information["count"] < 1000

    def test_cancel_finished_task_is_a_no_op(self, manager, worker, kind):
        task_id = manager.submit(CountingTask(kind))
        with self.running(worker):
            done = manager.await_(task_id, WAIT)
        assert manager.cancel(task_id) is TaskStatus.COMPLETED
        assert manager.get(task_id) == done

    def test_worker_shutdown_fails_its_running_tasks(self, manager, worker, kind):
        task_id = manager.submit(CountingTask(kind, steps=1000, pause=0.02))
        worker.start()
        eventually(lambda: manager.get(task_id).status is TaskStatus.IN_PROGRESS, what="started")
        worker.stop()
        assert manager.get(task_id).status is TaskStatus.FAILED

    # ------------------------------------------------------------------ concurrency between workers
    def test_two_workers_never_run_a_task_twice(self, store, manager, registry, kind):
        token = uuid.uuid4().hex
        ids = [manager.submit(CountingTask(kind, pause=0.01, token=f"{token}-{i}")) for i in range(12)]
        workers = [TaskWorker(store, registry, f"node-{n}", parallelism=2, heartbeat_timeout=WAIT, **FAST)
                   for n in ("a", "b")]
        for w in workers:
            w.start()
        try:
            reports = [manager.await_(task_id, WAIT) for task_id in ids]
        finally:
            for w in workers:
                w.stop()
        assert all(r.status is TaskStatus.COMPLETED for r in reports)
        assert all(RUNS[f"{token}-{i}"] == 1 for i in range(12))

    def test_concurrent_claims_have_one_winner(self, store, manager, kind):
        task_id = manager.submit(CountingTask(kind))
        details = manager.get(task_id)
        wins: list[str] = []
        barrier = threading.Barrier(4)

        def claim(node: str) -> None:
            barrier.wait()
            if store.claim(details, node, utc_now()):
                wins.append(node)

        threads = [threading.Thread(target=claim, args=(f"n{i}",)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(wins) == 1
        assert manager.get(task_id).ran_node == wins[0]
        store.finish(task_id, wins[0], TaskStatus.COMPLETED, utc_now(), None)

    def test_cancel_racing_claims_ends_every_task(self, store, manager, registry, kind):
        ids = [manager.submit(CountingTask(kind, steps=5, pause=0.01)) for _ in range(10)]
        with self.running(TaskWorker(store, registry, "node-b", parallelism=3, heartbeat_timeout=WAIT, **FAST)):
            for task_id in ids:
                manager.cancel(task_id)
            reports = [manager.await_(task_id, WAIT) for task_id in ids]
        assert {r.status for r in reports} <= {TaskStatus.CANCELLED, TaskStatus.COMPLETED}

    # ------------------------------------------------------------------ ownership and heartbeats
    def test_only_the_owner_may_beat_or_finish(self, store, manager, kind):
        task_id = manager.submit(CountingTask(kind))
        assert store.claim(manager.get(task_id), "owner", utc_now())
        assert store.heartbeat(task_id, "intruder", utc_now(), None) is None
        assert not store.finish(task_id, "intruder", TaskStatus.COMPLETED, utc_now(), None)
        assert store.heartbeat(task_id, "owner", utc_now(), {"type": kind, "n": 1}) is TaskStatus.IN_PROGRESS
        assert manager.get(task_id).additional_information == {"type": kind, "n": 1}
        manager.cancel(task_id)
        assert store.heartbeat(task_id, "owner", utc_now(), None) is TaskStatus.CANCEL_REQUESTED
        assert store.finish(task_id, "owner", TaskStatus.CANCELLED, utc_now(), None)
        assert store.heartbeat(task_id, "owner", utc_now(), None) is None
        assert manager.get(task_id).status is TaskStatus.CANCELLED

    def test_stale_failure_needs_the_stale_heartbeat(self, store, manager, kind):
        task_id = manager.submit(CountingTask(kind))
        claimed_at = utc_now() - timedelta(minutes=5)
        assert store.claim(manager.get(task_id), "owner", claimed_at)
        assert any(d.task_id == task_id for d in store.running())
        fresh = utc_now()
        assert store.heartbeat(task_id, "owner", fresh, None) is TaskStatus.IN_PROGRESS
        assert not store.fail_stale(task_id, claimed_at, utc_now())   # it beat meanwhile: alive
        assert store.fail_stale(task_id, fresh, utc_now())
        details = manager.get(task_id)
        assert details.status is TaskStatus.FAILED and details.failed_date is not None
        # The late owner cannot bring it back.
        assert store.heartbeat(task_id, "owner", utc_now(), None) is None
        assert not store.finish(task_id, "owner", TaskStatus.COMPLETED, utc_now(), None)
        assert manager.get(task_id).status is TaskStatus.FAILED
        assert all(d.task_id != task_id for d in store.running())

    def test_worker_fails_tasks_of_a_dead_worker(self, store, manager, registry, kind):
        task_id = manager.submit(CountingTask(kind))
        assert store.claim(manager.get(task_id), "dead-node", utc_now())   # claimed, then nobody beats
        live = TaskWorker(store, registry, "node-live", poll_interval=0.05, heartbeat_interval=0.1,
                          heartbeat_timeout=1.0)
        with self.running(live):
            details = manager.await_(task_id, WAIT)
        assert details.status is TaskStatus.FAILED and details.ran_node == "dead-node"

    def test_a_beating_worker_is_not_failed(self, store, manager, registry, kind):
        task_id = manager.submit(CountingTask(kind, steps=60, pause=0.05))   # ~3 s, 3x the timeout
        owner = TaskWorker(store, registry, "node-a", poll_interval=0.05, heartbeat_interval=0.1,
                           heartbeat_timeout=1.0)
        watcher = TaskWorker(store, TaskRegistry(), "node-w", poll_interval=0.05, heartbeat_interval=0.1,
                             heartbeat_timeout=1.0)
        with self.running(owner), self.running(watcher):
            assert manager.await_(task_id, WAIT).status is TaskStatus.COMPLETED

    def test_failing_details_do_not_stop_the_heartbeat(self, store, manager, registry, kind):
        task_id = manager.submit(CountingTask(kind, steps=40, pause=0.05, outcome="flaky-details"))
        owner = TaskWorker(store, registry, "node-a", poll_interval=0.05, heartbeat_interval=0.1,
                           heartbeat_timeout=1.0)
        watcher = TaskWorker(store, TaskRegistry(), "node-w", poll_interval=0.05, heartbeat_interval=0.1,
                             heartbeat_timeout=1.0)
        with self.running(owner), self.running(watcher):
            details = manager.await_(task_id, WAIT)
        assert details.status is TaskStatus.COMPLETED
        assert details.additional_information["count"] == 0   # the last details it could give

    # ------------------------------------------------------------------ metrics
    def test_status_changes_are_counted(self, manager, worker, metrics, kind):
        task_id = manager.submit(CountingTask(kind))
        with self.running(worker):
            manager.await_(task_id, WAIT)
        canceled = manager.submit(CountingTask(kind))
        manager.cancel(canceled)

        def count(status: str) -> float:
            return metrics.registry.get_sample_value("tasks_total", {"type": kind, "status": status}) or 0

        assert (count("waiting"), count("inProgress"), count("completed"), count("canceled")) == (2, 1, 1, 1)
