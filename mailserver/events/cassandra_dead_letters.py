"""Event dead letters in Cassandra, in James's tables (``event_dead_letters``, ``group_table``).

``event_dead_letters`` has ``gc_grace_seconds = 0``: redelivery deletes rows in bulk and the
tombstones must not pile up. Insertion ids are time-based UUIDs so a group lists oldest first.
"""

from __future__ import annotations

import uuid

from mailserver.cassandra.session import CassandraSession
from mailserver.events.dead_letters import DeadLetter, EventDeadLetters


class CassandraEventDeadLetters(EventDeadLetters):
    def __init__(self, session: CassandraSession) -> None:
        self.session = session

    def store_json(self, group: str, event_json: str) -> uuid.UUID:
        if not group:
            raise ValueError("a dead letter needs a group")
        insertion_id = uuid.uuid1()
        # The event first: a group row without events is harmless, an event without its group is
        # invisible to the listing.
        self.session.execute('INSERT INTO event_dead_letters ("group", insertionId, event) VALUES (?, ?, ?)',
                             (group, insertion_id, event_json))
        self.session.execute('INSERT INTO group_table ("group") VALUES (?)', (group,))
        return insertion_id

    def get(self, group: str, insertion_id: uuid.UUID) -> DeadLetter | None:
        row = self.session.one('SELECT event FROM event_dead_letters WHERE "group" = ? AND insertionId = ?',
                               (group, insertion_id))
        return None if row is None else DeadLetter(group, insertion_id, row["event"])

    def insertion_ids(self, group: str) -> list[uuid.UUID]:
        rows = self.session.execute('SELECT insertionId FROM event_dead_letters WHERE "group" = ?', (group,))
        ids = [row["insertionid"] for row in rows]
        return sorted(ids, key=lambda u: u.time if u.version == 1 else 0)

    def groups(self) -> list[str]:
        return sorted(row["group"] for row in self.session.execute('SELECT "group" FROM group_table'))

    def remove(self, group: str, insertion_id: uuid.UUID) -> None:
        self.session.execute('DELETE FROM event_dead_letters WHERE "group" = ? AND insertionId = ?',
                             (group, insertion_id))

    def remove_group(self, group: str) -> None:
        self.session.execute('DELETE FROM event_dead_letters WHERE "group" = ?', (group,))
        self.session.execute('DELETE FROM group_table WHERE "group" = ?', (group,))

    def contain_events(self) -> bool:
        # As James: one read over the whole table, cheap whatever the number of groups or events.
        return self.session.one("SELECT event FROM event_dead_letters LIMIT 1") is not None
