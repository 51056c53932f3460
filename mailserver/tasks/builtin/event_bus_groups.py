"""``event-bus-groups-reset`` (ours, ADR 0026; James has none): make RabbitMQ's groups the required ones.

Reads the registered groups from the management API, binds the required groups that are not
(their retries went nowhere) and unbinds the registered groups no node requires. Queues are
never deleted: the orphan queues (groups no longer required) are reported with their depth so
the operator can drain or redeliver what they hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mailserver.events.naming import BusNames
from mailserver.events.registered_groups import GroupQueue, GroupsState, RegisteredGroups
from mailserver.events.required_groups import GroupChange, RequiredGroups
from mailserver.events.topology import BusTopology
from mailserver.settings import RabbitMQSettings
from mailserver.tasks.api import Result, Task
from mailserver.tasks.registry import TaskRegistry

GROUPS_RESET = "event-bus-groups-reset"
MANAGEMENT_URL = "RABBITMQ_MANAGEMENT_URL"


def registered_groups_from_env(env: Mapping[str, str], amqp_url: str, names: BusNames) -> RegisteredGroups | None:
    """The reader of RabbitMQ's groups, as ``runtime.backends`` builds it; None without a management URL."""
    from mailserver.rabbitmq_management import RabbitMQManagement

    url = RabbitMQSettings.from_env(env).management_url
    return RegisteredGroups(RabbitMQManagement(url, amqp_url), names) if url else None


def queue_json(queue: GroupQueue, names: BusNames) -> dict[str, Any]:
    return {"group": queue.group, "queue": names.work_queue(queue.group), "messages": queue.messages,
            "consumers": queue.consumers}


def state_json(state: GroupsState, names: BusNames) -> dict[str, Any]:
    return {"required": sorted(state.required), "registered": sorted(state.registered),
            "missing": state.missing, "unexpected": state.unexpected,
            "orphanQueues": [queue_json(q, names) for q in state.orphans], "diverges": state.diverges}


def change_json(change: GroupChange) -> dict[str, str]:
    return {"type": change.type, "group": change.group, "host": change.host, "date": change.date}


class EventBusGroupsResetTask(Task):
    type = GROUPS_RESET

    def __init__(self, required: RequiredGroups, registered: RegisteredGroups, topology: BusTopology) -> None:
        self.required = required
        self.registered = registered
        self.topology = topology
        self.bound: list[str] = []
        self.unbound: list[str] = []
        self.orphans: list[dict[str, Any]] = []

    def run(self) -> Result:
        state = self.registered.state(self.required.current())
        if state.missing:
            self.topology.bind_groups(state.missing)
            self.bound = state.missing
        if state.unexpected:
            self.topology.unbind_groups(state.unexpected)
            self.unbound = state.unexpected
        # Read once more: the orphans as they are now, unbound ones included, with their depth.
        after = self.registered.state(self.required.current())
        self.orphans = [queue_json(q, self.registered.names) for q in after.orphans]
        return Result.COMPLETED

    def additional_information(self) -> dict[str, Any]:
        return {"boundGroups": list(self.bound), "unboundGroups": list(self.unbound),
                "orphanQueues": list(self.orphans)}


def register(registry: TaskRegistry, required: RequiredGroups, registered: RegisteredGroups,
             topology: BusTopology) -> None:
    registry.register(GROUPS_RESET, lambda _: EventBusGroupsResetTask(required, registered, topology))
