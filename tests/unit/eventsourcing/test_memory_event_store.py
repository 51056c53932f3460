from __future__ import annotations

import pytest

from mailserver.eventsourcing.api import Event
from mailserver.eventsourcing.memory import MemoryEventStore
from tests.contract.event_store_contract import EventStoreContract


class TestMemoryEventStore(EventStoreContract):
    @pytest.fixture
    def event_store(self) -> MemoryEventStore:
        return MemoryEventStore()


def test_event_json_is_flat_with_type_and_event_id():
    event = Event("Task/1", 3, "task-manager-completed", {"result": "COMPLETED"})

    assert event.to_json() == ('{"type":"task-manager-completed","eventId":3,"aggregateId":"Task/1",'
                               '"result":"COMPLETED"}')
    assert Event.from_json("Task/1", 3, event.to_json()) == event


def test_james_dto_fields_stay_in_the_payload_and_row_ids_win():
    text = '{"type":"acl-updated","eventId":7,"aggregateId":"other","acl":{"entries":{}}}'

    event = Event.from_json("mailbox-1", 2, text)

    assert (event.aggregate_id, event.event_id, event.type) == ("mailbox-1", 2, "acl-updated")
    assert event.payload == {"acl": {"entries": {}}}


def test_payload_cannot_shadow_reserved_keys():
    with pytest.raises(ValueError):
        Event("a", 0, "t", {"type": "other"})
