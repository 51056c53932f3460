"""Resolve the real backing services for a test session.

In order: endpoints given in the environment (``CASSANDRA_HOSTS``, ``OPENSEARCH_URL``,
``S3_ENDPOINT``, ``AMQP_URL``, ...); else testcontainers when a Docker engine answers a
ping; else the local stack manager (``python -m include.stack``), which starts what is not
running. There is no skip: a service that cannot be reached fails the session.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TypeVar

from include.stack.endpoints import Endpoints
from include.stack.manager import BACKENDS, StackManager
from include.stack.services.base import Service
from tests.support import clients


class StackUnavailable(RuntimeError):
    pass


def docker_engine_answers() -> bool:
    if os.environ.get("STACK_MODE", "auto") not in ("auto", "docker"):
        return False
    try:
        import docker

        docker.from_env(timeout=3).ping()
        return True
    except Exception:
        return False


def _from_containers(stack: ExitStack) -> Endpoints:
    from testcontainers.cassandra import CassandraContainer
    from testcontainers.minio import MinioContainer
    from testcontainers.opensearch import OpenSearchContainer
    from testcontainers.rabbitmq import RabbitMqContainer

    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    cassandra = stack.enter_context(CassandraContainer("cassandra:5.0.8"))
    search = stack.enter_context(OpenSearchContainer("opensearchproject/opensearch:2.19.1"))
    rabbit = stack.enter_context(RabbitMqContainer("rabbitmq:3.13-management").with_exposed_ports(5672, 15672))
    minio = stack.enter_context(MinioContainer())
    minio_cfg = minio.get_config()
    rabbit_host = rabbit.get_container_host_ip()
    return Endpoints(
        cassandra_hosts=cassandra.get_container_host_ip(),
        cassandra_port=int(cassandra.get_exposed_port(9042)),
        opensearch_url=f"http://{search.get_container_host_ip()}:{search.get_exposed_port(9200)}",
        s3_endpoint=f"http://{minio_cfg['endpoint']}",
        s3_access_key=minio_cfg["access_key"],
        s3_secret_key=minio_cfg["secret_key"],
        s3_region="us-east-1",
        amqp_url=f"amqp://guest:guest@{rabbit_host}:{rabbit.get_exposed_port(5672)}/%2F",
        rabbitmq_management_url=f"http://{rabbit_host}:{rabbit.get_exposed_port(15672)}",
        airflow_url="http://127.0.0.1:8080",
    )


def resolve(stack: ExitStack) -> tuple[Endpoints, str]:
    from_env = Endpoints.from_env()
    if from_env is not None:
        return from_env, "environment"
    if docker_engine_answers():
        return _from_containers(stack), "testcontainers"
    manager = StackManager(log=lambda _msg: None)
    try:
        manager.up(BACKENDS)
    except Exception as exc:
        raise StackUnavailable(f"the local stack could not start: {exc}") from exc
    return Endpoints.from_settings(manager.settings), "local stack"


def wait_until_answering(ep: Endpoints, timeout: float = 180.0) -> None:
    """A real request to each service; raise StackUnavailable naming the ones that fail."""
    checks = {
        "cassandra": lambda: _cassandra_ping(ep),
        "opensearch": lambda: _opensearch_ping(ep),
        "s3": lambda: clients.s3_client(ep).list_buckets(),
        "rabbitmq": lambda: clients.rabbitmq_management(ep, "/api/overview"),
    }
    deadline = time.monotonic() + timeout
    failing: dict[str, str] = {}
    while True:
        failing = {}
        for name, check in checks.items():
            try:
                check()
            except Exception as exc:
                failing[name] = f"{type(exc).__name__}: {exc}"
        if not failing or time.monotonic() > deadline:
            break
        time.sleep(2)
    if failing:
        raise StackUnavailable("services not answering: " + "; ".join(f"{k} ({v})" for k, v in failing.items()))


def _cassandra_ping(ep: Endpoints) -> None:
    cluster = clients.cassandra_cluster(ep)
    try:
        cluster.connect().execute("SELECT release_version FROM system.local")
    finally:
        cluster.shutdown()


def _opensearch_ping(ep: Endpoints) -> None:
    status = clients.opensearch_client(ep).cluster.health()["status"]
    if status == "red":
        raise RuntimeError("cluster status red")


ServiceT = TypeVar("ServiceT", bound=Service)


@contextmanager
def service_for_the_block(name: str, kind: type[ServiceT]) -> Iterator[ServiceT]:
    """A stack service outside the backends (the Spark cluster, the Cassandra cluster), ready: started for the
    block when it was not running, and then stopped; otherwise left as found (a part the block stopped, a
    cluster node say, is started again)."""
    service = StackManager(log=lambda _line: None).services[name]
    assert isinstance(service, kind)
    started = service.ensure_started()
    try:
        service.wait_ready()
        yield service
    finally:
        if started:
            service.stop()
        elif service.ensure_started():
            service.wait_ready()
