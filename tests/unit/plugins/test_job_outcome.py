"""The ``report`` leaf of a job that never ran says why: the refusal of ``check_params``, else the first failure."""

from __future__ import annotations

from mailplatform.job_outcome import never_ran_cause

ORDER = ["check_params", "backends_healthy", "detect_repair_verify", "report"]


def test_a_job_that_ran_has_no_cause_whether_it_succeeded_or_failed():
    for state in ("success", "failed"):
        assert never_ran_cause({"detect_repair_verify": state}, "detect_repair_verify", None, ORDER) is None


def test_a_refused_run_repeats_the_refusal():
    states = {"check_params": "failed", "backends_healthy": "upstream_failed",
              "detect_repair_verify": "upstream_failed"}
    cause = never_ran_cause(states, "detect_repair_verify", "param slices: 0 is below the minimum of 1", ORDER)
    assert cause == "refused by check_params, nothing ran: param slices: 0 is below the minimum of 1"


def test_a_failed_gate_is_named_first_in_the_dag_order():
    states = {"check_params": "success", "backends_healthy": "failed", "detect_repair_verify": "upstream_failed"}
    assert never_ran_cause(states, "detect_repair_verify", None, ORDER) == (
        "detect_repair_verify never ran: backends_healthy failed first, see its log")


def test_a_job_left_unrun_for_another_reason_still_fails_the_report():
    cause = never_ran_cause({"detect_repair_verify": "skipped"}, "detect_repair_verify", None, ORDER)
    assert cause is not None and "skipped" in cause
