"""The four mail-queue DAGs: their anatomy (health before and after, the queue gate, the pool), params and
their validation, the job arguments, and the Spark operator's broker settings and shipped packages."""

from __future__ import annotations

import itertools
import zipfile

import pytest

from tests.support.dag_files import dag_module

DRAIN, FLUSH, REPROCESS, RECOVER = ("drain_mail_queue", "flush_delayed_mails", "reprocess_mail_repository",
                                    "recover_lost_mails")
SPARK_TASKS = {DRAIN: "detect_drain_verify", FLUSH: "detect_flush_verify", REPROCESS: "detect_reprocess_verify",
               RECOVER: "detect_recover_verify"}


def params_of(dag) -> dict:
    return {name: dag.params[name] for name in dag.params}


@pytest.mark.parametrize("dag_id", [DRAIN, FLUSH, REPROCESS, RECOVER])
def test_anatomy_health_before_and_after(dagbag, dag_id):
    dag = dagbag.get_dag(dag_id)
    order = ["check_params", "backends_healthy", "broker_healthy",
             *(["queue_drained"] if dag_id in (FLUSH, REPROCESS) else []), SPARK_TASKS[dag_id], "report",
             "backends_healthy_after"]
    assert {t.task_id for t in dag.tasks} == set(order)
    for upstream, downstream in itertools.pairwise(order):
        assert dag.get_task(downstream).upstream_task_ids == {upstream}
    spark = dag.get_task(SPARK_TASKS[dag_id])
    assert spark.pool == "cassandra_maintenance" and spark.job == dag_id
    for task_id in ("backends_healthy", "backends_healthy_after"):
        assert dag.get_task(task_id).components == ["Cassandra backend", "RabbitMQ backend", "ObjectStorage"]
    assert dag.max_active_runs == 1 and "mail-queue" in dag.tags and dag.schedule is None
    assert dag.params["rate"] is None and "blob_bucket" in dag.params


def test_the_queue_gates_watch_the_target_work_queue(dagbag):
    flush = dagbag.get_dag(FLUSH).get_task("queue_drained")
    reprocess = dagbag.get_dag(REPROCESS).get_task("queue_drained")
    assert flush.queue_name == "JamesMailQueue-workqueue-{{ params.queue }}"
    assert reprocess.queue_name == "JamesMailQueue-workqueue-{{ params.target_queue }}"
    assert flush.max_messages == reprocess.max_messages == "{{ params.max_queue_depth }}"


def test_drain_defaults_to_a_dry_run_of_a_move(dagbag):
    params = params_of(dagbag.get_dag(DRAIN))
    assert params["dry_run"] is True and params["action"] == "move" and params["queue"] == "spool"
    assert params["repository"] == "cassandra://var/mail/drained/"


@pytest.mark.parametrize(("dag_id", "name", "bad"), [
    (DRAIN, "action", "purge"), (DRAIN, "queue", "no spaces"), (DRAIN, "sender", "nobody"),
    (DRAIN, "older_than", "yesterday"), (DRAIN, "rate", 0), (DRAIN, "repository", "var/mail/x"),
    (DRAIN, "hold_for", "a while"), (FLUSH, "max_queue_depth", -1), (REPROCESS, "limit", 0),
    (REPROCESS, "target_processor", "two words"), (RECOVER, "older_than", "1 fortnight"), (RECOVER, "slices", 0),
    (RECOVER, "blob_bucket", "Bad_Bucket"),
])
def test_params_are_validated(dagbag, dag_id, name, bad):
    from mailplatform.param_checks import refusal

    assert name in (refusal(dagbag.get_dag(dag_id), {name: bad}) or "")


def test_drain_refuses_contradictory_params():
    validate = dag_module(DRAIN).validate_params
    ok = {"action": "move", "repository": "cassandra://var/mail/drained/", "sender": "s@bad.example"}
    validate(ok)
    validate({"action": "hold", "hold_for": "2h", "recipient": "*@y.org"})
    validate({"action": "delete", "all_mails": True})
    for params, message in [({**ok, "sender": None}, "no filter given"),
                            ({**ok, "all_mails": True}, "all_mails=true with filters"),
                            ({"action": "hold", "sender": "s@x.org"}, "needs hold_for"),
                            ({"action": "delete", "hold_for": "2h", "sender": "s@x.org"}, "only for action hold"),
                            ({"action": "move", "repository": None, "sender": "s@x.org"}, "needs a repository")]:
        with pytest.raises(ValueError, match=message):
            validate(params)


