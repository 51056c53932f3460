"""``mailserver serve``: connect the backends, load the mailet container, run the chosen roles.

The process stays up until SIGTERM or SIGINT, then stops the roles in reverse order (SMTP
first, see ``roles``). A configuration error (unknown matcher in the YAML, malformed setting,
missing WebAdmin credentials) stops the start before anything listens.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mailserver.airflow.http import HttpDagRuns
from mailserver.airflow.settings import AirflowSettings
from mailserver.mailets.config import load as load_spec
from mailserver.mailets.container import MailetContainer, build, postmaster_address
from mailserver.mailets.context import MailetContext
from mailserver.observability.lifecycle import ApplicationLifecycle
from mailserver.rrt.resolver import RecipientRewriter
from mailserver.runtime.backends import Backends, connect
from mailserver.runtime.health_monitor import HealthMonitor
from mailserver.runtime.heap import settle_heap
from mailserver.runtime.roles import (
    ImapRole,
    JmapRole,
    ListenersRole,
    OutgoingRole,
    Role,
    SmtpRole,
    SpoolerRole,
    TasksRole,
    WebAdminRole,
)
from mailserver.runtime.settings import ServeSettings
from mailserver.serving.connections import ConnectionRegistry
from mailserver.tasks.builtin.dag_run import Polling
from mailserver.tasks.builtin.event_bus_groups import registered_groups_from_env
from mailserver.tasks.builtin.registration import EventBusParts
from mailserver.tasks.builtin.user_data import UserDataParts
from mailserver.tasks.builtin.vault import VaultParts
from mailserver.tasks.wiring import TaskServices, TaskSettings, cassandra_services, with_rabbitmq_cancel_requests

if TYPE_CHECKING:
    from mailserver.cassandra.session import CassandraSession
    from mailserver.mailbox.manager import MailboxManager
    from mailserver.rrt.api import RecipientRewriteTable
    from mailserver.users.api import UsersRepository

log = logging.getLogger(__name__)


def mailet_container(settings: ServeSettings, backends: Backends) -> MailetContainer:
    spec = load_spec(settings.mailet_container)
    context = MailetContext(domains=backends.domains, users=backends.users,
                            rewriter=RecipientRewriter(backends.rrt, backends.domains),
                            mailboxes=backends.mailbox.manager, repositories=backends.repositories,
                            queues=backends.queues, contents=backends.contents,
                            postmaster=postmaster_address(spec), hostname=settings.smtp.hostname,
                            metrics=backends.metrics)
    return build(spec, context)


def vault_parts(settings: ServeSettings, backends: Backends, container: MailetContainer) -> VaultParts | None:
    """The vault routes and tasks: restore into the mailboxes, export through the spool from the postmaster."""
    if backends.vault is None:
        return None
    from mailserver.mailbox.subscriptions import CassandraSubscriptionStore

    return VaultParts(backends.vault, backends.mailbox.manager, settings.vault, backends.queues,
                      container.context.postmaster, CassandraSubscriptionStore(backends.session))


def user_data_parts(backends: Backends) -> UserDataParts:
    """The stores a ``DeleteUserDataTask`` walks on this node (the ones WebAdmin administers)."""
    return cassandra_user_data_parts(backends.session, backends.users, backends.rrt, backends.mailbox.manager)


def cassandra_user_data_parts(session: CassandraSession, users: UsersRepository, rrt: RecipientRewriteTable,
                              mailboxes: MailboxManager) -> UserDataParts:
    """``user_data_parts`` from its pieces: the subscription, delegation, identity and vacation tables of
    ``session``."""
    from mailserver.identities.cassandra import CassandraCustomIdentityStore
    from mailserver.mailbox.subscriptions import CassandraSubscriptionStore
    from mailserver.users.cassandra_delegation import CassandraDelegationStore
    from mailserver.vacation.cassandra import CassandraVacationRepository

    return UserDataParts(users, rrt, mailboxes, CassandraSubscriptionStore(session),
                         CassandraDelegationStore(session, users.contains), CassandraCustomIdentityStore(session),
                         CassandraVacationRepository(session))


def airflow_dag_runs(env: Mapping[str, str]) -> tuple[HttpDagRuns | None, Polling | None]:
    """The Airflow the maintenance procedures run on, or (None, None) when it is not configured."""
    settings = AirflowSettings.from_env(env)
    if settings is None:
        log.info("Airflow is not configured (MAILSERVER_AIRFLOW_URL): maintenance procedure routes answer 503")
        return None, None
    log.info("maintenance procedures run as DAG runs of the Airflow at %s", settings.url)
    return HttpDagRuns(settings), Polling(settings.poll_interval, settings.unreachable_timeout)


START_ORDER = ("tasks", "webadmin", "listeners", "spooler", "outgoing", "imap", "jmap", "smtp")


def start_roles(lifecycle: ApplicationLifecycle, builders: Mapping[str, Callable[[], Role]],
                started: list[Role]) -> None:
    """Build and start the lifecycle's roles in order, appending each to ``started`` as it runs."""
    for name in lifecycle.expected:
        role = builders[name]()
        role.start()
        started.append(role)
        lifecycle.role_started(name, role.alive)
        log.info("role %s started", name)


