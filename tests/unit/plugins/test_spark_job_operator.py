"""SparkJobOperator fills spark-submit from Airflow connections at run time, not in the DAG."""

from __future__ import annotations

import json

from mailplatform.operators.spark_job import SparkJobOperator


def test_connection_settings_come_from_airflow_connections(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_CASSANDRA_TEST", json.dumps(
        {"conn_type": "generic", "host": "cass1,cass2", "port": 19042, "schema": "ks1"}))
    monkeypatch.setenv("AIRFLOW_CONN_S3_TEST", json.dumps(
        {"conn_type": "aws", "login": "key", "password": "secret",
         "extra": {"endpoint_url": "http://s3.internal:9000", "region_name": "eu-west-1"}}))
    monkeypatch.setenv("AIRFLOW_CONN_OS_TEST", json.dumps(
        {"conn_type": "generic", "host": "search.internal", "port": 9201, "schema": "https"}))
    op = SparkJobOperator(task_id="t", job="stack_smoke", cassandra_conn_id="cassandra_test",
                          s3_conn_id="s3_test", opensearch_conn_id="os_test", job_args=["--keyspace", "override"])

    conf, args, env = op.connection_settings()

    assert args == ["--cassandra-hosts", "cass1,cass2", "--cassandra-port", "19042", "--keyspace", "ks1"]
    assert env == {"S3_ENDPOINT": "http://s3.internal:9000", "S3_ACCESS_KEY": "key", "S3_SECRET_KEY": "secret",
                   "S3_REGION": "eu-west-1", "OPENSEARCH_URL": "https://search.internal:9201"}
    assert conf["spark.ui.enabled"] == "false"
    assert "secret" not in " ".join(args), "secrets never go on the spark-submit command line"
    assert op.application.endswith("spark_apps/jobs/stack_smoke.py")
    assert op.application_args == ["--keyspace", "override"]


def test_execute_adds_jars_py_files_and_puts_dag_args_last(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_CASSANDRA_DEFAULT", json.dumps({"conn_type": "generic", "host": "h", "port": 1}))
    monkeypatch.setenv("SPARK_CONNECTOR_JARS", "/jars/a.jar,/jars/b.jar")
    captured = {}

    def fake_submit(self, context):
        import zipfile

        captured.update(args=self.application_args, jars=self.jars,
                        zipped=zipfile.ZipFile(self.py_files).namelist())

    monkeypatch.setattr("airflow.providers.apache.spark.operators.spark_submit.SparkSubmitOperator.execute",
                        fake_submit)
    op = SparkJobOperator(task_id="t", job="stack_smoke", s3_conn_id=None, opensearch_conn_id=None,
                          job_args=["--keyspace", "mine"])
    op.execute(context={})

    assert captured["args"] == ["--cassandra-hosts", "h", "--cassandra-port", "1", "--keyspace", "mine"]
    assert captured["jars"] == "/jars/a.jar,/jars/b.jar"
    assert "spark_apps/common/session.py" in captured["zipped"]


def test_a_cluster_master_in_the_spark_connection_sizes_the_executors_and_names_their_python(monkeypatch):
    import sys

    monkeypatch.setenv("AIRFLOW_CONN_CASSANDRA_DEFAULT", json.dumps({"conn_type": "generic", "host": "h", "port": 1}))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(
        {"conn_type": "spark", "host": "spark://master.internal", "port": 7077,
         "extra": {"executor_memory": "3g", "total_executor_cores": 8}}))
    captured = {}
    monkeypatch.setattr("airflow.providers.apache.spark.operators.spark_submit.SparkSubmitOperator.execute",
                        lambda self, context: captured.update(conf=dict(self.conf)))
    op = SparkJobOperator(task_id="t", job="stack_smoke", s3_conn_id=None, opensearch_conn_id=None,
                          conf={"spark.cores.max": "4"})
    op.execute(context={})

    assert captured["conf"]["spark.executor.memory"] == "3g"
    assert captured["conf"]["spark.cores.max"] == "4", "the DAG's own setting wins over the connection's"
    assert captured["conf"]["spark.pyspark.python"] == sys.executable
