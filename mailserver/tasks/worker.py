"""``TaskWorker``: the part of every node that claims waiting tasks and runs them.

One control thread polls the store: it claims waiting tasks (oldest first, only types this node
registered) up to ``parallelism``, refreshes the heartbeat of the tasks it runs (publishing their
``additionalInformation`` at the same time, so scripts see counters move), passes cancel requests
on to them (``cancel`` does it at once for a request heard over RabbitMQ), and fails the running
tasks of other workers whose heartbeat is older than ``heartbeat_timeout`` (a killed process, a
lost node): such tasks end visibly ``failed`` instead of staying ``inProgress`` forever. Each task
runs on its own thread.

The timeout must be well above ``heartbeat_interval`` plus the clock skew between nodes: the
heartbeat is stamped by the executing node's clock and judged by the observer's.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from mailserver.observability.logging import mdc
from mailserver.observability.metrics import Metrics
from mailserver.tasks.api import Result, Task, TaskExecutionDetails, TaskStatus, information, utc_now
from mailserver.tasks.manager import default_node_name
from mailserver.tasks.registry import TaskRegistry
from mailserver.tasks.store import TaskStore

log = logging.getLogger(__name__)

DEFAULT_POLL_INTERVAL = 1.0
DEFAULT_HEARTBEAT_INTERVAL = 2.0
DEFAULT_HEARTBEAT_TIMEOUT = 60.0


class _Stop(Enum):
    """Why a running task was asked to stop: decides how it is recorded when it returns."""

    CANCELLED = "cancel requested through the task manager"
    SHUTDOWN = "the worker is shutting down"
    LOST = "the task is no longer owned by this worker"


@dataclass
class _Running:
    details: TaskExecutionDetails
    task: Task
    thread: threading.Thread | None = None
    stop: _Stop | None = None
    last_information: dict[str, Any] | None = None

    def information(self, at: datetime) -> dict[str, Any] | None:
        """The task's details now; the last known ones if reading them fails (never lose the heartbeat)."""
        try:
            self.last_information = information(self.task, at)
        except Exception:
            log.warning("reading the details of task %s failed", self.details.task_id, exc_info=True)
        return self.last_information

    def request_stop(self, reason: _Stop) -> None:
        if self.stop is None:
            self.stop = reason
        self.task.cancel()


