"""The event-bus port: dispatch events to listener groups (James's group listeners)."""

from __future__ import annotations

from abc import ABC, abstractmethod

from mailserver.model.events import MailboxEvent


class EventBusError(Exception):
    """An event could neither be delivered nor kept: the caller must treat its operation as failed."""


class EventListener(ABC):
    """A group listener. ``group`` names its durable queue on a distributed bus (James's class name)."""

    group: str = ""

    @abstractmethod
    def handle(self, event: MailboxEvent) -> None: ...

    def accepts(self, event: MailboxEvent) -> bool:
        return True


class EventBus(ABC):
    @abstractmethod
    def register(self, listener: EventListener) -> None: ...

    @abstractmethod
    def dispatch(self, *events: MailboxEvent) -> None: ...

    @abstractmethod
    def redeliver(self, group: str, event_json: str) -> None:
        """Deliver a dead letter again: to its group, or to every group for the dispatching-failure group."""
