"""Event store on James's ``eventStore`` table (PK aggregateId, CK eventId, static snapshot, event JSON).

Appends are lightweight transactions, as in James: one event is an ``INSERT ... IF NOT EXISTS``;
several events (or a snapshot) are a LOGGED batch of conditional inserts in the aggregate's
partition, which Cassandra applies all-or-nothing. "Not applied" means another writer took one of
the event ids first: a conflict. Histories are read at SERIAL so an in-flight append is settled first.
"""

from __future__ import annotations

from collections.abc import Sequence

from cassandra.query import BatchStatement, BatchType

from mailserver.cassandra.session import CassandraSession
from mailserver.eventsourcing.api import (
    DEFAULT_JSON,
    Event,
    EventJson,
    EventStore,
    EventStoreConflict,
    History,
    check_append,
)

INSERT = "INSERT INTO eventStore (aggregateId, eventId, event) VALUES (?, ?, ?) IF NOT EXISTS"
SET_SNAPSHOT = "UPDATE eventStore SET snapshot = ? WHERE aggregateId = ?"
SELECT_SNAPSHOT = "SELECT snapshot FROM eventStore WHERE aggregateId = ? LIMIT 1"
SELECT_ALL = "SELECT eventId, event, snapshot FROM eventStore WHERE aggregateId = ?"
SELECT_FROM = "SELECT eventId, event, snapshot FROM eventStore WHERE aggregateId = ? AND eventId >= ?"
DELETE = "DELETE FROM eventStore WHERE aggregateId = ?"


class CassandraEventStore(EventStore):
    def __init__(self, session: CassandraSession, json: EventJson = DEFAULT_JSON) -> None:
        self.s = session
        self.json = json

    def append_all(self, aggregate_id: str, events: Sequence[Event], expected_version: int | None) -> None:
        if not events:
            return
        check_append(aggregate_id, events, expected_version)
        if len(events) == 1 and not events[0].snapshot:
            event = events[0]
            applied = self.s.execute_lwt(INSERT, (aggregate_id, event.event_id, self.json.dumps(event)))
        else:
            applied = self._append_batch(aggregate_id, events)
        if not applied:
            raise EventStoreConflict(aggregate_id, expected_version)

    def _append_batch(self, aggregate_id: str, events: Sequence[Event]) -> bool:
        batch = BatchStatement(batch_type=BatchType.LOGGED)
        for event in events:
            self.s.faults.check(INSERT)
            batch.add(self.s.prepare(INSERT), (aggregate_id, event.event_id, self.json.dumps(event)))
        snapshots = [e.event_id for e in events if e.snapshot]
        if snapshots:
            # Same partition, same batch: the snapshot pointer moves only if every insert applies.
            self.s.faults.check(SET_SNAPSHOT)
            batch.add(self.s.prepare(SET_SNAPSHOT), (snapshots[-1], aggregate_id))
        rows = list(self.s.session.execute(batch))
        return bool(rows and rows[0].get("[applied]"))

    def get_history(self, aggregate_id: str) -> History:
        head = self.s.one(SELECT_SNAPSHOT, (aggregate_id,), strong=True)
        snapshot = head["snapshot"] if head else None
        if snapshot is None:
            rows = self.s.execute(SELECT_ALL, (aggregate_id,), strong=True)
        else:
            rows = self.s.execute(SELECT_FROM, (aggregate_id, snapshot), strong=True)
        # Rows carry the static column too: a snapshot appended between both reads is still flagged.
        return History.of([self.json.loads(aggregate_id, r["eventid"], r["event"],
                                            snapshot=r["eventid"] == r["snapshot"])
                           for r in rows if r["eventid"] is not None])

    def remove(self, aggregate_id: str) -> None:
        self.s.execute(DELETE, (aggregate_id,))
