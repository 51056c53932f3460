"""Dead letters in James's tables on a real Cassandra."""

from __future__ import annotations

import pytest

from mailserver.events.cassandra_dead_letters import CassandraEventDeadLetters
from tests.contract.event_dead_letters_contract import EventDeadLettersContract, group
from tests.support.events import sample_added

pytestmark = pytest.mark.integration


class TestCassandraEventDeadLetters(EventDeadLettersContract):
    @pytest.fixture
    def dead_letters(self, cassandra):
        return CassandraEventDeadLetters(cassandra)


def test_rows_are_james_rows(cassandra):
    g, event = group(), sample_added()

    insertion_id = CassandraEventDeadLetters(cassandra).store(g, event)

    row = cassandra.one('SELECT event FROM event_dead_letters WHERE "group" = ? AND insertionId = ?', (g, insertion_id))
    assert row is not None and '"Added"' in row["event"]
    assert cassandra.one('SELECT "group" FROM group_table WHERE "group" = ?', (g,)) is not None
