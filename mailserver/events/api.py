"""The event-bus port: dispatch events to listener groups and to key listeners (as James's bus).

A group listener runs once per event in the whole cluster (on one node). A key listener runs on
every node where it is registered for one of the event's registration keys (``registration_keys``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from mailserver.events.registration_keys import RegistrationKey
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

    def key_delivery_changed(self) -> None:
        """On a key listener: the bus's key delivery stopped or started again (``key_delivery_epoch``
        changed), so events may have been lost. Called on a bus thread; by default nothing."""
        return None


class Registration(ABC):
    @abstractmethod
    def unregister(self) -> None:
        """Stop delivering to the listener; the key is unbound once its last listener left."""


class EventBus(ABC):
    @abstractmethod
    def register(self, listener: EventListener) -> None: ...

    @abstractmethod
    def register_key(self, listener: EventListener, key: RegistrationKey) -> Registration:
        """Deliver to ``listener`` every event dispatched with ``key``, from any node, until unregistered.

        Key listeners run synchronously on the dispatching node and are called once per event;
        their ``group`` is not used. A failure is logged, never retried nor dead-lettered.
        """

    def key_delivery_live(self) -> bool:
        """Whether events dispatched by other processes reach this bus's key listeners right now.

        False tells a caller that needs every change (IMAP IDLE) to fall back on polling.
        """
        return False

    def key_delivery_epoch(self) -> int | None:
        """Which unbroken stretch of key delivery this is: None while ``key_delivery_live`` is False,
        a new value after every reconnection (events dispatched meanwhile are lost to key listeners).

        A caller that keeps state from key events (the IMAP selected mailbox) reads storage again
        when the value it saw at registration changed.
        """
        return None

    @abstractmethod
    def dispatch(self, *events: MailboxEvent) -> None: ...

    @abstractmethod
    def dispatch_to_keys(self, *events: MailboxEvent) -> None:
        """Deliver to the key listeners of each event's keys, on every node, and to no group.

        For events only connections listen to (JMAP's state changes): nothing is queued for a group
        nobody runs. Best effort, as key delivery: a failure is logged.
        """

    @abstractmethod
    def redeliver(self, group: str, event_json: str) -> None:
        """Deliver a dead letter again: to its group, or to every group for the dispatching-failure group."""
