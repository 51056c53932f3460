"""Run WebAdmin from environment configuration (``mailserver webadmin``).

Environment:

* ``MAILSERVER_WEBADMIN_HOST`` (default ``127.0.0.1``: loopback unless the operator decides to
  expose it) and ``MAILSERVER_WEBADMIN_PORT`` (default ``8000``);
* authentication, see ``AuthConfig.from_env`` (refuses to start without any);
* backends through the shared names: ``CASSANDRA_*``, ``S3_*``, ``OPENSEARCH_URL``, ``AMQP_URL``;
* ``MAILSERVER_LOG_FORMAT`` (``console``/``json``) and ``MAILSERVER_LOG_LEVELS``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mailserver.webadmin.auth import AuthConfig

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


@dataclass(frozen=True)
class ServerConfig:
    host: str
    port: int
    auth: AuthConfig

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ServerConfig:
        env = os.environ if env is None else env
        return cls(env.get("MAILSERVER_WEBADMIN_HOST", DEFAULT_HOST),
                   int(env.get("MAILSERVER_WEBADMIN_PORT", str(DEFAULT_PORT))),
                   AuthConfig.from_env(env))


def build_context(auth: AuthConfig, env: Mapping[str, str] | None = None) -> Any:
    """Cassandra-backed ports and the health checks of every configured backend."""
    from mailserver.blob.s3 import S3Config, make_client
    from mailserver.cassandra.config import CassandraConfig
    from mailserver.cassandra.session import CassandraSession
    from mailserver.domains.cassandra import CassandraDomainList
    from mailserver.maintenance.cassandra import CassandraMaintenanceStore
    from mailserver.observability import checks
    from mailserver.rrt.cassandra import CassandraRecipientRewriteTable
    from mailserver.users.cassandra import CassandraUsersRepository
    from mailserver.webadmin.context import WebAdminContext

    env = os.environ if env is None else env
    session = CassandraSession.connect(CassandraConfig.from_env(env))
    domains = CassandraDomainList(session)
    health: list[Any] = [checks.CassandraHealthCheck(session)]
    if env.get("OPENSEARCH_URL"):
        health.append(checks.OpenSearchHealthCheck(env["OPENSEARCH_URL"]))
    if env.get("AMQP_URL"):
        health.append(checks.RabbitMQHealthCheck(env["AMQP_URL"]))
    if env.get("S3_ENDPOINT"):
        s3 = S3Config.from_env(env, connect_timeout=3.0, read_timeout=5.0, max_attempts=1)
        health.append(checks.ObjectStorageHealthCheck(make_client(s3)))
    return WebAdminContext(domains=domains, users=CassandraUsersRepository(session, domains),
                           rrt=CassandraRecipientRewriteTable(session, domains),
                           maintenance=CassandraMaintenanceStore(session), auth=auth, health_checks=health)


def serve(env: Mapping[str, str] | None = None) -> None:
    import uvicorn

    from mailserver.observability.logging import configure
    from mailserver.webadmin.app import create_app

    configure(env=env)
    config = ServerConfig.from_env(env)   # fails before connecting anywhere when auth is missing
    if config.host not in ("127.0.0.1", "::1", "localhost"):
        log.warning("WebAdmin listens on %s: make sure the network in front of it is trusted", config.host)
    app = create_app(build_context(config.auth, env))
    uvicorn.run(app, host=config.host, port=config.port, log_config=None, access_log=False)
