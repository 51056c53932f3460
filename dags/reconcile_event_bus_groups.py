"""Reconcile the event bus's registered groups (RabbitMQ bindings) with the required groups (ADR 0026)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import DAG, Param, task
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException
from mailplatform.dag_defaults import dag_arguments
from mailplatform.health_gate import RABBITMQ_CONN_ID, gated_start
from mailplatform.param_checks import form_params
from mailplatform.procedure_dag import CASSANDRA_POOL
from mailplatform.run_identity import run_key
from mailplatform.sensors.health import WebAdminHealthSensor

DAG_ID = "reconcile_event_bus_groups"
BACKENDS = ["Cassandra backend", "RabbitMQ backend"]
GROUPS_CHECK = "RabbitMQEventBusGroups"   # mailserver/events/registered_groups.py

DOC = """
### Reconcile event-bus groups

**Why.** Each listener group of the mailbox event bus has a RabbitMQ work queue bound to its
retry exchange. A *required* group is one the nodes run (each node records the groups it starts
with in the `RequiredGroups-mailboxEvent` aggregate, one per RabbitMQ vhost, with its host and the
date); a *registered* group is one whose queue exists and is bound in RabbitMQ, whatever James
does with it. If a listener is removed from the configuration, its queue and binding stay:
nobody consumes it and it grows until RabbitMQ runs out of resources. If a bind failed at start,
a required group's retries go nowhere. Then registered groups diverge from required groups.

**Symptoms.** `/healthcheck` shows `RabbitMQEventBusGroups` degraded, naming the groups
"required but not registered", "registered but not required" and the "queues of groups no
longer required" with their message counts.

**What this DAG does.**
1. `check_params` checks the params (a rate above 0); `backends_healthy` waits for WebAdmin's
   Cassandra and RabbitMQ checks; `broker_healthy` checks, through the `rabbitmq_management`
   connection, that its vhost exists and no alarm is raised.
2. `detect` reads the required groups (and their audit trail) from Cassandra and the bindings and
   queues from the management API: *missing* groups (required, not bound), *unexpected* groups
   (bound, not required) and *orphan* queues (of groups not required) with their depth. It
   refuses to go on when no group is required at all while some are bound (the aggregate was
   never written in that keyspace: unbinding everything would stop every listener).
3. `reconcile` (skipped in a dry run) binds the missing groups and unbinds the unexpected ones.
   Queues are **never deleted with messages in them**: unbinding only stops new retries. With
   `move_orphan_messages_to_dead_letters`, each orphan queue's messages are stored as event dead
   letters under their group (each message acknowledged only after it is stored, at most
   `messages_per_second`), then the queue is deleted only if the broker finds it empty. A queue
   that still has consumers is kept (a node still runs that group).
4. `report` looks again and writes the report (S3, `maintenance_audit`, XCom): what was found, done
   and what is left; it fails the run when something asked for is not done.
5. `groups_healthy` (only when nothing was left on purpose) waits for WebAdmin's
   `RabbitMQEventBusGroups` check to be healthy again.

