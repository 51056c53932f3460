"""The application lifecycle and its health check (James's ``Guice application lifecycle``).

James answers healthy once the server finished starting. ``mailserver serve`` starts the roles
it was asked for one after another (any subset of ``tasks``, ``webadmin``, ``spooler``,
``outgoing``, ``smtp``, in that order), so the lifecycle knows which roles were asked for and is
told as each one starts:

* unhealthy while starting (a role asked for has not started yet) -- the WebAdmin role starts
  before the spooler, the outgoing workers and SMTP, so a probe can see this state;
* healthy once every role asked for has started and is still running;
* unhealthy when a started role died (its threads ended: the process is up but does not do its
  job, which James's check cannot see) and once the server is stopping.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Sequence

from mailserver.observability.checks import LIFECYCLE
from mailserver.observability.health import HealthCheck, Result

log = logging.getLogger(__name__)

NOT_STARTED = "James server is not started."   # James's cause, kept so probes and searches match


class Phase(enum.Enum):
    STARTING = "starting"
    STARTED = "started"
    STOPPING = "stopping"


class ApplicationLifecycle:
    def __init__(self, roles: Sequence[str]) -> None:
        self.expected = tuple(roles)
        self._lock = threading.Lock()
        self._alive: dict[str, Callable[[], bool]] = {}
        self._stopping = False

    def role_started(self, name: str, alive: Callable[[], bool]) -> None:
        """``alive`` answers, cheaply and without blocking, whether the role still runs."""
        if name not in self.expected:
            raise ValueError(f"role {name!r} was not configured ({', '.join(self.expected)})")
        with self._lock:
            self._alive[name] = alive

    def stopping(self) -> None:
        with self._lock:
            self._stopping = True

    @property
    def phase(self) -> Phase:
        with self._lock:
            if self._stopping:
                return Phase.STOPPING
            return Phase.STARTED if all(r in self._alive for r in self.expected) else Phase.STARTING

    def missing(self) -> list[str]:
        """Roles asked for that have not started yet, in start order."""
        with self._lock:
            return [r for r in self.expected if r not in self._alive]

    def dead(self) -> list[str]:
        """Started roles that no longer run (a probe that raises counts as dead)."""
        with self._lock:
            probes = list(self._alive.items())
        dead = []
        for name, alive in probes:
            try:
                running = alive()
            except Exception:
                log.warning("liveness probe of role %s failed", name, exc_info=True)
                running = False
            if not running:
                dead.append(name)
        return dead


class LifecycleHealthCheck(HealthCheck):
    name = LIFECYCLE

    def __init__(self, lifecycle: ApplicationLifecycle) -> None:
        self.lifecycle = lifecycle

    def check(self) -> Result:
        phase = self.lifecycle.phase
        if phase is Phase.STOPPING:
            return self.unhealthy("the server is stopping")
        if phase is Phase.STARTING:
            return self.unhealthy(f"{NOT_STARTED} Waiting for role(s): {', '.join(self.lifecycle.missing())}")
        dead = self.lifecycle.dead()
        if dead:
            return self.unhealthy(f"role(s) no longer running: {', '.join(dead)}")
        return self.healthy()
