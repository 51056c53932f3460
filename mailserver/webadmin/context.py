"""What a WebAdmin instance is built from: the ports it administers, its checks and its auth."""

from __future__ import annotations

from dataclasses import dataclass, field

from mailserver.domains.api import DomainList
from mailserver.maintenance.api import MaintenanceStore
from mailserver.maintenance.guard import MaintenanceGuard
from mailserver.observability.health import DEFAULT_TIMEOUT, HealthCheck
from mailserver.observability.metrics import Metrics
from mailserver.rrt.api import RecipientRewriteTable
from mailserver.users.api import UsersRepository
from mailserver.webadmin.auth import AuthConfig


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

    def __post_init__(self) -> None:
        if self.guard is None:
            self.guard = MaintenanceGuard(self.maintenance)
        if self.metrics is None:
            self.metrics = Metrics()
