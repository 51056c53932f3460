"""``MaintenanceMode``: degraded while maintenance mode is on (ours; James has no maintenance switch).

It lives with the switch, not in ``observability``: observability is a lower layer that knows no
maintenance store; WebAdmin registers this check in its health registry.
"""

from __future__ import annotations

from mailserver.maintenance.guard import MaintenanceGuard
from mailserver.observability.checks import MAINTENANCE
from mailserver.observability.health import HealthCheck, Result


class MaintenanceHealthCheck(HealthCheck):
    """Degraded while maintenance mode is on, so dashboards show it and strict probes fail."""

    name = MAINTENANCE

    def __init__(self, guard: MaintenanceGuard) -> None:
        self.guard = guard

    def check(self) -> Result:
        state = self.guard.state()
        if not state.enabled:
            return self.healthy()
        since = state.since.isoformat() if state.since else "an unknown time"
        cause = f"maintenance mode on since {since}"
        if state.updated_by:
            cause += f" (by {state.updated_by})"
        if state.reason:
            cause += f": {state.reason}"
        return self.degraded(cause)
