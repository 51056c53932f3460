"""Behaviour every event bus must give (in-process and RabbitMQ).

Subclasses provide ``make_bus`` (a factory taking the dead letters store, returning a bus that
is not yet consuming), ``start`` (begin delivering to the registered listeners) and
``max_retries`` (retries before a dead letter). Delivery may be asynchronous, so every
assertion on what a listener saw waits with ``eventually``.
"""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from mailserver.events.dead_letters import MemoryEventDeadLetters
from mailserver.events.registration_keys import mailbox_key
from mailserver.model.events import serialize_event
from tests.support.events import Recording, eventually, sample_added


def group(name: str) -> str:
    return f"org.apache.james.test.{name}{uuid.uuid4().hex[:8]}${name}Group"


class EventBusContract:
    max_retries = 2

    @pytest.fixture
    def dead_letters(self):
        return MemoryEventDeadLetters()

    @pytest.fixture
    def make_bus(self):
        raise NotImplementedError

    def start(self, bus) -> None:
        """Begin consuming (nothing to do for a synchronous bus)."""

    def test_every_group_gets_each_event_once(self, make_bus, dead_letters):
        bus = make_bus(dead_letters)
        first, second = Recording(group("First")), Recording(group("Second"))
        bus.register(first)
        bus.register(second)
        self.start(bus)
        events = [sample_added(uid=i) for i in range(1, 6)]

        bus.dispatch(*events)

        ids = sorted(str(e.event_id) for e in events)
        for listener in (first, second):
            eventually(lambda listener=listener: len(listener.handled) >= len(events))
            assert sorted(str(e.event_id) for e in listener.handled) == ids
        assert not dead_letters.contain_events()

    def test_a_listener_sees_the_event_as_dispatched(self, make_bus, dead_letters):
        bus = make_bus(dead_letters)
        listener = Recording(group("Exact"))
        bus.register(listener)
        self.start(bus)
        event = sample_added()

        bus.dispatch(event)

        eventually(lambda: listener.handled)
        assert serialize_event(listener.handled[0]) == serialize_event(event)

    def test_a_transient_failure_is_retried_without_dead_letter(self, make_bus, dead_letters):
        bus = make_bus(dead_letters)
        flaky = Recording(group("Flaky"), fail_times=self.max_retries)   # succeeds on the last retry
        bus.register(flaky)
        self.start(bus)
        event = sample_added()

        bus.dispatch(event)

        eventually(lambda: flaky.handled)
        assert flaky.attempts[event.event_id] == self.max_retries + 1
        assert not dead_letters.contain_events()

    def test_a_group_failing_every_retry_ends_in_its_dead_letters_and_others_still_run(self, make_bus,
                                                                                         dead_letters):
        bus = make_bus(dead_letters)
        broken, healthy = Recording(group("Broken"), fail_times=10**6), Recording(group("Healthy"))
        bus.register(broken)
        bus.register(healthy)
        self.start(bus)
        event = sample_added()

        bus.dispatch(event)

        eventually(lambda: dead_letters.insertion_ids(broken.group))
        letters = list(dead_letters.letters(broken.group))
        assert [letter.event().event_id for letter in letters] == [event.event_id]
        assert broken.attempts[event.event_id] == self.max_retries + 1
        assert [e.event_id for e in healthy.handled] == [event.event_id]
        assert dead_letters.insertion_ids(healthy.group) == []

    def test_redelivering_a_dead_letter_reaches_its_group_only(self, make_bus, dead_letters):
        bus = make_bus(dead_letters)
        target, other = Recording(group("Target")), Recording(group("Other"))
        bus.register(target)
        bus.register(other)
        self.start(bus)
        event = sample_added()

        bus.redeliver(target.group, serialize_event(event))

        eventually(lambda: target.handled)
        assert [e.event_id for e in target.handled] == [event.event_id]
        assert other.handled == []

    def test_redelivering_a_dispatch_failure_reaches_every_group(self, make_bus, dead_letters):
        bus = make_bus(dead_letters)
        first, second = Recording(group("A")), Recording(group("B"))
        bus.register(first)
        bus.register(second)
        self.start(bus)
        event = sample_added()

        bus.redeliver(bus.names.dispatching_failure_group, serialize_event(event))

        eventually(lambda: first.handled and second.handled)
        assert [e.event_id for e in first.handled] == [e.event_id for e in second.handled] == [event.event_id]

    def test_a_group_registers_once(self, make_bus, dead_letters):
        bus = make_bus(dead_letters)
        bus.register(Recording("org.apache.james.test.Same$SameGroup"))

        with pytest.raises(ValueError, match="already registered"):
            bus.register(Recording("org.apache.james.test.Same$SameGroup"))

    # -- key listeners (James's registrations) -----------------------------------------------------
    def test_a_key_listener_gets_the_events_of_its_mailbox_only(self, make_bus, dead_letters):
        bus = make_bus(dead_letters)
        mine, other = sample_added(), sample_added()
        listener = Recording("")
        registration = bus.register_key(listener, mailbox_key(mine.mailbox_id))
        try:
            bus.dispatch(other, mine)

            eventually(lambda: listener.handled)
            assert [e.event_id for e in listener.handled] == [mine.event_id]
        finally:
            registration.unregister()

    def test_an_unregistered_key_listener_gets_nothing_more(self, make_bus, dead_letters):
        bus = make_bus(dead_letters)
        first, second = sample_added(), sample_added()
        listener = Recording("")
        key = mailbox_key(first.mailbox_id)
        registration = bus.register_key(listener, key)
        bus.dispatch(first)
        eventually(lambda: listener.handled)
        registration.unregister()
        registration.unregister()   # a second unregister does nothing

        bus.dispatch(dataclasses.replace(second, mailbox_id=first.mailbox_id))

        assert [e.event_id for e in listener.handled] == [first.event_id]

    def test_a_key_stays_registered_while_one_of_its_listeners_remains(self, make_bus, dead_letters):
        bus = make_bus(dead_letters)
        event = sample_added()
        key = mailbox_key(event.mailbox_id)
        leaving, staying = Recording(""), Recording("")
        bus.register_key(leaving, key).unregister()
        registration = bus.register_key(staying, key)
        bus.register_key(leaving, key).unregister()
        try:
            bus.dispatch(event)

            eventually(lambda: staying.handled)
            assert [e.event_id for e in staying.handled] == [event.event_id]
            assert leaving.handled == []
        finally:
            registration.unregister()

    def test_a_failing_key_listener_neither_stops_the_others_nor_is_dead_lettered(self, make_bus, dead_letters):
        bus = make_bus(dead_letters)
        event = sample_added()
        key = mailbox_key(event.mailbox_id)
        broken, healthy = Recording("", fail_times=10**6), Recording("")
        registrations = [bus.register_key(broken, key), bus.register_key(healthy, key)]
        try:
            bus.dispatch(event)

            eventually(lambda: healthy.handled)
            assert broken.attempts[event.event_id] == 1
            assert not dead_letters.contain_events()
        finally:
            for registration in registrations:
                registration.unregister()
