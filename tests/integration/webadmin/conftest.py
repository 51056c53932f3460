"""WebAdmin served by uvicorn on a free loopback port, on the session keyspace and the real services."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
import uvicorn

from mailserver.blob.s3 import S3Config, make_client
from mailserver.domains.cassandra import CassandraDomainList
from mailserver.maintenance.cassandra import CassandraMaintenanceStore
from mailserver.observability import checks
from mailserver.rrt.cassandra import CassandraRecipientRewriteTable
from mailserver.users.cassandra import CassandraUsersRepository
from mailserver.webadmin.app import create_app
from mailserver.webadmin.auth import AuthConfig
from mailserver.webadmin.context import WebAdminContext
from tests.support.ports import unused_port
from tests.support.uvicorn_thread import running

PASSWORD = "integration-secret"



@contextmanager
def serve(app) -> Iterator[str]:
    """Run ``app`` with uvicorn in a daemon thread; yields the base URL; stops it afterwards."""
    port = unused_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on", access_log=False))
    with running(server, timeout=20):
        yield f"http://127.0.0.1:{port}"


def backend_checks(stack, session, *, opensearch_url: str | None = None) -> list:
    s3 = S3Config(endpoint_url=stack.s3_endpoint, access_key=stack.s3_access_key, secret_key=stack.s3_secret_key,
                  region=stack.s3_region, connect_timeout=2.0, read_timeout=3.0, max_attempts=1)
    return [checks.CassandraHealthCheck(session),
            checks.OpenSearchHealthCheck(opensearch_url or stack.opensearch_url),
            checks.RabbitMQHealthCheck(stack.amqp_url),
            checks.ObjectStorageHealthCheck(make_client(s3), s3.s3_bucket(s3.default_bucket_name))]


def cassandra_context(session, stack, **kwargs) -> WebAdminContext:
    domains = CassandraDomainList(session)
    kwargs.setdefault("health_checks", backend_checks(stack, session))
    return WebAdminContext(domains=domains, users=CassandraUsersRepository(session, domains),
                           rrt=CassandraRecipientRewriteTable(session, domains),
                           maintenance=CassandraMaintenanceStore(session), auth=AuthConfig.password([PASSWORD]),
                           **kwargs)


@pytest.fixture(scope="module")
def webadmin(cassandra, stack) -> Iterator[str]:
    with serve(create_app(cassandra_context(cassandra, stack))) as url:
        yield url


@pytest.fixture
def http(webadmin) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=webadmin, headers={"Password": PASSWORD}, timeout=30) as client:
        yield client
