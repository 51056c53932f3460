from __future__ import annotations

import json

import pytest

from mailserver.eventsourcing.api import Event
from mailserver.eventsourcing.cassandra import CassandraEventStore
from tests.contract.event_store_contract import EventStoreContract, aggregate

pytestmark = pytest.mark.integration


class TestCassandraEventStore(EventStoreContract):
    @pytest.fixture
    def event_store(self, cassandra) -> CassandraEventStore:
        return CassandraEventStore(cassandra)


def test_rows_have_james_shape(cassandra):
    store = CassandraEventStore(cassandra)
    agg = aggregate()
    store.append_all(agg, [Event(agg, 0, "a", {"x": 1}), Event(agg, 1, "s", {"state": 1}, snapshot=True)], None)

    rows = cassandra.execute("SELECT eventId, event, snapshot FROM eventStore WHERE aggregateId = ?", (agg,))

    assert [(r["eventid"], r["snapshot"]) for r in rows] == [(0, 1), (1, 1)]
    assert json.loads(rows[0]["event"]) == {"type": "a", "eventId": 0, "aggregateId": agg, "x": 1}


def test_a_failed_write_appends_nothing(cassandra, faults):
    store = CassandraEventStore(cassandra)
    agg = aggregate()
    faults.fail("eventStore", kind="INSERT")

    with pytest.raises(RuntimeError):
        store.append(Event(agg, 0, "a"), None)

    assert store.get_history(agg).version is None
