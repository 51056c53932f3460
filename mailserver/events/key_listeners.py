"""This process's key listeners, counted per key (James's ``LocalListenerRegistry``).

The broker binding of a key is made when its first listener registers and removed when its last
one leaves: ``add`` and ``remove`` say which case applies so the bus binds or unbinds only then.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from mailserver.events.api import EventListener, Registration
from mailserver.events.registration_keys import RegistrationKey
from mailserver.model.events import MailboxEvent

log = logging.getLogger(__name__)


class LocalKeyListeners:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[RegistrationKey, list[EventListener]] = {}

    def add(self, key: RegistrationKey, listener: EventListener) -> bool:
        """Register; True when it is the key's first listener (the key must be bound)."""
        with self._lock:
            listeners = self._by_key.setdefault(key, [])
            listeners.append(listener)
            return len(listeners) == 1

    def remove(self, key: RegistrationKey, listener: EventListener) -> bool:
        """Unregister (once); True when it was the key's last listener (the key must be unbound)."""
        with self._lock:
            listeners = self._by_key.get(key)
            if listeners is None or listener not in listeners:
                return False
            listeners.remove(listener)
            if listeners:
                return False
            del self._by_key[key]
            return True

    def listeners(self, key: RegistrationKey) -> list[EventListener]:
        with self._lock:
            return list(self._by_key.get(key, ()))

    def keys(self) -> list[RegistrationKey]:
        with self._lock:
            return list(self._by_key)

    def delivery_changed(self) -> None:
        """Tell every listener that key delivery stopped or started again (once each, whatever its keys)."""
        with self._lock:
            everyone = {id(listener): listener for listeners in self._by_key.values() for listener in listeners}
        for listener in everyone.values():
            try:
                listener.key_delivery_changed()
            except Exception:  # one listener's bug must not keep the notice from the others
                log.exception("key listener %s failed on a key delivery change", type(listener).__name__)

    def run(self, key: RegistrationKey, event: MailboxEvent) -> None:
        """Call the key's listeners; a failure is logged, never retried (as James's key listeners)."""
        for listener in self.listeners(key):
            if not listener.accepts(event):
                continue
            try:
                listener.handle(event)
            except Exception:  # one listener's bug must not keep the event from the others
                log.exception("key listener %s failed on %s %s (key %s)", type(listener).__name__,
                              event.type_name, event.event_id, key.routing_key)


class KeyRegistration(Registration):
    """Undoes one ``register_key``; a second ``unregister`` does nothing."""

    def __init__(self, on_unregister: Callable[[], object]) -> None:
        self._on_unregister: Callable[[], object] | None = on_unregister
        self._lock = threading.Lock()

    def unregister(self) -> None:
        with self._lock:
            action, self._on_unregister = self._on_unregister, None
        if action is not None:
            action()
