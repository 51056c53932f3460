"""The ``report`` task every Spark procedure ends with: the job's report, read back from S3.

It runs once the job ran, failed or not (``trigger_rule="all_done"``), and fails at once, saying
why, when the job never ran (``job_outcome.py``). Otherwise it reads the job's JSON report
(``<run key>/<report type>.json``), prints the procedure's own lines, puts the summary on the run
as a Markdown note (``run_notes.py``; the detect/repair summary of ``progress.summary_block``, so
only for jobs whose report has that shape), and returns James's counters as XCom. A run that did not
COMPLETE (nor was a dry run) fails the task; its summary is pushed first, so a failed run still
shows its counters and failure lists (WebAdmin's task view, James's ``reIndexFailedMessagesOf``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from airflow.sdk import task
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from mailplatform.run_identity import run_key

TASK_ID = "report"
OK_OUTCOMES = ("COMPLETED", "DRY_RUN")
SUMMARY_EXCLUDES = ("fixedInconsistencies", "errors", "detectedItems", "unresolvedItems")
# The report's name: fixed, or chosen by the run's params (a job whose task type depends on its scope).
ReportType = str | Callable[[Mapping[str, Any]], str]


def summarize(report: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k not in SUMMARY_EXCLUDES}


def check_report(report: Mapping[str, Any]) -> dict[str, Any]:
    """The XCom summary of a report; raises when the run did not converge."""
    summary = summarize(report)
    if report.get("outcome") not in OK_OUTCOMES:
        raise AirflowException(
            f"{report.get('type')} ended {report.get('outcome')}: {report.get('unresolved', 0)} unresolved, "
            f"{len(report.get('errors', []))} failed items (first ones: {report.get('errors', [])[:5]}); "
            "failed items are listed in the report and are fixed by running the DAG again")
    return summary


def report_task(report_type: ReportType, job_task_id: str, *,
                lines: Callable[[Mapping[str, Any]], list[str]] = lambda report: [],
                retry_unreadable: bool = True, run_note: bool = True) -> Any:
    """The ``report`` task of a procedure whose Spark task is ``job_task_id`` (call it inside the DAG).

    ``lines``: what the procedure prints of its report. ``retry_unreadable``: an unreadable report
    fails the try (the object store may answer the retry) rather than the task at once. ``run_note``:
    the report has the detect/repair shape (``detected``, ``fixedInconsistencies``, ``errors``)."""

    @task(task_id=TASK_ID, trigger_rule="all_done")   # after the job, failed or not (see the docstring)
    def report(**context: Any) -> dict[str, Any]:
        from mailplatform.hooks.reports import MaintenanceReportHook
        from mailplatform.job_outcome import fail_when_job_never_ran
        from mailplatform.run_notes import push_run_note, report_note
        from spark_apps.common.reports import ReportLocation

        fail_when_job_never_ran(context, job_task_id)
        name = report_type(context["params"]) if callable(report_type) else report_type
        try:
            content = MaintenanceReportHook().read(name, run_key(context))
        except Exception as exc:
            failure = AirflowException if retry_unreadable else AirflowFailException
            raise failure(f"no report for this run ({exc}): the Spark job failed before the end, "
                          f"see the {job_task_id} log") from exc
        for line in lines(content):
            print(line)
        if run_note:
            push_run_note(context, report_note(content, ReportLocation.for_run(name, run_key(context)).uri))
        if content.get("outcome") not in OK_OUTCOMES:
            context["ti"].xcom_push(key="return_value", value=summarize(content))
        return check_report(content)

    return report()
