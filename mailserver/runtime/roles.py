"""The server roles: each starts its threads over shared backends and stops gracefully.

Stop order matters for "accepted mail is never lost": SMTP stops first (no new 250s), then the
consumers finish the mail they hold before acknowledging it; anything unacknowledged when the
process dies is delivered again by RabbitMQ.
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from mailserver.delivery import DnsResolver, RemoteDeliveryWorker, Resolver, StaticResolver
from mailserver.events.api import EventBus
from mailserver.events.required_groups import REMOVED, RequireGroups
from mailserver.jmap.account import MailServices, Submission
from mailserver.jmap.config import JmapConfig
from mailserver.mailets.container import MailetContainer
from mailserver.mailets.spooler import MailSpooler, spooler_for
from mailserver.observability.health import HealthCheck
from mailserver.observability.lifecycle import ApplicationLifecycle, LifecycleHealthCheck
from mailserver.observability.loop_stalls import WATCHDOG, LoopStallHealthCheck
from mailserver.rrt.can_send_from import CanSendFrom
from mailserver.runtime.backends import Backends
from mailserver.runtime.health_monitor import HealthMonitor
from mailserver.runtime.outgoing import outgoing_specs
from mailserver.runtime.settings import ServeSettings
from mailserver.security.auth_throttle import AuthThrottle
from mailserver.serving.connections import ConnectionRegistry
from mailserver.serving.server_thread import AsyncServerThread
from mailserver.serving.uvicorn_thread import UvicornThread
from mailserver.smtp import SmtpServer, SmtpServerThread
from mailserver.tasks.builtin.vault import VaultParts
from mailserver.tasks.wiring import TaskServices
from mailserver.tasks.worker import TaskWorker
from mailserver.users.api import UsersRepository

log = logging.getLogger(__name__)


class Role(ABC):
    name: str

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def stop(self) -> None: ...

    @abstractmethod
    def alive(self) -> bool:
        """Whether the role still does its job (its threads run); cheap, for the lifecycle check."""


# Liveness of the components the roles run. They read the components' thread handles, so a
# rename there fails the lifecycle unit tests rather than silently reporting a dead role alive.
def server_alive(thread: AsyncServerThread) -> bool:
    return thread.alive()   # the thread runs the server's event loop until stop()


def threads_alive(threads: Sequence[threading.Thread]) -> bool:
    return all(t.is_alive() for t in threads)


def spooler_alive(spooler: MailSpooler) -> bool:
    return threads_alive(spooler._workers)   # zero threads configured: nothing to die


def delivery_alive(worker: RemoteDeliveryWorker) -> bool:
    return threads_alive(worker._threads)


def task_worker_alive(worker: TaskWorker) -> bool:
    control = worker._control
    return control is not None and control.is_alive()


class ServerRole(Role):
    """A protocol server (SMTP, IMAP) on an event loop thread of its own."""

    thread: AsyncServerThread

    @property
    def port(self) -> int:
        return self.thread.port

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.thread.stop()

    def alive(self) -> bool:
        return server_alive(self.thread)


class HttpRole(Role):
    """An HTTP server (WebAdmin, JMAP): uvicorn on a thread of its own."""

    http: UvicornThread

    def start(self) -> None:
        self.http.start()

    def stop(self) -> None:
        self.http.stop()

    def alive(self) -> bool:
        return self.http.alive()


class SmtpRole(ServerRole):
    name = "smtp"

    def __init__(self, settings: ServeSettings, backends: Backends, container: MailetContainer,
                 monitor: HealthMonitor, connections: ConnectionRegistry | None = None) -> None:
        server = SmtpServer(settings.smtp, container.context.spool, backends.domains, backends.users,
                            store=backends.contents, healthy=monitor.healthy, healthy_in_memory=True,
                            maintenance=lambda: not backends.guard.smtp_allowed(),
                            maintenance_known=backends.guard.in_maintenance_if_known, metrics=backends.metrics,
                            rewriter=container.context.rewriter, postmaster=container.context.postmaster,
                            auth_throttle=backends.auth_throttle)
        if connections is not None:
            connections.register(server)
        self.thread = SmtpServerThread(server, event_loop=settings.event_loop)


class ImapRole(ServerRole):
    """IMAP4rev1 on the mailbox manager; sessions are refused with ``* BYE`` during maintenance mode."""

    name = "imap"

    def __init__(self, settings: ServeSettings, backends: Backends,
                 connections: ConnectionRegistry | None = None) -> None:
        from mailserver.imap import ImapServer, ImapServerThread
        from mailserver.mailbox.subscriptions import CassandraSubscriptionStore

        server = ImapServer(settings.imap, backends.mailbox.manager, backends.users,
                            subscriptions=CassandraSubscriptionStore(backends.session),
                            maintenance=lambda: not backends.guard.smtp_allowed(), metrics=backends.metrics,
                            auth_throttle=backends.auth_throttle, bus=backends.mailbox.bus)
        if connections is not None:
            connections.register(server)
        self.thread = ImapServerThread(server, event_loop=settings.event_loop)


class JmapRole(HttpRole):
    """JMAP (RFC 8620, RFC 8621) on the mailbox manager, over HTTP on a thread of its own."""

    name = "jmap"

    def __init__(self, config: JmapConfig, users: UsersRepository, services: MailServices,
                 throttle: AuthThrottle | None = None, push_bus: EventBus | None = None) -> None:
        if config.host not in ("127.0.0.1", "::1", "localhost") and not config.tls:
            log.warning("JMAP listens on %s without TLS: make sure a TLS proxy is in front of it", config.host)
        from mailserver.jmap.server import JmapServer  # uvicorn and FastAPI only where JMAP runs

        self.http = JmapServer(config, users, services, throttle, push_bus)

    @classmethod
    def on(cls, backends: Backends, env: Any, container: MailetContainer) -> JmapRole:
        from mailserver.identities.cassandra import CassandraCustomIdentityStore
        from mailserver.identities.repository import IdentityRepository
        from mailserver.vacation.cassandra import CassandraVacationRepository

        mailbox = backends.mailbox
        services = MailServices(mailbox.manager, mailbox.fast_view, backends.subscriptions,
                                changes=backends.jmap_changes,
                                uploads=backends.uploads,
                                # Submissions go to the spool the SMTP intake uses: the mailet container
                                # processes them.
                                submission=Submission(container.context.spool, CanSendFrom(backends.rrt)),
                                search=backends.search,
                                identities=IdentityRepository(CassandraCustomIdentityStore(backends.session),
                                                              CanSendFrom(backends.rrt).addresses),
                                vacations=CassandraVacationRepository(backends.session))
        return cls(JmapConfig.from_env(env), backends.users, services, backends.auth_throttle, backends.push_bus)

    @property
    def port(self) -> int:
        return self.http.port


class SpoolerRole(Role):
    name = "spooler"

    def __init__(self, settings: ServeSettings, backends: Backends, container: MailetContainer) -> None:
        spooler = spooler_for(container, metrics=backends.metrics)
        if settings.spooler_threads is not None:
            spooler = MailSpooler(container, spooler.queue, spooler.error_repository,
                                  threads=settings.spooler_threads, max_retries=spooler.max_retries,
                                  metrics=backends.metrics)
        self.spooler = spooler

    def start(self) -> None:
        self.spooler.start()

    def stop(self) -> None:
        self.spooler.stop()

    def alive(self) -> bool:
        return spooler_alive(self.spooler)


class OutgoingRole(Role):
    name = "outgoing"

    def __init__(self, settings: ServeSettings, backends: Backends, container: MailetContainer) -> None:
        assert container.spec is not None
        resolver: Resolver = StaticResolver(settings.mx_static) if settings.mx_static else DnsResolver()
        self.workers: list[tuple[RemoteDeliveryWorker, int]] = []
        for spec in outgoing_specs(container.spec, helo_name=settings.smtp.hostname):
            worker = RemoteDeliveryWorker(backends.queues.get(spec.queue), container.context.spool, resolver,
                                          config=spec.config, store=backends.contents)
            self.workers.append((worker, spec.threads))

    def start(self) -> None:
        for worker, threads in self.workers:
            worker.start(threads)
            log.info("remote delivery: %d thread(s) on queue %s", threads, worker.outgoing.name)

    def stop(self) -> None:
        for worker, _ in self.workers:
            worker.stop()

    def alive(self) -> bool:
        return all(delivery_alive(worker) for worker, _ in self.workers)


class ListenersRole(Role):
    """Consumes the event bus for the listener groups this node runs (``MAILSERVER_LISTENER_GROUPS``).

    At start the node records the groups it runs as the required groups (with its name and the
    date), unbinds the queues of groups no longer required (kept, never deleted) and binds its own.
    """

    name = "listeners"

    def __init__(self, settings: ServeSettings, backends: Backends) -> None:
        self.bus = backends.bus
        self.required_groups = backends.required_groups
        self.node_name = settings.node_name
        for group in [g for g in self.bus.groups if not settings.runs_group(g)]:
            self.bus.unregister(group)
            log.info("listener group %s is not configured on this node", group)

    def start(self) -> None:
        changes = self.required_groups.require(RequireGroups.of(self.bus.groups, self.node_name))
        removed = [c.group for c in changes if c.type == REMOVED]
        for change in changes:
            log.info("%s %s (host %s, %s)", change.type, change.group, change.host, change.date)
        if removed:
            self.bus.topology.unbind_groups(removed)
        self.bus.start()

    def stop(self) -> None:
        self.bus.stop()

    def alive(self) -> bool:
        return self.bus.consuming()


class TasksRole(Role):
    """Runs the tasks any node submitted (James's distributed task manager)."""

    name = "tasks"

    def __init__(self, services: TaskServices) -> None:
        self.worker = services.worker
        self.cancel_listener = services.cancel_listener

    def start(self) -> None:
        self.worker.start()
        if self.cancel_listener is not None:
            self.cancel_listener.start()

    def stop(self) -> None:
        if self.cancel_listener is not None:
            self.cancel_listener.stop()
        self.worker.stop()

    def alive(self) -> bool:
        return task_worker_alive(self.worker)


class WebAdminRole(HttpRole):
    name = "webadmin"

    def __init__(self, backends: Backends, env: Any, tasks: TaskServices,
                 lifecycle: ApplicationLifecycle | None = None, vault: VaultParts | None = None,
                 connections: ConnectionRegistry | None = None) -> None:
        import uvicorn

        from mailserver.dlp.store import DlpConfigurationStore
        from mailserver.droplist.cassandra import CassandraDropList
        from mailserver.eventsourcing.cassandra import CassandraEventStore
        from mailserver.identities.cassandra import CassandraCustomIdentityStore
        from mailserver.identities.repository import IdentityRepository
        from mailserver.sieve.cassandra_quota import CassandraSieveQuotas
        from mailserver.tasks.builtin.event_bus_groups import registered_groups_from_env
        from mailserver.users.cassandra_delegation import CassandraDelegationStore
        from mailserver.vacation.cassandra import CassandraVacationRepository
        from mailserver.webadmin.app import create_app
        from mailserver.webadmin.context import WebAdminContext
        from mailserver.webadmin.server import ServerConfig, uvicorn_config

        config = ServerConfig.from_env(env)
        if config.host not in ("127.0.0.1", "::1", "localhost"):
            log.warning("WebAdmin listens on %s: make sure the network in front of it is trusted", config.host)
        context = WebAdminContext(domains=backends.domains, users=backends.users, rrt=backends.rrt,
                                  maintenance=backends.maintenance, auth=config.auth,
                                  health_checks=webadmin_checks(backends, lifecycle), guard=backends.guard,
                                  metrics=backends.metrics, queues=backends.queues,
                                  repositories=backends.repositories, contents=backends.contents,
                                  tasks=tasks.manager, schema_versions=tasks.schema_versions,
                                  dag_runs=tasks.dag_runs, dead_letters=backends.dead_letters, bus=backends.bus,
                                  required_groups=backends.required_groups,
                                  registered_groups=registered_groups_from_env(env, backends.bus.amqp_url,
                                                                               backends.bus.names),
                                  topology=backends.bus.topology, mailboxes=backends.mailbox.manager,
                                  subscriptions=backends.subscriptions, vault=vault, uploads=backends.uploads,
                                  connections=connections, droplist=CassandraDropList(backends.session),
                                  sieve_quotas=CassandraSieveQuotas(backends.session),
                                  vacations=CassandraVacationRepository(backends.session),
                                  dlp=DlpConfigurationStore(CassandraEventStore(backends.session)),
                                  identities=IdentityRepository(CassandraCustomIdentityStore(backends.session),
                                                                CanSendFrom(backends.rrt).addresses),
                                  delegation=CassandraDelegationStore(backends.session, backends.users.contains),
                                  auth_throttle=backends.auth_throttle,
                                  max_header_bytes=config.max_header_bytes, max_headers=config.max_headers,
                                  docs=config.docs)
        app = create_app(context)
        self.http = UvicornThread(uvicorn.Server(uvicorn_config(app, config, log_config=None, access_log=False)),
                                  "webadmin")


def webadmin_checks(backends: Backends, lifecycle: ApplicationLifecycle | None) -> list[HealthCheck]:
    """What ``/healthcheck`` runs: the lifecycle first, then the backends and the queue and event-bus checks."""
    first = [LifecycleHealthCheck(lifecycle)] if lifecycle is not None else []
    return [*first, *backends.health_checks, LoopStallHealthCheck(WATCHDOG)]
