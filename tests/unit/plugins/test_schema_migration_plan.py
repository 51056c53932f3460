"""What a run of the Cassandra schema migration DAG does: mode, transitions, slice range, bump rules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from mailplatform.schema_migration import (
    SLICE,
    UPGRADE,
    PlanError,
    denormalization_complete,
    plan,
    run_mode,
    slice_range,
)

from mailserver.cassandra.versions import DEFAULT_VERSION

AVAILABLE = (11, 12, 13, 14, 15)
JAN, FEB = datetime(2023, 1, 1, tzinfo=UTC), datetime(2023, 2, 1, tzinfo=UTC)


@pytest.mark.parametrize(("requested", "run_type", "mode"), [
    ("auto", "backfill", SLICE), ("auto", "scheduled", SLICE), ("auto", "manual", UPGRADE),
    ("auto", "asset_triggered", UPGRADE), ("slice", "manual", SLICE), ("upgrade", "backfill", UPGRADE),
])
def test_auto_mode_follows_the_run_type(requested, run_type, mode):
    assert run_mode(requested, run_type) == mode


def test_an_unknown_mode_is_refused():
    with pytest.raises(PlanError, match="unknown mode"):
        run_mode("everything", "manual")


def test_upgrade_runs_each_transition_from_current_plus_one_to_the_target():
    p = plan(UPGRADE, 10, None, AVAILABLE)
    assert (p.transitions, p.target) == ((11, 12, 13, 14, 15), 15)
    assert p.denormalization_needed and not p.slice_needed
    p = plan(UPGRADE, 12, 14, AVAILABLE)
    assert (p.transitions, p.denormalization_needed) == ((13, 14), False)


def test_nothing_to_do_at_or_above_the_target():
    assert plan(UPGRADE, 15, None, AVAILABLE).transitions == ()
    assert plan(UPGRADE, 14, 12, AVAILABLE).transitions == ()


def test_a_target_outside_the_supported_range_or_without_migration_is_refused_up_front():
    with pytest.raises(PlanError, match="outside the supported range"):
        plan(UPGRADE, 10, 16, AVAILABLE)
    with pytest.raises(PlanError, match=r"No migration to version\(s\) \[13\]"):
        plan(UPGRADE, 10, 14, (11, 12, 14))


def test_a_slice_covers_the_data_interval_and_is_needed_only_below_11():
    p = plan(SLICE, 10, None, AVAILABLE, interval=(JAN, FEB))
    assert (p.internal_date_from, p.internal_date_to) == (JAN.isoformat(), FEB.isoformat())
    assert p.slice_needed and not p.denormalization_needed and p.transitions == ()
    assert not plan(SLICE, 11, None, AVAILABLE, interval=(JAN, FEB)).slice_needed


def test_explicit_dates_override_the_data_interval():
    assert slice_range(JAN, FEB, "2022-06-01T00:00:00+02:00", None) == ("2022-05-31T22:00:00+00:00", FEB.isoformat())


def test_a_slice_needs_a_non_empty_range():
    with pytest.raises(PlanError, match="needs an internal-date range"):
        plan(SLICE, 10, None, AVAILABLE)
    with pytest.raises(PlanError, match="empty internal-date range"):
        slice_range(FEB, JAN)


def test_the_bump_to_11_needs_a_complete_run_over_every_date():
    done = {"outcome": "COMPLETED", "remaining": {}, "runningOptions": {"internalDateFrom": None}}
    assert denormalization_complete(done) is None
    assert "slice only" in denormalization_complete(
        {**done, "runningOptions": {"internalDateFrom": JAN.isoformat(), "internalDateTo": FEB.isoformat()}})
    assert "PARTIAL" in denormalization_complete({**done, "outcome": "PARTIAL"})
    assert "DRY_RUN" in denormalization_complete({**done, "outcome": "DRY_RUN"})
    assert "remain" in denormalization_complete({**done, "remaining": {"incompleteImapUidEntry": 1}})


def test_a_keyspace_without_version_rows_is_planned_from_james_default_12():
    p = plan(UPGRADE, DEFAULT_VERSION, None, AVAILABLE)

    assert p.transitions == (13, 14, 15)
    assert not p.denormalization_needed
    assert not plan(SLICE, DEFAULT_VERSION, None, AVAILABLE, interval=(JAN, FEB)).slice_needed