**How to run it.** Start with `dry_run` and read `detect`'s log or the report. Then run it for
real; the bindings are fixed at once and safely (idempotent: a second run finds nothing). For the
orphans, either leave them (they are only reported and the health check stays degraded), or set
`move_orphan_messages_to_dead_letters` so nothing is lost and the queues go away; the moved events
are then listed by WebAdmin's `/events/deadLetter/groups` and can be redelivered once the group is
required again (`redeliver_event_dead_letters`) or deleted. A run killed midway is simply run
again: what was moved is acknowledged, what was not is still in its queue (a message stored but
not yet acknowledged at the kill is stored twice: at least once).
"""


def _who(context: Any) -> str:
    dag_run = context.get("dag_run")
    return getattr(dag_run, "triggering_user_name", None) or "scheduler"


def _options(params: Any) -> dict[str, Any]:
    return {"dryRun": params["dry_run"],
            "moveOrphanMessagesToDeadLetters": params["move_orphan_messages_to_dead_letters"],
            "messagesPerSecond": params.get("messages_per_second")}


PARAMS, FORM_RULES = form_params({
    "dry_run": Param(False, type="boolean",
                     description="Detect and report only: no binding, no message moved, no queue deleted"),
    "move_orphan_messages_to_dead_letters": Param(
        False, type="boolean",
        description="Store the messages of orphan queues as event dead letters, then delete the empty queues"),
    "messages_per_second": Param(None, type=["null", "number"], exclusiveMinimum=0,
                                 description="Orphan messages moved per second; empty for no limit"),
})

with DAG(
    dag_id=DAG_ID,
    description="Event bus: bind required groups, unbind the others, report or move orphan queues (ADR 0026)",
    doc_md=DOC,
    schedule=None,
    tags=["maintenance", "event-bus", "rabbitmq", "groups"],
    **dag_arguments(retry_delay=timedelta(minutes=1)),
    params=PARAMS,
) as dag:
    # Not procedure_dag's shape: no Spark job. The broker's API does the work in Airflow tasks
    # (detect, reconcile), and the report is written by this DAG, not read back from a job.
    healthy_broker = gated_start(FORM_RULES, components=BACKENDS, broker=True)

    @task(pool=CASSANDRA_POOL)
    def detect(**context: Any) -> dict[str, Any]:
        """Required vs registered groups, and the orphan queues; the audit row of the run (RUNNING)."""
        from mailplatform.event_bus import (
            JOB,
            EmptyRequiredGroups,
            broker_plan,
            cassandra_session,
            check_not_blind,
            required_groups,
        )
        from mailplatform.hooks.rabbitmq_management import RabbitMQManagementHook

        from spark_apps.common.bookkeeping import AuditLog, AuditRecord, ensure_tables
        from spark_apps.common.reports import ReportLocation

        params, started = context["params"], datetime.now(UTC)
        with cassandra_session() as session, RabbitMQManagementHook(RABBITMQ_CONN_ID) as hook:
            required, audit = required_groups(session, hook.vhost)
            plan = broker_plan(hook, required)
            ensure_tables(session)
            AuditLog(session).write(AuditRecord(
                JOB, run_key(context), started, _who(context), context["dag"].dag_id, context["run_id"],
                _options(params), counts_before=plan.counts(),
                report_uri=ReportLocation.for_run(JOB, run_key(context)).uri))
        print(f"required groups: {sorted(required)}")
        for change in audit[-10:]:
            print(f"  {change['type']} {change['group']} by {change['host']} at {change['date']}")
        print(f"missing (required, not bound): {plan.missing}")
        print(f"unexpected (bound, not required): {plan.unexpected}")
        for o in plan.orphans:
            print(f"orphan queue {o.queue}: {o.messages} message(s), {o.consumers} consumer(s)")
        if not params["dry_run"]:
            try:
                check_not_blind(plan)
            except EmptyRequiredGroups as exc:   # waiting or retrying cannot fix it
                raise AirflowFailException(str(exc)) from exc
        return {"plan": plan.as_dict(), "audit": audit, "startedAt": started.isoformat()}

    @task(pool=CASSANDRA_POOL)
    def reconcile(**context: Any) -> dict[str, Any]:
        """Bind, unbind, move and delete, on the broker as it is now."""
        import logging

        from mailplatform.event_bus import cassandra_session
        from mailplatform.event_bus import reconcile as act
        from mailplatform.hooks.rabbitmq_management import RabbitMQManagementHook

        params = context["params"]
        if params["dry_run"]:
            raise AirflowSkipException("dry run: nothing is bound, unbound, moved or deleted")
        with cassandra_session() as session, RabbitMQManagementHook(RABBITMQ_CONN_ID) as hook:
            plan, actions = act(hook, session, move=params["move_orphan_messages_to_dead_letters"],
                                rate=params.get("messages_per_second"), logger=logging.getLogger("airflow.task"))
        return {"plan": plan.as_dict(), "actions": actions.as_dict()}

    @task(trigger_rule="none_failed", pool=CASSANDRA_POOL)
    def report(**context: Any) -> dict[str, Any]:
        """Look again, write the report and the audit's end; fail when something asked for is not done."""
        from mailplatform.event_bus import (
            JOB,
            Actions,
            GroupsPlan,
            broker_plan,
            build_report,
            cassandra_session,
            required_groups,
        )
        from mailplatform.hooks.rabbitmq_management import RabbitMQManagementHook
        from mailplatform.hooks.reports import MaintenanceReportHook

        from spark_apps.common.bookkeeping import AuditLog, AuditRecord
        from spark_apps.common.reports import ReportLocation, write_report

        params, ti = context["params"], context["ti"]
        detected = ti.xcom_pull(task_ids="detect")
        done = ti.xcom_pull(task_ids="reconcile") or {}
        before = GroupsPlan.from_dict(detected["plan"])
        a = done.get("actions") or {}
        actions = Actions(a.get("bound", []), a.get("unbound", []), a.get("movedToDeadLetters", {}),
                          a.get("rejectedToDeadLetterQueue", {}), a.get("deletedQueues", []), a.get("keptOrphans", []))
        location = ReportLocation.for_run(JOB, run_key(context))
        with cassandra_session() as session, RabbitMQManagementHook(RABBITMQ_CONN_ID) as hook:
            required, _ = required_groups(session, hook.vhost)
            after = broker_plan(hook, required)
            content = build_report(run_key=run_key(context), dry_run=params["dry_run"],
                                   move=params["move_orphan_messages_to_dead_letters"],
                                   rate=params.get("messages_per_second"), before=before, actions=actions,
                                   after=after, audit=detected.get("audit", []))
            write_report(content, location, MaintenanceReportHook().client())
            AuditLog(session).write(AuditRecord(
                JOB, run_key(context), datetime.fromisoformat(detected["startedAt"]), _who(context),
                context["dag"].dag_id, context["run_id"], _options(params), counts_before=before.counts(),
                counts_after=after.counts(), outcome=content["outcome"], report_uri=location.uri))
        print(f"outcome {content['outcome']}; report {location.uri}")
        if content["problems"]:
            raise AirflowException("groups not reconciled: " + "; ".join(content["problems"]))
        return content

    @task.short_circuit
    def nothing_left_on_purpose(**context: Any) -> bool:
        """The groups check can only be healthy when the run changed the broker and left no orphan queue."""
        content = context["ti"].xcom_pull(task_ids="report")
        if content["dryRun"]:
            print("dry run: nothing changed, nothing to verify")
            return False
        if content["after"]["orphans"]:
            print(f"orphan queues left (not asked to move them): {content['after']['orphans']}; "
                  f"{GROUPS_CHECK} stays degraded until they are moved")
            return False
        return True

    healthy = WebAdminHealthSensor(task_id="groups_healthy", components=[*BACKENDS, GROUPS_CHECK],
                                   poke_interval=10, timeout=10 * 60)

    healthy_broker >> detect() >> reconcile() >> report() >> nothing_left_on_purpose() >> healthy

