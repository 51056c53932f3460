"""WebAdmin's listening settings from the environment (the role itself: ``mailserver.runtime.roles``).

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
