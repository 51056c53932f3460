"""Registration keys route as James's (``RoutingKeyConverter``, ``MailboxIdRegistrationKey``)."""

from __future__ import annotations

import pytest

from mailserver.events.key_listeners import LocalKeyListeners
from mailserver.events.registration_keys import RegistrationKey, keys_of, mailbox_key
from mailserver.model.events import MessageMoveEvent
from mailserver.model.ids import MailboxId, MessageId
from tests.support.events import Recording, sample_added

MAILBOX = "7f3a1c1e-3b9e-11ef-9a66-1d2a3c4b5e6f"   # Cassandra ids are time-based UUIDs


def test_a_mailbox_key_routes_as_james_simple_class_name_colon_serialized_id():
    key = mailbox_key(MailboxId.of(MAILBOX))

    assert key.routing_key == f"MailboxIdRegistrationKey:{MAILBOX}"
    assert RegistrationKey.from_routing_key(key.routing_key) == key


def test_a_routing_key_without_separator_is_refused():
    with pytest.raises(ValueError, match="KeyClass:value"):
        RegistrationKey.from_routing_key("")


def test_a_mailbox_event_is_dispatched_with_its_mailbox_key():
    event = sample_added()

    assert keys_of(event) == [mailbox_key(event.mailbox_id)]


def test_a_move_is_dispatched_with_every_mailbox_it_touches_once():
    source, target = MailboxId.generate(), MailboxId.generate()
    added = sample_added()
    move = MessageMoveEvent(event_id=added.event_id, user=added.user, message_ids=(MessageId.generate(),),
                            previous_mailbox_ids=(source, target), target_mailbox_ids=(target,))

    assert keys_of(move) == [mailbox_key(source), mailbox_key(target)]


def test_local_listeners_are_counted_per_key():
    listeners = LocalKeyListeners()
    key = mailbox_key(MailboxId.of(MAILBOX))
    first, second = Recording(""), Recording("")

    assert listeners.add(key, first) is True       # bind
    assert listeners.add(key, second) is False
    assert listeners.remove(key, first) is False
    assert listeners.remove(key, first) is False   # already gone: no second unbind
    assert listeners.remove(key, second) is True   # unbind
    assert listeners.keys() == []

