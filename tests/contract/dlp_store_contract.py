"""Behaviour of ``DlpConfigurationStore`` on every event store adapter (memory and Cassandra).

Subclasses provide the ``events`` fixture (an ``EventStore``); each test uses its own domain.
"""

from __future__ import annotations

import uuid

import pytest

from mailserver.dlp.store import ADDED, REMOVED, DlpConfigurationStore, DlpRule, DuplicateRuleIds, aggregate_id
from mailserver.eventsourcing.api import EventStore

JAMES = DlpRule("1", "james.org", "Find senders or recipients containing james[any char]org", True, True, False)
APACHE = DlpRule("2", "apache.org", "Find senders containing apache[any char]org", True, False, False)


def domain() -> str:
    return f"{uuid.uuid4().hex[:12]}.test"


class DlpStoreContract:
    def test_stored_rules_are_listed_and_fetched(self, events: EventStore):
        store, sender = DlpConfigurationStore(events), domain()
        store.store(sender, [JAMES, APACHE])
        assert store.list(sender) == [JAMES, APACHE]
        assert store.fetch(sender, "2") == APACHE
        assert store.fetch(sender, "3") is None

    def test_storing_replaces_with_james_s_events(self, events: EventStore):
        store, sender = DlpConfigurationStore(events), domain()
        store.store(sender, [JAMES, APACHE])
        store.store(sender, [APACHE])
        assert store.list(sender) == [APACHE]
        history = events.get_history(aggregate_id(sender))
        assert [e.type for e in history.events] == [ADDED, REMOVED]
        assert history.events[1].payload == {"configurationItems": [JAMES.as_item()]}

    def test_storing_the_same_rules_writes_nothing(self, events: EventStore):
        store, sender = DlpConfigurationStore(events), domain()
        store.store(sender, [JAMES])
        store.store(sender, [JAMES])
        assert len(events.get_history(aggregate_id(sender)).events) == 1

    def test_clear_removes_every_rule(self, events: EventStore):
        store, sender = DlpConfigurationStore(events), domain()
        store.store(sender, [JAMES, APACHE])
        store.clear(sender)
        assert store.list(sender) == []

    def test_duplicate_ids_are_refused(self, events: EventStore):
        store, sender = DlpConfigurationStore(events), domain()
        with pytest.raises(DuplicateRuleIds):
            store.store(sender, [JAMES, DlpRule("1", "other")])
        assert store.list(sender) == []
