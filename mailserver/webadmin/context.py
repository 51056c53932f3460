"""What a WebAdmin instance is built from: the ports it administers, its checks and its auth."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mailserver.dlp.store import DlpConfigurationStore
from mailserver.domains.api import DomainList
from mailserver.droplist.api import DropList
from mailserver.identities.repository import IdentityRepository
from mailserver.maintenance.api import MaintenanceStore
from mailserver.maintenance.guard import MaintenanceGuard
from mailserver.observability.health import DEFAULT_TIMEOUT, HealthCheck
from mailserver.observability.metrics import Metrics
from mailserver.rrt.api import RecipientRewriteTable
from mailserver.security.auth_throttle import AuthThrottle
from mailserver.serving.connections import ConnectionRegistry
from mailserver.sieve.quota import SieveQuotas
from mailserver.users.api import UsersRepository
from mailserver.users.delegation import DelegationStore
from mailserver.vacation.api import VacationRepository
from mailserver.webadmin.auth import AuthConfig
from mailserver.webadmin.header_limits import DEFAULT_MAX_HEADER_BYTES, DEFAULT_MAX_HEADERS

if TYPE_CHECKING:   # type hints only: the context stays importable without the optional packages
    from mailserver.airflow.api import DagRuns
    from mailserver.events.api import EventBus
    from mailserver.events.dead_letters import EventDeadLetters
    from mailserver.events.registered_groups import RegisteredGroups
    from mailserver.events.required_groups import RequiredGroups
    from mailserver.events.topology import BusTopology
    from mailserver.jmap.uploads import UploadRepository
    from mailserver.mailbox.manager import MailboxManager
    from mailserver.mailbox.subscriptions import SubscriptionStore
    from mailserver.queue.api import MailQueueFactory
    from mailserver.queue.content import MimeMessageStore
    from mailserver.repository.api import MailRepositoryStore
    from mailserver.tasks.builtin.migration import SchemaVersions
    from mailserver.tasks.builtin.user_data import UserDataParts
    from mailserver.tasks.builtin.vault import VaultParts
    from mailserver.tasks.manager import TaskManager


@dataclass
class WebAdminContext:
    domains: DomainList
    users: UsersRepository
    rrt: RecipientRewriteTable
    maintenance: MaintenanceStore
    auth: AuthConfig
    health_checks: list[HealthCheck] = field(default_factory=list)
    health_timeout: float = DEFAULT_TIMEOUT
    # Shared with the rest of the process when given, so writers and WebAdmin see one cache.
    guard: MaintenanceGuard | None = None
    metrics: Metrics | None = None
    # Optional administered parts: each set of routes is served only when its collaborator is given.
    queues: MailQueueFactory | None = None              # /mailQueues, and the target of reprocessing
    repositories: MailRepositoryStore | None = None     # /mailRepositories
    contents: MimeMessageStore | None = None            # reads blob-backed mails (.eml, headers, bodies)
    tasks: TaskManager | None = None                    # /tasks and every task-creating route
    schema_versions: SchemaVersions | None = None       # /cassandra/version
    # Airflow, where the maintenance procedures run; None: their routes answer 503 (not configured).
    dag_runs: DagRuns | None = None
    # The event bus; None: /events/deadLetter and /events/groups answer 503 (not configured).
    dead_letters: EventDeadLetters | None = None        # /events/deadLetter
    bus: EventBus | None = None                         # redelivery of dead letters
    required_groups: RequiredGroups | None = None       # /events/groups: what the nodes run
    registered_groups: RegisteredGroups | None = None   # /events/groups: what RabbitMQ has (management API)
    topology: BusTopology | None = None                 # the groups reset binds and unbinds through it
    # The mailboxes: /users/{u}/mailboxes and /quota (limits in its quota store); not served without it.
    mailboxes: MailboxManager | None = None
    subscriptions: SubscriptionStore | None = None      # ?task=subscribeAll on /users/{u}/mailboxes
    connections: ConnectionRegistry | None = None       # /servers/channels, /servers/connectedUsers
    droplist: DropList | None = None                    # /droplist
    sieve_quotas: SieveQuotas | None = None             # /sieve/quota
    delegation: DelegationStore | None = None           # /users/{u}/authorizedUsers (405 without it, as James)
    vacations: VacationRepository | None = None         # /vacation/{u}
    identities: IdentityRepository | None = None        # /users/{u}/identities
    dlp: DlpConfigurationStore | None = None            # /dlp/rules
    vault: VaultParts | None = None                     # /deletedMessages (503 without it or without tasks)
    uploads: UploadRepository | None = None             # DELETE /jmap/uploads (with tasks)
    # Request heads: 431 past these (server.ServerConfig reads them from the environment).
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    max_headers: int = DEFAULT_MAX_HEADERS
    docs: bool = True                                   # /docs (Swagger UI, assets served from the package)
    # Authentication failures delay, then refuse (429), their address; None: not throttled. ``serve``
    # shares the process's throttle with IMAP and SMTP.
    auth_throttle: AuthThrottle | None = None

    def user_data_parts(self) -> UserDataParts:
        """The stores ``?action=deleteData`` walks (the worker nodes build the same from their backends)."""
        from mailserver.tasks.builtin.user_data import UserDataParts

        return UserDataParts(self.users, self.rrt, self.mailboxes, self.subscriptions, self.delegation,
                             self.identities.store if self.identities is not None else None, self.vacations)

    def __post_init__(self) -> None:
        if self.guard is None:
            self.guard = MaintenanceGuard(self.maintenance)
        if self.metrics is None:
            self.metrics = Metrics()
