"""Maintenance mode in ``/metrics``: on/off and since when (seconds since the epoch, 0 when off)."""

from __future__ import annotations

import math
import warnings
from datetime import UTC, datetime

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from prometheus_client.parser import text_string_to_metric_families

from mailserver.maintenance.api import MaintenanceState
from mailserver.observability.metrics import Metrics
from mailserver.webadmin.app import create_app
from tests.unit.webadmin.webadmin_support import FULL, make_context

SINCE = "maintenance_mode_since_timestamp_seconds"
ENABLED = "maintenance_mode_enabled"


def scrape(client: TestClient) -> dict[str, float]:
    return {s.name: s.value for family in text_string_to_metric_families(client.get("/metrics").text)
            for s in family.samples}


def test_since_follows_the_switch():
    client = TestClient(create_app(make_context()), headers={"Password": FULL})
    before = scrape(client)
    assert (before[ENABLED], before[SINCE]) == (0.0, 0.0)

    state = client.put("/maintenance", json={"reason": "repair"}).json()
    since = datetime.fromisoformat(state["since"].replace("Z", "+00:00"))
    during = scrape(client)
    assert during[ENABLED] == 1.0
    assert during[SINCE] == since.timestamp()

    # Enabling again keeps the original time: the gauge tells how long maintenance has lasted.
    client.put("/maintenance", json={"reason": "still repairing"})
    assert scrape(client)[SINCE] == since.timestamp()

    client.delete("/maintenance")
    after = scrape(client)
    assert (after[ENABLED], after[SINCE]) == (0.0, 0.0)


def test_since_reads_the_state_at_scrape_time():
    state = MaintenanceState(True, datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC))
    metrics = Metrics()
    metrics.track_maintenance(lambda: state)
    assert metrics.registry.get_sample_value(SINCE) == state.since.timestamp()   # type: ignore[union-attr]
    state = MaintenanceState(True, None)   # switched on by hand, no time recorded: unknown, not 1970
    assert math.isnan(metrics.registry.get_sample_value(SINCE))
    state = MaintenanceState.off()
    assert metrics.registry.get_sample_value(SINCE) == 0.0
