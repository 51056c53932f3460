"""Behaviour every event store must give (memory and Cassandra).

Subclasses provide the ``event_store`` fixture. Aggregate ids are random, so a shared keyspace is fine.
"""

from __future__ import annotations

import threading
import uuid

import pytest

from mailserver.eventsourcing.aggregate import CommandHandler, NewEvent, TooManyRetries
from mailserver.eventsourcing.api import Event, EventStore, EventStoreConflict, History


def aggregate() -> str:
    return f"Test/{uuid.uuid4()}"


class EventStoreContract:
    @pytest.fixture
    def event_store(self) -> EventStore:
        raise NotImplementedError

    def test_unknown_aggregate_has_an_empty_history(self, event_store):
        history = event_store.get_history(aggregate())

        assert history == History((), None)
        assert history.next_event_id == 0

    def test_single_event_round_trips_with_its_payload(self, event_store):
        agg = aggregate()
        event = Event(agg, 0, "task-manager-created", {"task": {"type": "x", "n": 3}, "hostname": "node-1"})

        event_store.append(event, None)

        assert event_store.get_history(agg) == History((event,), 0)

    def test_several_events_are_appended_in_order(self, event_store):
        agg = aggregate()
        first = [Event(agg, 0, "created"), Event(agg, 1, "started", {"at": "now"})]
        event_store.append_all(agg, first, None)
        more = [Event(agg, 2, "updated", {"k": 1}), Event(agg, 3, "updated", {"k": 2}), Event(agg, 4, "completed")]

        event_store.append_all(agg, more, 1)

        history = event_store.get_history(agg)
        assert history.events == (*first, *more)
        assert history.version == 4

    def test_appending_nothing_is_a_no_op(self, event_store):
        agg = aggregate()

        event_store.append_all(agg, [], None)

        assert event_store.get_history(agg).version is None

    def test_stale_expected_version_is_a_conflict(self, event_store):
        agg = aggregate()
        event_store.append(Event(agg, 0, "created"), None)

        with pytest.raises(EventStoreConflict):
            event_store.append(Event(agg, 0, "created-again"), None)
        with pytest.raises(EventStoreConflict):
            event_store.append_all(agg, [Event(agg, 0, "a"), Event(agg, 1, "b")], None)

        assert [e.type for e in event_store.get_history(agg).events] == ["created"]

    def test_a_conflicting_batch_appends_nothing(self, event_store):
        agg = aggregate()
        event_store.append_all(agg, [Event(agg, 0, "a"), Event(agg, 1, "b")], None)
        # Another writer took id 1: ids 0..2 of this batch must not partly land.
        with pytest.raises(EventStoreConflict):
            event_store.append_all(agg, [Event(agg, 1, "x"), Event(agg, 2, "y")], 0)

        assert [e.type for e in event_store.get_history(agg).events] == ["a", "b"]

    def test_events_must_follow_the_expected_version(self, event_store):
        agg = aggregate()
        with pytest.raises(ValueError):
            event_store.append_all(agg, [Event(agg, 1, "gap")], None)
        with pytest.raises(ValueError):
            event_store.append_all(agg, [Event(aggregate(), 0, "other aggregate")], None)

    def test_history_starts_at_the_latest_snapshot(self, event_store):
        agg = aggregate()
        event_store.append_all(agg, [Event(agg, 0, "a"), Event(agg, 1, "b")], None)
        snap = Event(agg, 2, "snapshot", {"state": ["a", "b"]}, snapshot=True)
        event_store.append_all(agg, [snap, Event(agg, 3, "c")], 1)
        event_store.append(Event(agg, 4, "d"), 3)

        history = event_store.get_history(agg)

        assert [e.event_id for e in history.events] == [2, 3, 4]
        assert history.events[0] == snap
        assert history.version == 4

    def test_two_writers_with_the_same_expected_version_exactly_one_wins(self, event_store):
        agg = aggregate()
        event_store.append(Event(agg, 0, "created"), None)
        barrier = threading.Barrier(2)
        outcomes: dict[str, str] = {}

        def writer(name: str, size: int) -> None:
            events = [Event(agg, 1 + i, f"{name}-{i}") for i in range(size)]
            barrier.wait()
            try:
                event_store.append_all(agg, events, 0)
                outcomes[name] = "won"
            except EventStoreConflict:
                outcomes[name] = "lost"

        threads = [threading.Thread(target=writer, args=("w1", 1)), threading.Thread(target=writer, args=("w2", 2))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)

        assert sorted(outcomes.values()) == ["lost", "won"]
        winner = next(name for name, outcome in outcomes.items() if outcome == "won")
        types = [e.type for e in event_store.get_history(agg).events]
        assert types[0] == "created"
        assert all(t.startswith(winner) for t in types[1:]) and len(types) > 1

    def test_removed_aggregate_has_no_history(self, event_store):
        agg = aggregate()
        event_store.append(Event(agg, 0, "created"), None)

        event_store.remove(agg)

        assert event_store.get_history(agg).version is None

    def test_command_handler_retries_on_conflict_until_its_decision_lands(self, event_store):
        agg = aggregate()
        counter = CommandHandler(event_store, lambda history, n: [NewEvent("incremented", {"by": n})])
        threads = [threading.Thread(target=counter.handle, args=(agg, n)) for n in range(1, 5)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)

        history = event_store.get_history(agg)
        assert [e.event_id for e in history.events] == [0, 1, 2, 3]
        assert sorted(e.payload["by"] for e in history.events) == [1, 2, 3, 4]

    def test_command_handler_gives_up_after_its_retries(self, event_store):
        agg = aggregate()

        def always_raced(history: History, _command: None) -> list[NewEvent]:
            # A concurrent writer lands between every read and append.
            event_store.append(Event(agg, history.next_event_id, "racer"), history.version)
            return [NewEvent("mine")]

        with pytest.raises(TooManyRetries):
            CommandHandler(event_store, always_raced, max_retries=2).handle(agg, None)
        assert {e.type for e in event_store.get_history(agg).events} == {"racer"}
