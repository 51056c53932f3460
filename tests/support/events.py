"""Mailbox events for event-bus tests, and listeners that record, fail or block on purpose."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from mailserver.events.api import EventListener
from mailserver.model.address import Username
from mailserver.model.events import Added, MailboxEvent
from mailserver.model.flags import Flags
from mailserver.model.ids import MailboxId, MessageId, ThreadId
from mailserver.model.mailbox import MailboxPath
from mailserver.model.message import MessageMetadata


def sample_added(user: str = "bob@example.org", uid: int = 1) -> Added:
    username = Username(user)
    mailbox_id, message_id = MailboxId.generate(), MessageId.generate()
    metadata = MessageMetadata(mailbox_id=mailbox_id, message_id=message_id, uid=uid, mod_seq=uid, flags=Flags(),
                               thread_id=ThreadId(message_id.value),
                               internal_date=datetime(2026, 1, 1, 10, 0, tzinfo=UTC), save_date=None,
                               body_start_octet=0, size=42, header_blob_id="")
    return Added(user=username, session_id=3, path=MailboxPath.inbox(username), mailbox_id=mailbox_id,
                 added=(metadata,), is_delivery=True)


class Recording(EventListener):
    """Records the ids of the events it handled; ``fail_times`` first attempts per event raise."""

    def __init__(self, group: str, fail_times: int = 0) -> None:
        self.group = group
        self.fail_times = fail_times
        self.handled: list[MailboxEvent] = []
        self.attempts: dict[object, int] = {}
        self._lock = threading.Lock()

    def handle(self, event: MailboxEvent) -> None:
        with self._lock:
            self.attempts[event.event_id] = self.attempts.get(event.event_id, 0) + 1
            if self.attempts[event.event_id] <= self.fail_times:
                raise RuntimeError(f"planned failure {self.attempts[event.event_id]} of {self.group}")
            self.handled.append(event)


def eventually(condition: Callable[[], object], timeout: float = 30.0, interval: float = 0.05) -> None:
    """Wait until ``condition()`` is true; fail with what it last returned."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return
        time.sleep(interval)
    raise AssertionError(f"condition still false after {timeout}s (last value: {last!r})")
