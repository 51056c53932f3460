"""WebAdmin with the task-driven parts on memory adapters: queues, repositories, tasks and a worker."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from mailserver.cassandra.migrations.base import Migration, MigrationResult, MigrationStatus
from mailserver.observability.metrics import Metrics
from mailserver.queue.memory import MemoryMailQueueFactory
from mailserver.repository.memory import MemoryMailRepositoryStore
from mailserver.tasks.builtin.migration import SchemaVersions
from mailserver.tasks.builtin.registration import register_builtin
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.memory import MemoryTaskStore
from mailserver.tasks.registry import TaskRegistry
from mailserver.tasks.worker import TaskWorker
from mailserver.webadmin.context import WebAdminContext
from tests.contract.task_manager_contract import counting_factory
from tests.support.schema_version_session import FakeSchemaSession
from tests.unit.webadmin.webadmin_support import make_context

NODE = "webadmin-node"
COUNTING = "counting"   # a test task type: CountingTask of the task-manager contract


def fake_migration(to: int, ran: list[int]) -> type[Migration]:
    class Fake(Migration):
        from_version = to - 1
        to_version = to

        def run(self) -> MigrationResult:
            ran.append(to)
            return MigrationResult(MigrationStatus.COMPLETED, {})

    return Fake


@contextmanager
def task_context(session: FakeSchemaSession | None = None, migrations: dict | None = None,
                 latest: int = 14) -> Iterator[WebAdminContext]:
    """A context whose task routes work end to end: a worker runs what the routes submit."""
    queues, repositories, store = MemoryMailQueueFactory(), MemoryMailRepositoryStore(), MemoryTaskStore()
    versions = SchemaVersions(session or FakeSchemaSession(12), migrations or {}, latest)   # type: ignore[arg-type]
    registry = register_builtin(TaskRegistry(), queues=queues, repositories=repositories, schema_versions=versions)
    registry.register(COUNTING, counting_factory(COUNTING))
    metrics = Metrics()
    ctx = make_context(queues=queues, repositories=repositories, tasks=TaskManager(store, NODE, metrics=metrics),
                       schema_versions=versions, metrics=metrics)
    worker = TaskWorker(store, registry, NODE, poll_interval=0.02, heartbeat_interval=0.05, metrics=metrics)
    worker.start()
    try:
        yield ctx
    finally:
        worker.stop()
