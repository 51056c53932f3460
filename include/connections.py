"""The Airflow connections of the platform, defined here and nowhere else.

DAG files name connection ids only (``cassandra_default``, ...); hosts, ports and secrets come
from ``AIRFLOW_CONN_*`` variables built from the service endpoints by ``airflow_connections``.
The local stack exports them for its Airflow processes and in ``.stack/env.sh``; tests export
them in ``conftest.py``; docker-compose sets the same ids to its service names.
"""

from __future__ import annotations

import json
import os
from urllib.parse import unquote, urlsplit

from include.stack.endpoints import Endpoints
from mailserver.cassandra.config import DEFAULT_KEYSPACE

SPARK_CONN_ID = "spark_default"
CASSANDRA_CONN_ID = "cassandra_default"
S3_CONN_ID = "s3_default"
OPENSEARCH_CONN_ID = "opensearch_default"
RABBITMQ_CONN_ID = "rabbitmq_default"
RABBITMQ_MANAGEMENT_CONN_ID = "rabbitmq_management"
WEBADMIN_CONN_ID = "webadmin_default"


def _env_var(conn_id: str) -> str:
    return "AIRFLOW_CONN_" + conn_id.upper()


def blob_store_extra(env: dict[str, str] | None = None) -> dict[str, str]:
    """The server's blob ids and deletes (``MAILSERVER_BLOB_*``, mailserver/blob/config.py), carried by
    the S3 connection so that Spark jobs writing or deleting mail blobs behave as the server."""
    env = dict(os.environ) if env is None else env
    extra = {"blob_deduplication": env.get("MAILSERVER_BLOB_DEDUPLICATION", "").strip() or "false"}
    for key, var in (("blob_generation_family", "MAILSERVER_BLOB_GENERATION_FAMILY"),
                     ("blob_generation_duration", "MAILSERVER_BLOB_GENERATION_DURATION")):
        if env.get(var, "").strip():
            extra[key] = env[var].strip()
    return extra


def airflow_connections(ep: Endpoints, *, spark_master: str | None = None,
                        keyspace: str | None = None,
                        webadmin_url: str | None = None,
                        webadmin_password: str | None = None) -> dict[str, str]:
    """``AIRFLOW_CONN_*`` variables (JSON form, so ``local[*]`` survives) for every service."""
    os_url = urlsplit(ep.opensearch_url)
    amqp = urlsplit(ep.amqp_url)
    mgmt = urlsplit(ep.rabbitmq_management_url)
    web = urlsplit(webadmin_url or os.environ.get("WEBADMIN_URL", "http://127.0.0.1:8000"))
    conns = {
        SPARK_CONN_ID: {"conn_type": "spark",
                        "host": spark_master or os.environ.get("SPARK_MASTER", "local[*]")},
        CASSANDRA_CONN_ID: {"conn_type": "generic", "host": ep.cassandra_hosts,
                            "port": ep.cassandra_port,
                            "schema": keyspace or os.environ.get("CASSANDRA_KEYSPACE", DEFAULT_KEYSPACE)},
        S3_CONN_ID: {"conn_type": "aws", "login": ep.s3_access_key, "password": ep.s3_secret_key,
                     "extra": {"endpoint_url": ep.s3_endpoint, "region_name": ep.s3_region,
                               "addressing_style": "path", **blob_store_extra()}},
        OPENSEARCH_CONN_ID: {"conn_type": "generic", "host": os_url.hostname, "port": os_url.port,
                             "schema": os_url.scheme},
        RABBITMQ_CONN_ID: {"conn_type": "generic", "host": amqp.hostname, "port": amqp.port,
                           "login": amqp.username, "password": amqp.password,
                           "extra": {"vhost": amqp.path.lstrip("/") or "%2F",
                                     "management_url": f"{mgmt.scheme}://{mgmt.netloc}"}},
        # The management HTTP API and the AMQP endpoint of one vhost, for RabbitMQManagementHook.
        RABBITMQ_MANAGEMENT_CONN_ID: {"conn_type": "http", "host": mgmt.hostname, "port": mgmt.port,
                                      "schema": mgmt.scheme, "login": unquote(amqp.username or ""),
                                      "password": unquote(amqp.password or ""),
                                      "extra": {"vhost": unquote(amqp.path.lstrip("/")) or "/",
                                                "amqp_host": amqp.hostname, "amqp_port": amqp.port}},
        WEBADMIN_CONN_ID: {"conn_type": "http", "host": web.hostname, "port": web.port,
                           "schema": web.scheme,
                           "password": webadmin_password or os.environ.get("WEBADMIN_PASSWORD", "")},
    }
    return {_env_var(cid): json.dumps(conn) for cid, conn in conns.items()}
