"""Cassandra schema migration: to the latest or a given version, the 10 -> 11 step by date slices."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import DAG, Param, XComArg, chain, task
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException
from mailplatform.dag_defaults import dag_arguments
from mailplatform.health_gate import gated_start
from mailplatform.job_report import check_report
from mailplatform.operators.spark_job import SparkJobOperator
from mailplatform.param_checks import ParamError, form_params
from mailplatform.procedure_dag import CASSANDRA_POOL
from mailplatform.procedures import COMMON_PARAMS, common_args
from mailplatform.schema_migration import DENORMALIZATION_JOB, DENORMALIZED_VERSION, MODES
from mailplatform.timetables import BackfillOnlyTimetable

from mailserver.cassandra.versions import LATEST, MIN_VERSION

DAG_ID = "cassandra_schema_migration"
SMALL_TRANSITIONS = tuple(range(DENORMALIZED_VERSION + 1, LATEST + 1))
# The first month a backfill may start from is the caller's choice (CLI --from-date); start_date only
# anchors the monthly schedule. Configurable for deployments that prefer another anchor.
START_DATE = datetime.fromisoformat(os.environ.get("CASSANDRA_MIGRATION_START_DATE", "2015-01-01")).replace(tzinfo=UTC)

DOC = f"""
### Updating the Cassandra schema version

**Why.** The schema version says which schema the mail servers rely on. When it is behind, old
data shapes are still in the keyspace (for instance `messageIdTable` rows without the message
metadata, or quotas still in the legacy tables) and the servers must keep reading them: you miss
the performance and safety improvements of the newer shape. New tables are created at start-up
without asking; migrating the data into them and bumping the version is this DAG's job.

**When.** The start-up check logs a warning `Current schema version is X. Recommended version is
{LATEST}` (James: `CassandraSchemaVersionStartUpCheck ... Recommended version is versionX`), or
`GET /cassandra/version` is below `GET /cassandra/version/latest`. Apply the upgrade instructions
of the release first (manual `ALTER TABLE` statements for new columns): migrations never alter tables.

**What it does, one migration at a time.** Each transition from the current version + 1 to the
target (`target_version`, empty = latest, {LATEST}) runs its migration, and the version is bumped
only when that migration COMPLETED. A partial migration fails its task (`to_N`), the version stays,
the log says what failed: fix it and trigger the DAG again (every migration is idempotent, a
transition already reached is skipped).

* **10 -> 11** (message denormalization, data-heavy): a Spark job fills the metadata missing from
  `messageIdTable` / `imapUidTable` rows from `messageV3`, only the null columns, with conditional
  updates. It can run **by internal-date range as an Airflow backfill** (one run per month of the
  schedule, each migrating the messages received in its data interval); slices never bump the
  version. The upgrade run then runs the job over **every** date (`denormalize_all`: whatever the
  slices did not cover is done now) and bumps to 11 (`to_11`) only if it completed with nothing left.
* **11 -> 12 .. 14 -> 15** (attachment owners, current quotas, max quotas, sieve quotas): small,
  run by the mail server's own migrations (`to_12` .. `to_15`).

**Modes** (`mode`): `auto` (default) = backfill and scheduled runs migrate their data interval,
manual runs upgrade; `slice` = migrate one internal-date range (the data interval, or
`internal_date_from`/`internal_date_to`); `upgrade` = the transitions above.

**Which keyspace** (`cassandra_conn_id`): the `cassandra_default` connection names the cluster and
the keyspace (its schema field). A deployment with several keyspaces defines one connection per
keyspace and passes its id, also in a backfill's `--dag-run-conf`, so every run of the backfill
migrates the same keyspace.

