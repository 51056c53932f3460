"""Redeliver the mailbox event bus's dead letters: all, one group, or one event (James's redelivery tasks)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.sdk import Param, task
from mailplatform.health_gate import RABBITMQ_CONN_ID
from mailplatform.live import dead_letters_exist
from mailplatform.operators.spark_job import SparkJobOperator
from mailplatform.param_checks import from_value_error, requires
from mailplatform.procedure_dag import SparkProcedure, procedure_dag
from mailplatform.run_identity import run_identity_args
from mailplatform.sensors.dead_letters import EventDeadLettersClearedSensor

DAG_ID = "redeliver_event_dead_letters"
JOB = "redeliver_event_dead_letters"
BACKENDS = ["Cassandra backend", "RabbitMQ backend"]
UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"

DOC = """
### Redeliver event dead letters

**Why they exist.** Every mailbox operation fires events on the mailbox event bus; listener
groups (current quota, search indexing, fast-view projection, vault, ...) handle them on any
node. Upon exceptions, a bounded number of retries is performed with exponential backoff; if
the listener still fails, the event is stored in the **event dead letters** (Cassandra
`event_dead_letters`, under the listener's group). An event whose very publication failed is kept
under the group `org.apache.james.events.DispatchingFailureGroup-mailboxEvent`.

**Symptoms.** `/healthcheck` shows `EventDeadLettersHealthCheck` degraded ("EventDeadLetters
contain events"); listener errors in the logs; then whatever the failing listener maintains is
stale (a quota, a search result, a preview).

**Before running it.** Fix the cause first (the listener's backend is back, the bug is
deployed), or the events only fail again and come back. Look at what is there: a `dry_run`
counts the dead letters per group and changes nothing (WebAdmin's `/events/deadLetter/groups`
lists them too).

**What this DAG does.**
1. `check_params` refuses a scope without its group / insertion id, a group that holds no dead
   letters and an insertion id that is not one of them, before anything runs.
2. `backends_healthy` waits for WebAdmin's Cassandra and RabbitMQ checks; `broker_healthy` checks,
   through the `rabbitmq_management` connection, that its vhost exists and that no memory or disk
   alarm blocks publishers.
3. `detect_redeliver_verify` (Spark, `cassandra_maintenance` pool) reads the dead letters in
   scope; unless `dry_run`, it publishes each event again, persistent and confirmed by the
   broker, to its group's retry exchange (`mailboxEvent-retryExchange-<group>`, `retry-count`
   0: the group's listener runs it again on some node) or, for the dispatching-failure group, to
   `mailboxEvent-exchange` (every group again), and deletes the dead letter only after the
   broker's confirm. At most `events_per_second` events per second. Then it looks again.
4. `report` shows James's counters (`successfulRedeliveriesCount`, `failedRedeliveriesCount`)
   and, per group, `found`, `redelivered`, `failed` with the failed insertion ids; the full report
   is in S3 (`maintenance-reports/reports/<dag>__<run>/...`) and the audit in `maintenance_audit`.
   A failed event (broker down, group not bound: "unroutable") stays a dead letter and fails
   the run: fix the cause and run the DAG again, or redeliver those ids one by one.
5. `dead_letters_cleared` (skipped in a dry run) waits until the scope is empty: for scope
   `all`, WebAdmin's `EventDeadLettersHealthCheck` healthy; for a group, its partition empty; for
   one event, its row gone.

**How to run it.** The guide's three operations are the `scope` param: `all` ("redeliver all
events", the easy way out), `group` with `group` (only that listener's events, e.g. the search
indexing group after an OpenSearch outage), `event` with `group` and `insertion_id` (one
event). Safe with traffic on and safe to re-run: a redelivered dead letter is deleted, so a run
killed midway and started again redelivers only the rest. Delivery is at least once: an event
confirmed by the broker just before a kill is published again by the next run (listeners are
idempotent, as for any retry of the bus). A group that is not bound on the broker any more (a
listener removed from the configuration) cannot take its events: run
`reconcile_event_bus_groups` first, or leave those dead letters alone.
"""


def validate_params(params: Mapping[str, Any]) -> None:
    """The scope's companions: a ValueError names what is missing or extra."""
    from spark_apps.jobs.redeliver_event_dead_letters import check_scope

    check_scope(params["scope"], params.get("group") or None, params.get("insertion_id") or None)


def job_args(params: Mapping[str, Any]) -> list[str]:
    """The Spark job's options for these (validated) params."""
    args = ["--slices", str(params["slices"]), "--scope", params["scope"]]
    if params.get("group"):
        args += ["--group", params["group"]]
    if params.get("insertion_id"):
        args += ["--insertion-id", params["insertion_id"]]
    if params.get("events_per_second") is not None:
        args += ["--rate", str(params["events_per_second"])]
    if params.get("dry_run"):
        args.append("--dry-run")
    return args


class RedeliverySparkJob(SparkJobOperator):
    """The Spark job, plus the broker to publish to: ``AMQP_URL`` from the RabbitMQ connection, as an
    environment variable (never on the command line), resolved at run time only."""

    def __init__(self, *, rabbitmq_conn_id: str = RABBITMQ_CONN_ID, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rabbitmq_conn_id = rabbitmq_conn_id

    def execute(self, context: Any) -> None:
        from mailplatform.hooks.rabbitmq_management import RabbitMQManagementHook

        self.env_vars = {**(self.env_vars or {}), "AMQP_URL": RabbitMQManagementHook(self.rabbitmq_conn_id).amqp_url()}
        super().execute(context)


def report_type(params: Mapping[str, Any]) -> str:
    """James's task type of the scope: the report's name."""
    from spark_apps.jobs.redeliver_event_dead_letters import task_type

    return task_type(params["scope"])


def per_group(report: Mapping[str, Any]) -> list[str]:
    return [f"{group}: found {counts['found']}, redelivered {counts['redelivered']}, failed {counts['failed']}"
            + (f" (first ids: {counts['failedInsertionIds'][:5]})" if counts["failed"] else "")
            for group, counts in sorted(report.get("groups", {}).items())]


def spark_args(context: Mapping[str, Any]) -> list[str]:
    return [*run_identity_args(context), *job_args(context["params"])]


def verified() -> list[Any]:
    """After the report: the scope is empty (skipped in a dry run, which changed nothing)."""

    @task.short_circuit
    def redelivered(**context: Any) -> bool:
        """A dry run changed nothing: there is nothing to verify."""
        return not context["params"]["dry_run"]

    cleared = EventDeadLettersClearedSensor(
        task_id="dead_letters_cleared", scope="{{ params.scope }}", group="{{ params.group or '' }}",
        insertion_id="{{ params.insertion_id or '' }}", poke_interval=15, timeout=10 * 60)
    return [redelivered(), cleared]


dag = procedure_dag(SparkProcedure(
    dag_id=DAG_ID,
    description="Event dead letters: redeliver all, one group or one event to the listeners (James's tasks)",
    doc_md=DOC,
    tags=("maintenance", "event-bus", "rabbitmq", "cassandra", "dead-letters"),
    params={
        "dry_run": Param(False, type="boolean",
                         description="Count the dead letters per group and stop: nothing is published or deleted"),
        "scope": Param("all", type="string", enum=["all", "group", "event"],
                       description="all: every group; group: one listener group; event: one dead letter"),
        "group": Param(None, type=["null", "string"],
                       description="The listener group (scope group or event), e.g. "
                                   "org.apache.james.mailbox.store.quota.ListeningCurrentQuotaUpdater"
                                   "$ListeningCurrentQuotaUpdaterGroup"),
        "insertion_id": Param(None, type=["null", "string"], pattern=UUID_PATTERN,
                              description="The dead letter's insertion id (scope event)"),
        "events_per_second": Param(None, type=["null", "number"], exclusiveMinimum=0,
                                   description="Events redelivered per second for the whole job; empty for no limit"),
        "slices": Param(8, type="integer", minimum=1, maximum=4096,
                        description="Checkpointed units of work: a retried run skips the slices already done"),
    },
    checks=(requires("scope", "group", lambda scope: scope in ("group", "event")),
            requires("scope", "insertion_id", lambda scope: scope == "event"),
            from_value_error(validate_params)),
    live_checks=(dead_letters_exist(),),
    # The dead-letter check itself is degraded by definition before this runs: gate on the backends only.
    components=BACKENDS,
    broker=True,
    operator=RedeliverySparkJob,
    job=JOB,
    job_task_id="detect_redeliver_verify",
    job_args=spark_args,
    report_type=report_type,
    report_lines=per_group,
    retry_unreadable_report=False,   # waiting or retrying cannot produce it: fail at once
    after=verified,
))
