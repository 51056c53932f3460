"""``register_builtin``: the task types a node can run, given the collaborators it has."""

from __future__ import annotations

from mailserver.queue.api import MailQueueFactory
from mailserver.repository.api import MailRepositoryStore
from mailserver.tasks.builtin import mailqueue, mailrepository, migration
from mailserver.tasks.builtin.migration import SchemaVersions
from mailserver.tasks.registry import TaskRegistry


def register_builtin(registry: TaskRegistry, *, queues: MailQueueFactory | None = None,
                     repositories: MailRepositoryStore | None = None,
                     schema_versions: SchemaVersions | None = None) -> TaskRegistry:
    """Register the types whose collaborators this node has (a node runs what it can build)."""
    if queues is not None:
        mailqueue.register(registry, queues)
    if repositories is not None:
        mailrepository.register(registry, repositories, queues)
    if schema_versions is not None:
        migration.register(registry, schema_versions)
    return registry
