"""Behaviour every event dead letters store must give (memory and Cassandra).

Subclasses provide ``dead_letters``. Group names are random, so a shared keyspace is fine, but
``contain_events`` is only asserted true (another test may hold dead letters in the same table).
"""

from __future__ import annotations

import uuid

import pytest

from mailserver.events.dead_letters import EventDeadLetters
from tests.support.events import sample_added


def group() -> str:
    return f"org.apache.james.test.Listener{uuid.uuid4().hex}$Group"


class EventDeadLettersContract:
    @pytest.fixture
    def dead_letters(self) -> EventDeadLetters:
        raise NotImplementedError

    def test_a_stored_event_reads_back_equal(self, dead_letters):
        g, event = group(), sample_added()

        insertion_id = dead_letters.store(g, event)

        letter = dead_letters.get(g, insertion_id)
        assert letter is not None and letter.event() == event
        assert dead_letters.insertion_ids(g) == [insertion_id]
        assert g in dead_letters.groups()
        assert dead_letters.contain_events()

    def test_insertion_ids_list_oldest_first(self, dead_letters):
        g = group()
        ids = [dead_letters.store(g, sample_added()) for _ in range(5)]

        assert dead_letters.insertion_ids(g) == ids
        assert [letter.insertion_id for letter in dead_letters.letters(g)] == ids

    def test_unknown_ids_and_groups_read_as_nothing(self, dead_letters):
        assert dead_letters.get(group(), uuid.uuid1()) is None
        assert dead_letters.insertion_ids(group()) == []

    def test_remove_one_keeps_the_others_and_is_idempotent(self, dead_letters):
        g = group()
        first, second = dead_letters.store(g, sample_added()), dead_letters.store(g, sample_added())

        dead_letters.remove(g, first)
        dead_letters.remove(g, first)

        assert dead_letters.insertion_ids(g) == [second]

    def test_remove_group_forgets_its_events_and_the_group_only(self, dead_letters):
        g, other = group(), group()
        dead_letters.store(g, sample_added())
        kept = dead_letters.store(other, sample_added())

        dead_letters.remove_group(g)

        assert dead_letters.insertion_ids(g) == []
        assert g not in dead_letters.groups()
        assert dead_letters.insertion_ids(other) == [kept]

    def test_raw_json_of_an_unknown_event_type_is_kept_as_is(self, dead_letters):
        g, text = group(), '{"SomeFutureEvent":{"eventId":"6e0dd59d-660e-4d9b-b22f-0354479f47b4","user":"bob"}}'

        insertion_id = dead_letters.store_json(g, text)

        letter = dead_letters.get(g, insertion_id)
        assert letter is not None and letter.event_json == text

    def test_a_group_is_required(self, dead_letters):
        with pytest.raises(ValueError, match="group"):
            dead_letters.store("", sample_added())
