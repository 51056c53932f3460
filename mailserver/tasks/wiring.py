"""Building a node's task services: the manager WebAdmin uses and the worker that runs tasks.

Every node that serves WebAdmin needs the manager; every node that should run tasks starts the
worker (``services.worker.start()`` at boot, ``stop()`` at shutdown). With RabbitMQ
(``with_rabbitmq_cancel_requests``), cancel requests also travel as James's do: the manager
publishes them and each worker node hears them through its ``cancel_listener`` (started and stopped
with the worker). Settings come from the environment:

* ``MAILSERVER_NODE_NAME``: the name reported as ``submittedFrom`` / ``executedOn`` (host name by
  default); it must differ between live processes sharing a keyspace;
* ``MAILSERVER_TASKS_POLL_INTERVAL`` (s, default 1), ``MAILSERVER_TASKS_HEARTBEAT_INTERVAL`` (s,
  default 2), ``MAILSERVER_TASKS_HEARTBEAT_TIMEOUT`` (s, default 60: a running task whose
  worker stayed silent that long is failed), ``MAILSERVER_TASKS_PARALLELISM`` (default 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mailserver.cassandra.session import CassandraSession
from mailserver.eventsourcing.cassandra import CassandraEventStore
from mailserver.observability.metrics import Metrics
from mailserver.queue.api import MailQueueFactory
from mailserver.rabbitmq_queues import QueueType
from mailserver.repository.api import MailRepositoryStore
from mailserver.settings import NodeSettings
from mailserver.settings import TaskSettings as TaskEnvironment
from mailserver.tasks import worker as w
from mailserver.tasks.builtin import tasks_cleanup
from mailserver.tasks.builtin.migration import SchemaVersions
from mailserver.tasks.builtin.registration import EventBusParts, register_builtin
from mailserver.tasks.cancel_requests import CancelRequestListener, RabbitMQCancelRequests
from mailserver.tasks.cassandra import CassandraTaskStore
from mailserver.tasks.eventsourced import EventSourcedTaskStore
from mailserver.tasks.james_events import TASK_EVENT_JSON
from mailserver.tasks.manager import TaskManager, default_node_name
from mailserver.tasks.projection_cassandra import CassandraTaskProjection
from mailserver.tasks.registry import TaskRegistry
from mailserver.tasks.store import TaskStore

if TYPE_CHECKING:
    from mailserver.airflow.api import DagRuns
    from mailserver.jmap.uploads import UploadRepository
    from mailserver.mailbox.manager import MailboxManager
    from mailserver.mailbox.subscriptions import SubscriptionStore
    from mailserver.tasks.builtin.dag_run import Polling
    from mailserver.tasks.builtin.user_data import UserDataParts
    from mailserver.tasks.builtin.vault import VaultParts


@dataclass(frozen=True)
class TaskSettings:
    node: str
    poll_interval: float = w.DEFAULT_POLL_INTERVAL
    heartbeat_interval: float = w.DEFAULT_HEARTBEAT_INTERVAL
    heartbeat_timeout: float = w.DEFAULT_HEARTBEAT_TIMEOUT
    parallelism: int = 1

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TaskSettings:
        tasks = TaskEnvironment.from_env(env)
        return cls(node=NodeSettings.from_env(env).node_name or default_node_name(),
                   poll_interval=tasks.poll_interval.total_seconds(),
                   heartbeat_interval=tasks.heartbeat_interval.total_seconds(),
                   heartbeat_timeout=tasks.heartbeat_timeout.total_seconds(), parallelism=tasks.parallelism)


@dataclass
class TaskServices:
    manager: TaskManager
    worker: w.TaskWorker
    registry: TaskRegistry
    schema_versions: SchemaVersions | None
    dag_runs: DagRuns | None = None   # Airflow, when configured: the maintenance procedures run there
    cancel_listener: CancelRequestListener | None = None   # James's cancel requests, for this node's worker

    def close(self) -> None:
        """Release what the manager holds (its cancel-request publisher)."""
        if self.manager.cancel_requests is not None:
            self.manager.cancel_requests.close()


def with_rabbitmq_cancel_requests(services: TaskServices, amqp_url: str, queue_type: QueueType) -> TaskServices:
    """Cancel requests published to, and heard from, James's cancel-requests exchange."""
    services.manager.cancel_requests = RabbitMQCancelRequests(amqp_url)
    services.cancel_listener = CancelRequestListener(amqp_url, queue_type, services.worker.cancel)
    return services


def build(store: TaskStore, settings: TaskSettings, *, queues: MailQueueFactory | None = None,
          repositories: MailRepositoryStore | None = None, schema_versions: SchemaVersions | None = None,
          metrics: Metrics | None = None, dag_runs: DagRuns | None = None,
          polling: Polling | None = None, event_bus: EventBusParts | None = None,
          mailboxes: MailboxManager | None = None, subscriptions: SubscriptionStore | None = None,
          vault: VaultParts | None = None, user_data: UserDataParts | None = None,
          uploads: UploadRepository | None = None) -> TaskServices:
    """The manager and a (not started) worker able to run every built-in type it has collaborators for."""
    registry = register_builtin(TaskRegistry(), queues=queues, repositories=repositories,
                                schema_versions=schema_versions, dag_runs=dag_runs, polling=polling,
                                event_bus=event_bus, mailboxes=mailboxes, subscriptions=subscriptions,
                                vault=vault, user_data=user_data, uploads=uploads)
    tasks_cleanup.register(registry, store)
    worker = w.TaskWorker(store, registry, settings.node, poll_interval=settings.poll_interval,
                          heartbeat_interval=settings.heartbeat_interval,
                          heartbeat_timeout=settings.heartbeat_timeout, parallelism=settings.parallelism,
                          metrics=metrics)
    return TaskServices(TaskManager(store, settings.node, metrics=metrics), worker, registry, schema_versions,
                        dag_runs)


def cassandra_task_store(session: CassandraSession) -> EventSourcedTaskStore:
    """Tasks as James keeps them (events and projection), claims and heartbeats in our tables."""
    return EventSourcedTaskStore(CassandraTaskStore(session), CassandraEventStore(session, TASK_EVENT_JSON),
                                 CassandraTaskProjection(session))


def cassandra_services(session: CassandraSession, settings: TaskSettings | None = None, *,
                       queues: MailQueueFactory | None = None, repositories: MailRepositoryStore | None = None,
                       metrics: Metrics | None = None, dag_runs: DagRuns | None = None,
                       polling: Polling | None = None, event_bus: EventBusParts | None = None,
                       mailboxes: MailboxManager | None = None,
                       subscriptions: SubscriptionStore | None = None,
                       vault: VaultParts | None = None, user_data: UserDataParts | None = None,
                       uploads: UploadRepository | None = None) -> TaskServices:
    """The distributed setup: tasks in the keyspace, schema upgrades through this session."""
    return build(cassandra_task_store(session), settings or TaskSettings.from_env(), queues=queues,
                 repositories=repositories, schema_versions=SchemaVersions(session), metrics=metrics,
                 dag_runs=dag_runs, polling=polling, event_bus=event_bus, mailboxes=mailboxes,
                 subscriptions=subscriptions, vault=vault, user_data=user_data, uploads=uploads)
