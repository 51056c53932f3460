"""Key listeners are told when the bus's key delivery stops or starts again (events may be lost)."""

from __future__ import annotations

from mailserver.events.api import EventListener
from mailserver.events.key_listeners import LocalKeyListeners
from mailserver.events.registration_keys import mailbox_key
from mailserver.model.events import MailboxEvent
from mailserver.model.ids import MailboxId


class Told(EventListener):
    def __init__(self, fails: bool = False) -> None:
        self.fails = fails
        self.changes = 0

    def handle(self, event: MailboxEvent) -> None:
        pass

    def key_delivery_changed(self) -> None:
        self.changes += 1
        if self.fails:
            raise RuntimeError("listener bug")


def test_every_listener_is_told_once_whatever_its_keys_and_despite_a_failing_one():
    listeners = LocalKeyListeners()
    on_two_keys, failing, gone = Told(), Told(fails=True), Told()
    listeners.add(mailbox_key(MailboxId.generate()), on_two_keys)
    listeners.add(mailbox_key(MailboxId.generate()), on_two_keys)
    listeners.add(mailbox_key(MailboxId.generate()), failing)
    key = mailbox_key(MailboxId.generate())
    listeners.add(key, gone)
    listeners.remove(key, gone)

    listeners.delivery_changed()

    assert (on_two_keys.changes, failing.changes, gone.changes) == (1, 1, 0)