**Steps for the operator.**
1. Check the versions: `GET /cassandra/version` and `/cassandra/version/latest` (WebAdmin).
2. Small keyspace: trigger this DAG (manual run, `mode` auto) and you are done.
3. Large keyspace at version 10: migrate by month first, with traffic on, throttled by `rate`.
   Unpause the DAG (backfill runs of a paused DAG wait; unpausing starts nothing by itself: the
   DAG's timetable only serves backfills, it is never scheduled), then from the CLI:
   `airflow backfill create --dag-id {DAG_ID} --from-date 2023-01-01 --to-date 2023-12-01
   --max-active-runs 1` (one run per month whose start is in the range; add `--dry-run` to list the
   months first, `--reprocess-behavior failed` to redo only the failed months, `--dag-run-conf
   '{{"rate": 200}}'` to throttle). In the UI: the DAG's **Trigger** button, **Backfill** tab, pick the
   date range, "Missing Runs", max active runs 1, and the params. Runs share the `{CASSANDRA_POOL}`
   pool (one slot), so they never write Cassandra concurrently with another repair. Each run's
   report (`processed`, `fixed_message_id`, `fixed_imap_uid`, `errors`) is in S3 and in the XCom
   of `slice_report`.
4. When the months are done, trigger a manual run (mode `auto` or `upgrade`): the final pass over
   every date finds (almost) nothing left, then the version goes to 11 and on to the target.
5. Errors: a row whose `messageV3` row is missing cannot be migrated; every run reports it (the
   `errors` list names the message) and the version stays at 10 until it is restored or the
   message expunged. Other failures: re-run; a retried task resumes from its checkpoints.
6. Check the start-up log says `Schema version is up-to-date`.

`dry_run` runs the Spark steps in detection mode only: nothing is written, no version is bumped.
WebAdmin's `POST /cassandra/version/upgrade` is the same upgrade as a single server task
(no slices, no Spark).
"""

RANGE_DOC = "ISO date-time (UTC); with mode slice only, overrides the run's data interval"

PARAMS, FORM_RULES = form_params({
    "mode": Param("auto", type="string", enum=list(MODES),
                  description="auto: backfill/scheduled runs migrate their data interval, manual runs upgrade; "
                              "slice: migrate one internal-date range (10 -> 11 only, never bumps the version); "
                              "upgrade: run the transitions up to target_version"),
    "target_version": Param(None, type=["null", "integer"], minimum=MIN_VERSION, maximum=LATEST,
                            description=f"Version to reach; empty for the latest ({LATEST})"),
    "internal_date_from": Param(None, type=["null", "string"], format="date-time",
                                description="First internal date of the slice: " + RANGE_DOC),
    "internal_date_to": Param(None, type=["null", "string"], format="date-time",
                              description="End of the slice (exclusive): " + RANGE_DOC),
    "cassandra_conn_id": Param("cassandra_default", type="string", pattern=r"^[A-Za-z0-9_.-]{1,250}$",
                               description="Airflow connection of the keyspace to migrate (host list, port, "
                                           "keyspace as schema); another one for deployments with several keyspaces"),
    **COMMON_PARAMS,
})


def slice_in_order(params: Mapping[str, Any], _lookups: Any) -> None:
    start, end = params.get("internal_date_from"), params.get("internal_date_to")
    if start and end and datetime.fromisoformat(start) >= datetime.fromisoformat(end):
        raise ParamError("internal_date_to", f"{end} is not after internal_date_from {start}")
CONN = "{{ params.cassandra_conn_id }}"


def _run_key(context: Mapping[str, Any], scope: str) -> str:
    return f"{context['dag'].dag_id}/{context['run_id']}/{scope}"


def _plan_of(context: Mapping[str, Any]) -> dict[str, Any]:
    return context["ti"].xcom_pull(task_ids="plan")


def spark_args(scope: str) -> Callable[[Mapping[str, Any]], list[str]]:
    """Job arguments of the slice (its range) or of the full-range run; each with a run key of its own."""

    def args(context: Mapping[str, Any]) -> list[str]:
        result = common_args(context, _run_key(context, scope))
        if scope == "slice":
            plan = _plan_of(context)
            result += ["--from", plan["internal_date_from"], "--to", plan["internal_date_to"]]
        return result

    return args


def _read_report(context: Mapping[str, Any], scope: str) -> dict[str, Any]:
    from mailplatform.hooks.reports import MaintenanceReportHook

    try:
        return MaintenanceReportHook().read(DENORMALIZATION_JOB, _run_key(context, scope))
    except Exception as exc:
        raise AirflowException(f"no report for this run ({exc}): the Spark job failed before the end, "
                               "see its log") from exc


with DAG(
    dag_id=DAG_ID,
    description="Cassandra schema upgrade to the latest or a given version; 10 -> 11 as backfills by date range",
    doc_md=DOC,
    # Monthly data intervals: `airflow backfill create` makes one run per month, each migrating its
    # month (a bare "@monthly" is a CronTriggerTimetable in Airflow 3: zero-length intervals). Never
    # scheduled: unpausing the DAG for a backfill must not start a migration of the last month.
    schedule=BackfillOnlyTimetable("@monthly", timezone="UTC"),
    start_date=START_DATE,
    tags=["maintenance", "cassandra", "schema"],
    params=PARAMS,
    **dag_arguments(),
) as dag:
    # Not procedure_dag's shape: a plan, then one Spark run per scope (a month's slice, every date) and
    # the version bumps, each with its own run key and report; the summary is the run's verdict.
    healthy = gated_start([*FORM_RULES, slice_in_order], components=["Cassandra backend"])

    @task
    def plan(**context: Any) -> dict[str, Any]:
        from mailplatform.schema_migration import PlanError, cassandra_session, current_version, run_mode
        from mailplatform.schema_migration import plan as make_plan

        from mailserver.cassandra.migrations.runner import MIGRATIONS

        params, dag_run = context["params"], context["dag_run"]
        run_type = getattr(dag_run.run_type, "value", dag_run.run_type)
        with cassandra_session(context["params"]["cassandra_conn_id"]) as session:
            current = current_version(session)
        try:
            mode = run_mode(params["mode"], run_type)
            result = make_plan(mode, current, params.get("target_version"), MIGRATIONS.keys(),
                               interval=(context.get("data_interval_start"), context.get("data_interval_end")),
                               date_from=params.get("internal_date_from"), date_to=params.get("internal_date_to"))
        except PlanError as exc:   # a retry cannot fix a plan: fail at once, nothing was written
            raise AirflowFailException(str(exc)) from exc
        print(f"{run_type} run, mode {result.mode}: schema version {current}, target {result.target}, "
              f"transitions {list(result.transitions)}, slice [{result.internal_date_from}, "
              f"{result.internal_date_to})")
        return result.as_xcom()

    planned = plan()

    @task.short_circuit(ignore_downstream_trigger_rules=False)
    def slice_needed(**context: Any) -> bool:
        p = _plan_of(context)
        if p["mode"] == "slice" and not p["slice_needed"]:
            print(f"Schema version {p['current']} >= {DENORMALIZED_VERSION}: the slice has nothing to migrate")
        return p["slice_needed"]

    migrate_slice = SparkJobOperator(task_id="migrate_slice", job="migrate_message_denormalization",
                                     args_from_context=spark_args("slice"), cassandra_conn_id=CONN,
                                     pool=CASSANDRA_POOL, retry_delay=timedelta(seconds=30))

    @task
    def slice_report(**context: Any) -> dict[str, Any]:
        return check_report(_read_report(context, "slice"))

    @task.short_circuit(ignore_downstream_trigger_rules=False)
    def denormalization_needed(**context: Any) -> bool:
        return _plan_of(context)["denormalization_needed"]

    denormalize_all = SparkJobOperator(task_id="denormalize_all", job="migrate_message_denormalization",
                                       args_from_context=spark_args("all"), cassandra_conn_id=CONN,
                                       pool=CASSANDRA_POOL, retry_delay=timedelta(seconds=30))

    def _skip_unless_planned(context: Mapping[str, Any], version: int) -> None:
        p = _plan_of(context)
        if version not in p["transitions"]:
            raise AirflowSkipException(f"version {version} is not part of this run ({p['mode']} mode, "
                                       f"from {p['current']} to {p['target']})")
        if context["params"].get("dry_run"):
            raise AirflowSkipException("dry run: no migration runs, no version is bumped")

    @task(task_id=f"to_{DENORMALIZED_VERSION}", trigger_rule="none_failed", pool=CASSANDRA_POOL)
    def to_denormalized(**context: Any) -> dict[str, Any]:
        import logging

        from mailplatform.schema_migration import bump_to_denormalized, cassandra_session

        from mailserver.cassandra.migrations.runner import MigrationPartial

        _skip_unless_planned(context, DENORMALIZED_VERSION)
        report = _read_report(context, "all")
        with cassandra_session(context["params"]["cassandra_conn_id"]) as session:
            try:
                bumped = bump_to_denormalized(session, report, logging.getLogger("airflow.task"))
            except MigrationPartial as exc:
                raise AirflowException(f"{exc}: version not bumped; the report lists what failed "
                                       f"({report.get('errors', [])[:5]})") from exc
        counters = {k: report.get(k) for k in ("processed", "fixed_message_id", "fixed_imap_uid")}
        return {"status": "COMPLETED" if bumped else "ALREADY_REACHED", "counters": counters}

    def small_transition(version: int) -> XComArg:
        @task(task_id=f"to_{version}", trigger_rule="none_failed", pool=CASSANDRA_POOL)
        def run(**context: Any) -> dict[str, Any]:
            import logging

            from mailplatform.schema_migration import cassandra_session, run_transition

            from mailserver.cassandra.migrations.runner import MigrationPartial

            _skip_unless_planned(context, version)
            with cassandra_session(context["params"]["cassandra_conn_id"]) as session:
                try:
                    result = run_transition(session, version, logging.getLogger("airflow.task"))
                except MigrationPartial as exc:
                    raise AirflowException(f"{exc}: version {version} not bumped, see the log above; "
                                           "fix the cause and run the DAG again") from exc
            return result or {"status": "ALREADY_REACHED", "counters": {}}

        return run()

    @task(trigger_rule="none_failed")
    def summary(**context: Any) -> dict[str, Any]:
        from mailplatform.schema_migration import cassandra_session, current_version

        p, ti = _plan_of(context), context["ti"]
        with cassandra_session(context["params"]["cassandra_conn_id"]) as session:
            version = current_version(session)
        migrations = {str(v): ti.xcom_pull(task_ids=f"to_{v}") for v in p["transitions"]}
        result = {"type": "cassandra-migration", "mode": p["mode"], "fromVersion": p["current"],
                  "targetVersion": p["target"], "toVersion": version, "migrations": migrations}
        if p["mode"] == "slice":
            result["slice"] = ti.xcom_pull(task_ids="slice_report")
        elif not context["params"].get("dry_run") and version < p["target"]:
            raise AirflowException(f"schema version {version} is below the target {p['target']}")
        return result

    transitions = [to_denormalized(), *(small_transition(v) for v in SMALL_TRANSITIONS)]
    done = summary()
    healthy >> planned
    planned >> slice_needed() >> migrate_slice >> slice_report() >> done
    planned >> denormalization_needed() >> denormalize_all >> transitions[0]
    chain(*transitions)
    transitions[-1] >> done
