"""The event-bus port: dispatch events to listener groups (James's group listeners)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from mailserver.model.events import MailboxEvent


class EventListener(ABC):
    """A group listener. ``group`` names its durable queue on a distributed bus."""

    group: str = ""

    @abstractmethod
    def handle(self, event: MailboxEvent) -> None: ...

    def accepts(self, event: MailboxEvent) -> bool:
        return True


@dataclass(frozen=True)
class DeadLetter:
    group: str
    event: MailboxEvent
    error: str


class EventBus(ABC):
    @abstractmethod
    def register(self, listener: EventListener) -> None: ...

    @abstractmethod
    def dispatch(self, *events: MailboxEvent) -> None: ...
