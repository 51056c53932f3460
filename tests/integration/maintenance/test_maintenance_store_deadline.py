"""The Cassandra maintenance store: a window with a deadline ends by itself (Cassandra TTL)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mailserver.maintenance.cassandra import CassandraMaintenanceStore
from tests.support.events import eventually

pytestmark = pytest.mark.integration


def test_a_window_with_a_deadline_is_gone_once_it_passes_and_one_without_stays(cassandra):
    store = CassandraMaintenanceStore(cassandra)
    on = store.enable("repair", "airflow", timedelta(seconds=2))
    read = store.get()
    assert (read.enabled, read.reason, read.since) == (True, "repair", on.since)
    assert read.expires_at is not None and abs(read.expires_at - on.expires_at) <= timedelta(seconds=1)

    # No process switches it off: the row's TTL does (deadline of 2 s, waited for at most 30 s).
    eventually(lambda: store.get().enabled is False, timeout=30)

    store.enable("by hand", "ops", timedelta(seconds=1))
    manual = store.enable("by hand", "ops")   # a later switch without a deadline clears the TTL
    assert manual.expires_at is None and store.get().expires_at is None
    store.disable("ops")