class Server:
    """The roles of one process over one set of backends; ``start``/``stop`` for tests and ``run``."""

    def __init__(self, settings: ServeSettings, env: Mapping[str, str] | None = None) -> None:
        self.settings = settings
        self.env: Any = os.environ if env is None else env
        self.backends: Backends | None = None
        self.monitor: HealthMonitor | None = None
        self.roles: list[Role] = []
        self.tasks: TaskServices | None = None
        # Started in START_ORDER; ``Guice application lifecycle`` is healthy once all of them run.
        self.lifecycle = ApplicationLifecycle([name for name in START_ORDER if name in settings.roles])

    def start(self) -> Server:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        s = self.settings
        self.lifecycle = ApplicationLifecycle(self.lifecycle.expected)   # a restarted Server starts afresh
        self.backends = backends = connect(s, self.env)
        container = mailet_container(s, backends)   # before anything listens: config errors end here
        self.monitor = HealthMonitor(backends.mail_path_checks, interval=s.health_interval,
                                     metrics=backends.metrics).start()
        task_settings = TaskSettings.from_env({**self.env, "MAILSERVER_NODE_NAME": s.node_name})
        dag_runs, polling = airflow_dag_runs(self.env)
        bus = backends.bus   # the event-bus tasks: dead-letter redelivery, groups reset (management API)
        event_bus = EventBusParts(backends.dead_letters, bus, backends.required_groups,
                                  registered_groups_from_env(self.env, bus.amqp_url, bus.names), bus.topology)
        vault = vault_parts(s, backends, container)
        tasks = cassandra_services(backends.session, task_settings, queues=backends.queues,
                                   repositories=backends.repositories, metrics=backends.metrics,
                                   dag_runs=dag_runs, polling=polling, event_bus=event_bus,
                                   mailboxes=backends.mailbox.manager, subscriptions=backends.subscriptions,
                                   vault=vault, user_data=user_data_parts(backends), uploads=backends.uploads)
        self.tasks = with_rabbitmq_cancel_requests(tasks, bus.amqp_url, bus.queue_type)
        connections = ConnectionRegistry()   # this node's IMAP and SMTP sessions, for WebAdmin's /servers/channels
        # Consumers first, SMTP last (START_ORDER): mail accepted at once has someone to process it.
        builders = {
            "tasks": lambda: TasksRole(tasks),
            "webadmin": lambda: WebAdminRole(backends, self.env, tasks, self.lifecycle, vault, connections),
            "listeners": lambda: ListenersRole(s, backends),
            "spooler": lambda: SpoolerRole(s, backends, container),
            "outgoing": lambda: OutgoingRole(s, backends, container),
            "imap": lambda: ImapRole(s, backends, connections),
            "jmap": lambda: JmapRole.on(backends, self.env, container),
            "smtp": lambda: SmtpRole(s, backends, container, self.monitor, connections),   # type: ignore[arg-type]
        }
        start_roles(self.lifecycle, builders, self.roles)
        log.info("mailserver started on node %s with roles %s", s.node_name, ", ".join(r.name for r in self.roles))

    def role(self, name: str) -> Role:
        return next(r for r in self.roles if r.name == name)

    def stop(self) -> None:
        self.lifecycle.stopping()
        for role in reversed(self.roles):
            try:
                role.stop()
                log.info("role %s stopped", role.name)
            except Exception:
                log.exception("stopping role %s failed", role.name)
        self.roles.clear()
        if self.tasks is not None:
            self.tasks.close()
            self.tasks = None
        if self.monitor is not None:
            self.monitor.stop()
            self.monitor = None
        if self.backends is not None:
            self.backends.close()
            self.backends = None


def run(settings: ServeSettings, env: Mapping[str, str] | None = None) -> None:
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = Server(settings, env).start()
    settle_heap()   # here, not in start(): tests start many servers in one process and must not freeze theirs
    try:
        stop.wait()
        log.info("stopping")
    finally:
        server.stop()
