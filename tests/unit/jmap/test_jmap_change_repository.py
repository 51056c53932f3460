"""The change-log contract on the memory adapter, and the time-based states."""

from __future__ import annotations

from mailserver.jmap.changes.model import new_state, order_key
from mailserver.jmap.changes.repository import ChangeRepository, MemoryChangeRepository
from tests.support.change_repository_contract import ChangeRepositoryContract


class TestMemoryChangeRepository(ChangeRepositoryContract):
    def repository(self, table: str) -> ChangeRepository:
        return MemoryChangeRepository(table)


def test_states_are_time_based_uuids_in_increasing_order():
    states = [new_state() for _ in range(50)]
    assert all(s.version == 1 for s in states)
    assert [order_key(s) for s in states] == sorted(order_key(s) for s in states)
    assert len(set(states)) == 50
