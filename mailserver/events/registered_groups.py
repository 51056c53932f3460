"""Registered groups as RabbitMQ shows them, and their divergence from the required groups.

Read through the management API (James reads queue lists the same way): a group is *registered*
when its work queue is bound to its retry exchange; a queue of a group that is not required is
an *orphan* (unbound at the last start, kept with its messages for the operator).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

from mailserver.events.naming import BusNames
from mailserver.observability.health import HealthCheck, Result
from mailserver.rabbitmq_management import RabbitMQManagement

EVENT_BUS_GROUPS = "RabbitMQEventBusGroups"   # ours: James has no divergence check (ADR 0026 not implemented)


@dataclass(frozen=True)
class GroupQueue:
    group: str
    messages: int
    consumers: int


@dataclass(frozen=True)
class GroupsState:
    required: frozenset[str]
    registered: frozenset[str]            # bound to their retry exchange
    queues: tuple[GroupQueue, ...]        # every group work queue that exists

    @property
    def run_elsewhere(self) -> list[str]:
        """Bound and consumed, yet not required: run by nodes that do not write the aggregate (James's).

        Not a divergence: unbinding such a group would send its retries nowhere, and its queue is
        not an orphan."""
        consumed = {q.group for q in self.queues if q.consumers}
        return sorted((self.registered & consumed) - self.required)

    @property
    def missing(self) -> list[str]:
        """Required but not bound: their retries go nowhere."""
        return sorted(self.required - self.registered)

    @property
    def unexpected(self) -> list[str]:
        """Bound but not required (nor run by another node)."""
        return sorted(self.registered - self.required - set(self.run_elsewhere))

    @property
    def orphans(self) -> list[GroupQueue]:
        """Queues of groups no node requires (whatever their binding), but those run elsewhere."""
        elsewhere = set(self.run_elsewhere)
        return [q for q in self.queues if q.group not in self.required and q.group not in elsewhere]

    @property
    def diverges(self) -> bool:
        return bool(self.missing or self.unexpected or self.orphans)

    def describe(self) -> str:
        parts = []
        if self.missing:
            parts.append(f"required but not registered: {', '.join(self.missing)}")
        if self.unexpected:
            parts.append(f"registered but not required: {', '.join(self.unexpected)}")
        if self.orphans:
            parts.append("queues of groups no longer required: "
                         + ", ".join(f"{q.group} ({q.messages} messages)" for q in self.orphans))
        return "; ".join(parts) or "registered groups equal required groups"


class RegisteredGroups:
    def __init__(self, management: RabbitMQManagement, names: BusNames | None = None) -> None:
        self.management = management
        self.names = names or BusNames()

    def bound(self) -> frozenset[str]:
        """Groups whose work queue is bound to their retry exchange (James binds it when it registers one)."""
        vhost = urllib.parse.quote(self.management.vhost, safe="")
        registered = set()
        for binding in self.management.get(f"/api/bindings/{vhost}"):
            group = self.names.group_of_retry_exchange(binding.get("source", ""))
            if (group is not None and binding.get("destination_type") == "queue"
                    and binding.get("destination") == self.names.work_queue(group)):
                registered.add(group)
        return frozenset(registered)

    def state(self, required: frozenset[str]) -> GroupsState:
        vhost = urllib.parse.quote(self.management.vhost, safe="")
        registered = self.bound()
        queues = []
        for row in self.management.get(f"/api/queues/{vhost}?columns=name,messages,consumers"):
            group = self.names.group_of_work_queue(row["name"])
            if group is not None:
                queues.append(GroupQueue(group, int(row.get("messages") or 0), int(row.get("consumers") or 0)))
        return GroupsState(required, registered, tuple(sorted(queues, key=lambda q: q.group)))


class EventBusGroupsHealthCheck(HealthCheck):
    """Degraded, naming the groups, while registered and required groups diverge."""

    name = EVENT_BUS_GROUPS

    def __init__(self, registered: RegisteredGroups, required: Callable[[], frozenset[str]]) -> None:
        self.registered = registered
        self.required = required

    def check(self) -> Result:
        state = self.registered.state(self.required())
        return self.degraded(state.describe()) if state.diverges else self.healthy()
