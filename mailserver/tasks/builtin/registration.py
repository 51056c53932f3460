"""``register_builtin``: the task types a node can run, given the collaborators it has."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mailserver.queue.api import MailQueueFactory
from mailserver.repository.api import MailRepositoryStore
from mailserver.tasks.builtin import event_bus_groups, event_dead_letters, mailqueue, mailrepository, migration
from mailserver.tasks.builtin.migration import SchemaVersions
from mailserver.tasks.registry import TaskRegistry

if TYPE_CHECKING:
    from mailserver.airflow.api import DagRuns
    from mailserver.events.api import EventBus
    from mailserver.events.dead_letters import EventDeadLetters
    from mailserver.events.registered_groups import RegisteredGroups
    from mailserver.events.required_groups import RequiredGroups
    from mailserver.events.topology import BusTopology
    from mailserver.jmap.uploads import UploadRepository
    from mailserver.mailbox.manager import MailboxManager
    from mailserver.mailbox.subscriptions import SubscriptionStore
    from mailserver.tasks.builtin.dag_run import Polling
    from mailserver.tasks.builtin.user_data import UserDataParts
    from mailserver.tasks.builtin.vault import VaultParts


@dataclass(frozen=True)
class EventBusParts:
    """What the event-bus tasks act on. The groups reset also needs the last three (RabbitMQ)."""

    dead_letters: EventDeadLetters
    bus: EventBus
    required_groups: RequiredGroups | None = None
    registered_groups: RegisteredGroups | None = None   # None without RABBITMQ_MANAGEMENT_URL
    topology: BusTopology | None = None


def register_builtin(registry: TaskRegistry, *, queues: MailQueueFactory | None = None,
                     repositories: MailRepositoryStore | None = None,
                     schema_versions: SchemaVersions | None = None, dag_runs: DagRuns | None = None,
                     polling: Polling | None = None, event_bus: EventBusParts | None = None,
                     mailboxes: MailboxManager | None = None,
                     subscriptions: SubscriptionStore | None = None,
                     vault: VaultParts | None = None, user_data: UserDataParts | None = None,
                     uploads: UploadRepository | None = None) -> TaskRegistry:
    """Register the types whose collaborators this node has (a node runs what it can build).

    With ``dag_runs`` (Airflow configured), the maintenance procedures are DAG runs; a schema
    migration submitted without Airflow still runs in-process on such a node.
    """
    if queues is not None:
        mailqueue.register(registry, queues)
    if repositories is not None:
        mailrepository.register(registry, repositories, queues)
    if schema_versions is not None:
        migration.register(registry, schema_versions)
    if dag_runs is not None:
        from mailserver.tasks.builtin import dag_run

        local = {migration.CassandraMigrationTask.type: migration.factory(schema_versions)} if schema_versions else {}
        dag_run.register(registry, dag_runs, polling or dag_run.Polling(), in_process=local)
    if event_bus is not None:
        event_dead_letters.register(registry, event_bus.dead_letters, event_bus.bus)
        required, registered, topology = event_bus.required_groups, event_bus.registered_groups, event_bus.topology
        if required is not None and registered is not None and topology is not None:
            event_bus_groups.register(registry, required, registered, topology)
    if mailboxes is not None:
        from mailserver.tasks.builtin import flag_inconsistencies, user_mailboxes

        user_mailboxes.register(registry, mailboxes, subscriptions)
        flag_inconsistencies.register(registry, mailboxes)
    if uploads is not None:
        from mailserver.tasks.builtin import upload_cleanup

        upload_cleanup.register(registry, uploads)
    if vault is not None:
        from mailserver.tasks.builtin import vault as vault_tasks

        vault_tasks.register(registry, vault)
    if user_data is not None:
        from mailserver.tasks.builtin import user_data as user_data_tasks

        user_data_tasks.register(registry, user_data)
        from mailserver.tasks.builtin import username_change

        username_change.register(registry, user_data)
        if user_data.mailboxes is not None:
            from mailserver.tasks.builtin import expire_mailbox

            expire_mailbox.register(registry, user_data.mailboxes, user_data.users)
    return registry
