"""Endpoints travel through the environment intact, and Airflow reads our connection JSON."""

from __future__ import annotations

import json

from include.connections import airflow_connections
from include.stack.endpoints import ENV_NAMES, Endpoints
from include.stack.settings import StackSettings


def test_endpoints_round_trip_through_environment():
    ep = Endpoints.from_settings(StackSettings())
    assert Endpoints.from_env(ep.to_env()) == ep


def test_endpoints_from_env_is_none_when_a_required_variable_is_missing():
    env = Endpoints.from_settings(StackSettings()).to_env()
    del env[ENV_NAMES["amqp_url"]]
    assert Endpoints.from_env(env) is None


def test_amqp_url_escapes_credentials(monkeypatch):
    monkeypatch.setenv("STACK_AMQP_PASSWORD", "p@ss:w/rd")
    ep = Endpoints.from_settings(StackSettings())
    import pika

    assert pika.URLParameters(ep.amqp_url).credentials.password == "p@ss:w/rd"


def test_airflow_parses_every_connection(monkeypatch):
    from airflow.models.connection import Connection

    ep = Endpoints.from_settings(StackSettings())
    conns = airflow_connections(ep, webadmin_password="s3cret")
    assert set(conns) == {"AIRFLOW_CONN_SPARK_DEFAULT", "AIRFLOW_CONN_CASSANDRA_DEFAULT", "AIRFLOW_CONN_S3_DEFAULT",
                          "AIRFLOW_CONN_OPENSEARCH_DEFAULT", "AIRFLOW_CONN_RABBITMQ_DEFAULT",
                          "AIRFLOW_CONN_RABBITMQ_MANAGEMENT", "AIRFLOW_CONN_WEBADMIN_DEFAULT"}
    spark = Connection.from_json(conns["AIRFLOW_CONN_SPARK_DEFAULT"], conn_id="spark_default")
    assert spark.host == "local[*]"  # the brackets survive the JSON form
    s3 = Connection.from_json(conns["AIRFLOW_CONN_S3_DEFAULT"], conn_id="s3_default")
    assert s3.extra_dejson["endpoint_url"] == ep.s3_endpoint and s3.password == ep.s3_secret_key
    cass = Connection.from_json(conns["AIRFLOW_CONN_CASSANDRA_DEFAULT"], conn_id="cassandra_default")
    assert (cass.host, cass.port, cass.schema) == (ep.cassandra_hosts, ep.cassandra_port, "james_keyspace")
    web = json.loads(conns["AIRFLOW_CONN_WEBADMIN_DEFAULT"])
    assert web["password"] == "s3cret"


def test_the_s3_connection_carries_the_server_blob_settings_to_the_spark_jobs(monkeypatch):
    from airflow.models.connection import Connection
    from mailplatform.operators.spark_job import SparkJobOperator

    from include.connections import blob_store_extra

    ep = Endpoints.from_settings(StackSettings())
    monkeypatch.delenv("MAILSERVER_BLOB_DEDUPLICATION", raising=False)
    default = Connection.from_json(airflow_connections(ep)["AIRFLOW_CONN_S3_DEFAULT"], conn_id="s3_default")
    assert default.extra_dejson["blob_deduplication"] == "false"   # James's sample blob.properties
    monkeypatch.setenv("MAILSERVER_BLOB_DEDUPLICATION", "true")
    monkeypatch.setenv("MAILSERVER_BLOB_GENERATION_DURATION", "15")
    monkeypatch.setenv("AIRFLOW_CONN_S3_TEST", airflow_connections(ep)["AIRFLOW_CONN_S3_DEFAULT"])
    monkeypatch.setenv("AIRFLOW_CONN_CASSANDRA_TEST", json.dumps({"conn_type": "generic", "host": "h", "port": 1}))
    monkeypatch.delenv("MAILSERVER_BLOB_DEDUPLICATION")
    monkeypatch.delenv("MAILSERVER_BLOB_GENERATION_DURATION")   # the job gets them from the connection only
    _, _, env = SparkJobOperator(task_id="t", job="stack_smoke", cassandra_conn_id="cassandra_test",
                                 s3_conn_id="s3_test", opensearch_conn_id=None).connection_settings()
    assert env["MAILSERVER_BLOB_DEDUPLICATION"] == "true" and env["MAILSERVER_BLOB_GENERATION_DURATION"] == "15"
    assert "MAILSERVER_BLOB_GENERATION_FAMILY" not in env
    assert blob_store_extra({}) == {"blob_deduplication": "false"}
