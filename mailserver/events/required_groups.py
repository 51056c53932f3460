"""Required groups of the event bus, an event-sourced aggregate (ADR 0026, seed 001/004).

A *required* group is one some node runs (its listener is configured); a *registered* group is
one whose queue exists and is bound in RabbitMQ. Each node, when it starts consuming, submits
``RequireGroups`` with the groups it runs: the aggregate records ``RequiredGroupAdded`` and
``RequiredGroupRemoved`` with the host and date of the change (the audit), and the node then
binds the added groups and unbinds the removed ones, never deleting a queue. As the ADR says of
a non-uniform cluster, the latest node to start decides.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from mailserver.eventsourcing.aggregate import CommandHandler, NewEvent
from mailserver.eventsourcing.api import Event, EventStore, History

AGGREGATE_ID = "RequiredGroups-mailboxEvent"


def aggregate_id(bus: str = "mailboxEvent", vhost: str = "/") -> str:
    """One aggregate per bus: its name, and the broker's virtual host when it is not the default one
    (two buses sharing a keyspace on separate virtual hosts have separate groups)."""
    return f"RequiredGroups-{bus}" if vhost == "/" else f"RequiredGroups-{bus}@{vhost}"
ADDED = "RequiredGroupAdded"
REMOVED = "RequiredGroupRemoved"


@dataclass(frozen=True)
class RequireGroups:
    groups: frozenset[str]
    host: str = field(default_factory=socket.gethostname)
    date: datetime = field(default_factory=lambda: datetime.now(UTC))

    @classmethod
    def of(cls, groups: Iterable[str], host: str | None = None) -> RequireGroups:
        return cls(frozenset(groups), host or socket.gethostname())


@dataclass(frozen=True)
class GroupChange:
    type: str          # RequiredGroupAdded / RequiredGroupRemoved
    group: str
    host: str
    date: str          # ISO-8601, UTC

    @classmethod
    def of(cls, event: Event) -> GroupChange:
        return cls(event.type, str(event.payload["group"]), str(event.payload.get("host", "")),
                   str(event.payload.get("date", "")))


def required(history: History | Sequence[Event]) -> frozenset[str]:
    """The required groups after a history (events in order)."""
    events = history.events if isinstance(history, History) else history
    groups: set[str] = set()
    for event in events:
        if event.type == ADDED:
            groups.add(str(event.payload["group"]))
        elif event.type == REMOVED:
            groups.discard(str(event.payload["group"]))
    return frozenset(groups)


def decide(history: History, command: RequireGroups) -> list[NewEvent]:
    current = required(history)
    stamp = {"host": command.host, "date": command.date.isoformat().replace("+00:00", "Z")}
    return ([NewEvent(ADDED, {"group": g, **stamp}) for g in sorted(command.groups - current)]
            + [NewEvent(REMOVED, {"group": g, **stamp}) for g in sorted(current - command.groups)])


class RequiredGroups:
    """The aggregate's command side and its two read models (current set, audit trail)."""

    def __init__(self, store: EventStore, aggregate_id: str = AGGREGATE_ID) -> None:
        self.store = store
        self.aggregate_id = aggregate_id
        self.handler: CommandHandler[RequireGroups] = CommandHandler(store, decide)

    def require(self, command: RequireGroups) -> list[GroupChange]:
        """Record the groups a node starts with; the changes this made (none when nothing changed)."""
        return [GroupChange.of(e) for e in self.handler.handle(self.aggregate_id, command)]

    def current(self) -> frozenset[str]:
        return required(self.store.get_history(self.aggregate_id))

    def audit(self) -> list[GroupChange]:
        return [GroupChange.of(e) for e in self.store.get_history(self.aggregate_id).events]