def test_job_arguments():
    drain = dag_module(DRAIN).job_args
    assert drain({"queue": "spool", "action": "move", "repository": "cassandra://var/mail/drained/",
                  "sender": "s@bad.example", "older_than": "2h", "slices": 4, "rate": 50, "dry_run": True}) == [
        "--queue", "spool", "--action", "move", "--sender", "s@bad.example", "--older-than", "2h",
        "--repository", "cassandra://var/mail/drained/", "--slices", "4", "--rate", "50", "--dry-run"]
    assert drain({"queue": "outgoing", "action": "hold", "hold_for": "1h", "repository": "cassandra://x/",
                  "name": "m1", "slices": 8, "blob_bucket": "mails"}) == [
        "--queue", "outgoing", "--action", "hold", "--name", "m1", "--hold-for", "1h", "--slices", "8",
        "--blob-bucket", "mails"]
    assert dag_module(FLUSH).job_args({"queue": "outgoing", "rate": None, "dry_run": False}) == ["--queue", "outgoing"]
    assert dag_module(REPROCESS).job_args({"repository": "cassandra://var/mail/error/", "target_queue": "spool",
                                       "target_processor": "transport", "recipient": "*@local.test", "limit": 10,
                                       "slices": 2}) == [
        "--repository", "cassandra://var/mail/error/", "--queue", "spool", "--recipient", "*@local.test",
        "--processor", "transport", "--limit", "10", "--slices", "2"]
    assert dag_module(RECOVER).job_args({"older_than": "1h", "target_queue": "spool", "orphan_min_age": "15m",
                                     "orphan_max_age": "7d", "intake_signature": "JAMES SMTP Server",
                                     "queue": None, "check_broker": False, "scan_orphans": False,
                                     "move_browse_start": False, "slices": 8, "dry_run": True}) == [
        "--older-than", "1h", "--target-queue", "spool", "--orphan-min-age", "15m", "--orphan-max-age", "7d",
        "--intake-signature", "JAMES SMTP Server", "--no-broker-check", "--no-orphans", "--no-browse-start",
        "--slices", "8", "--dry-run"]


def test_the_jobs_parse_what_the_dags_give(monkeypatch):
    """The argument lists above are accepted by the jobs themselves (no Spark needed to parse)."""
    from spark_apps.common.procedure import ProcedureRunner
    from spark_apps.jobs.drain_mail_queue import DrainMailQueue
    from spark_apps.jobs.recover_lost_mails import RecoverLostMails
    from spark_apps.jobs.reprocess_mail_repository import ReprocessMailRepository

    monkeypatch.setenv("AMQP_URL", "amqp://u:p@127.0.0.1:5672/%2F")
    monkeypatch.setenv("S3_ENDPOINT", "http://127.0.0.1:9000")
    monkeypatch.setenv("RABBITMQ_MANAGEMENT_URL", "http://127.0.0.1:15672")
    _, _, options, running = ProcedureRunner(DrainMailQueue()).parse(
        dag_module(DRAIN).job_args({"queue": "spool", "action": "hold", "hold_for": "2h", "sender": "*@bad.example",
                                "slices": 4, "dry_run": True}))
    assert options.dry_run and running["action"] == "hold" and running["holdFor"] == "7200s"
    assert running["sender"] == "*@bad.example"
    _, _, _, running = ProcedureRunner(ReprocessMailRepository()).parse(dag_module(REPROCESS).job_args(
        {"repository": "cassandra://var/mail/error/", "target_queue": "spool", "limit": 3, "slices": 8}))
    assert running["repositoryPath"] == "var/mail/error/" and running["limit"] == 3
    _, _, _, running = ProcedureRunner(RecoverLostMails()).parse(dag_module(RECOVER).job_args(
        {"older_than": "0s", "target_queue": "spool", "orphan_min_age": "0s", "orphan_max_age": "1d",
         "intake_signature": "JAMES SMTP Server", "queue": "spool", "check_broker": True, "scan_orphans": True,
         "move_browse_start": True, "slices": 2}))
    assert running["queues"] == ["spool"] and running["olderThan"] == "0s" and running["checkBroker"]
    from spark_apps.jobs.flush_delayed_mails import parse as parse_flush

    args, _, options = parse_flush(dag_module(FLUSH).job_args({"queue": "outgoing", "rate": 5, "blob_bucket": "mails",
                                                           "dry_run": True}))
    assert (args.queue, args.blob_bucket, options.rate, options.dry_run) == ("outgoing", "mails", 5.0, True)
    with pytest.raises(SystemExit):   # argparse refuses what the job refuses
        ProcedureRunner(DrainMailQueue()).parse(["--action", "move"])


def test_the_spark_operator_ships_the_server_and_takes_the_broker_from_the_connection(dagbag, tmp_path,
                                                                                      monkeypatch):
    import json

    from mailplatform.mail_queues import build_full_py_files

    zipped = build_full_py_files(tmp_path)
    names = set(zipfile.ZipFile(zipped).namelist())
    assert {"spark_apps/jobs/drain_mail_queue.py", "spark_apps/common/mail_queues.py",
            "mailserver/queue/rabbitmq.py", "mailserver/repository/cassandra.py",
            "mailserver/mailets/reprocess.py"} <= names

    monkeypatch.setenv("AIRFLOW_CONN_RABBITMQ_MANAGEMENT", json.dumps({
        "conn_type": "http", "host": "127.0.0.1", "port": 15672, "schema": "http", "login": "u", "password": "p",
        "extra": {"vhost": "mail", "amqp_port": 5672}}))
    spark = dagbag.get_dag(DRAIN).get_task("detect_drain_verify")
    captured = {}

    def fake_execute(self, context):   # SparkJobOperator.execute, without spark-submit
        captured["env"] = dict(self.env_vars)
        self.py_files = "small.zip"
        captured["hook_py_files"] = self._get_hook()._py_files

    from mailplatform.operators.spark_job import SparkJobOperator

    monkeypatch.setattr(SparkJobOperator, "execute", fake_execute)
    spark.execute({})
    assert captured["env"]["AMQP_URL"] == "amqp://u:p@127.0.0.1:5672/mail"
    assert captured["env"]["RABBITMQ_MANAGEMENT_URL"] == "http://127.0.0.1:15672"
    assert captured["hook_py_files"].endswith("spark_apps_mailserver.zip")