class TaskWorker:
    def __init__(self, store: TaskStore, registry: TaskRegistry, node: str | None = None, *,
                 poll_interval: float = DEFAULT_POLL_INTERVAL,
                 heartbeat_interval: float = DEFAULT_HEARTBEAT_INTERVAL,
                 heartbeat_timeout: float = DEFAULT_HEARTBEAT_TIMEOUT, parallelism: int = 1,
                 metrics: Metrics | None = None, clock: Callable[[], datetime] = utc_now) -> None:
        if heartbeat_timeout <= heartbeat_interval:
            raise ValueError("heartbeat_timeout must be longer than heartbeat_interval")
        if parallelism < 1:
            raise ValueError("parallelism must be at least 1")
        self.store = store
        self.registry = registry
        self.node = node or default_node_name()
        self.poll_interval = poll_interval
        self.heartbeat_interval = heartbeat_interval
        self.heartbeat_timeout = timedelta(seconds=heartbeat_timeout)
        self.parallelism = parallelism
        self.metrics = metrics
        self._clock = clock
        self._running: dict[uuid.UUID, _Running] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._control: threading.Thread | None = None
        self._last_beat: datetime | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> TaskWorker:
        if self._control is None:
            self._control = threading.Thread(target=self._loop, name=f"task-worker-{self.node}", daemon=True)
            self._control.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop claiming; ask running tasks to stop and record them failed (interrupted)."""
        self._stopping.set()
        self._wake.set()
        if self._control is not None:
            self._control.join(timeout)
            self._control = None
        with self._lock:
            running = list(self._running.values())
        for entry in running:
            entry.request_stop(_Stop.SHUTDOWN)
        for entry in running:
            if entry.thread is not None:
                entry.thread.join(timeout)

    def __enter__(self) -> TaskWorker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def running_ids(self) -> set[uuid.UUID]:
        with self._lock:
            return set(self._running)

    def cancel(self, task_id: uuid.UUID) -> bool:
        """Stop ``task_id`` now if this worker runs it (a cancel request heard over RabbitMQ); False
        otherwise. It ends ``canceled``; the request itself is recorded by whoever made it."""
        with self._lock:
            entry = self._running.get(task_id)
        if entry is None:
            return False
        log.info("task %s: cancel request received, stopping it", task_id)
        entry.request_stop(_Stop.CANCELLED)
        return True

    # ------------------------------------------------------------------ control loop
    def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                self.tick()
            except Exception:   # the store may be briefly unreachable: keep polling
                log.warning("task worker %s: polling the task store failed", self.node, exc_info=True)
            self._wake.wait(self.poll_interval)
            self._wake.clear()

    def tick(self) -> None:
        """One round: heartbeats and stale detection when due, then claims."""
        now = self._clock()
        if self._last_beat is None or (now - self._last_beat).total_seconds() >= self.heartbeat_interval:
            self._last_beat = now
            self._heartbeat(now)
            self._fail_stale(now)
        if not self._stopping.is_set():
            self._claim()

    def _heartbeat(self, now: datetime) -> None:
        with self._lock:
            running = list(self._running.values())
        for entry in running:
            try:
                status = self.store.heartbeat(entry.details.task_id, self.node, now, entry.information(now))
            except Exception:
                log.warning("heartbeat of task %s failed", entry.details.task_id, exc_info=True)
                continue
            if status is TaskStatus.CANCEL_REQUESTED:
                entry.request_stop(_Stop.CANCELLED)
            elif status is None:
                log.warning("task %s is no longer owned by %s (failed by another node?): stopping it",
                            entry.details.task_id, self.node)
                entry.request_stop(_Stop.LOST)

    def _fail_stale(self, now: datetime) -> None:
        mine = self.running_ids()
        for details in self.store.running():
            if details.task_id in mine:
                continue   # alive: this thread heartbeats it
            beat = details.heartbeat
            if beat is not None and now - beat <= self.heartbeat_timeout:
                continue
            if self.store.fail_stale(details.task_id, beat, now):
                log.warning("task %s (%s) on %s failed: no heartbeat since %s", details.task_id, details.type,
                            details.ran_node, beat)
                self._count(details.type, TaskStatus.FAILED)

    def _claim(self) -> None:
        free = self.parallelism - len(self.running_ids())
        if free <= 0:
            return
        # Look past a few tasks of types this node does not know (left to the nodes that do).
        for details in self.store.waiting(max(20, 4 * free)):
            if free <= 0 or self._stopping.is_set():
                return
            if details.type not in self.registry:
                continue
            if self._start(details):
                free -= 1

    def _start(self, details: TaskExecutionDetails) -> bool:
        try:
            task = self.registry.create(details.type, details.parameters)
        except Exception:
            # Cannot be rebuilt anywhere: claim it and fail it visibly rather than skip it forever.
            log.exception("task %s (%s) cannot be rebuilt from %s", details.task_id, details.type, details.parameters)
            now = self._clock()
            if self.store.claim(details, self.node, now) and \
                    self.store.finish(details.task_id, self.node, TaskStatus.FAILED, now, None):
                self._count(details.type, TaskStatus.FAILED)
            return False
        if not self.store.claim(details, self.node, self._clock()):
            return False   # another worker won, or it was canceled meanwhile
        self._count(details.type, TaskStatus.IN_PROGRESS)
        entry = _Running(details, task, last_information=details.additional_information)
        entry.thread = threading.Thread(target=self._execute, args=(entry,), daemon=True,
                                        name=f"task-{details.type}-{details.task_id}")
        with self._lock:
            self._running[details.task_id] = entry
        entry.thread.start()
        return True

    # ------------------------------------------------------------------ task thread
    def _execute(self, entry: _Running) -> None:
        details, task = entry.details, entry.task
        with mdc(taskId=str(details.task_id), taskType=details.type):
            log.info("task %s (%s) started on %s", details.task_id, details.type, self.node)
            try:
                result = task.run()
            except Exception:
                log.exception("task %s (%s) failed", details.task_id, details.type)
                result = Result.FAILED
            status = self._outcome(result, entry.stop)
            now = self._clock()
            try:
                recorded = self.store.finish(details.task_id, self.node, status, now, entry.information(now))
            except Exception:
                # Left running: the heartbeat stops with this entry, so the stale detection fails it.
                log.exception("cannot record the end of task %s", details.task_id)
                recorded = False
            with self._lock:
                self._running.pop(details.task_id, None)
            if recorded:
                log.info("task %s (%s) %s", details.task_id, details.type, status.value)
                self._count(details.type, status)
            else:
                log.warning("task %s (%s) ended %s but was no longer owned by %s: not recorded",
                            details.task_id, details.type, status.value, self.node)
        self._wake.set()   # a slot is free: claim the next one now

    @staticmethod
    def _outcome(result: Result, stop: _Stop | None) -> TaskStatus:
        if result is Result.FAILED or stop is _Stop.SHUTDOWN:
            return TaskStatus.FAILED
        if stop is _Stop.CANCELLED:
            return TaskStatus.CANCELLED
        return TaskStatus.COMPLETED

    def _count(self, type_: str, status: TaskStatus) -> None:
        if self.metrics is not None:
            self.metrics.tasks.labels(type_, status.value).inc()
