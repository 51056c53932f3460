"""WebAdmin's listening settings from the environment (the role itself: ``mailserver.runtime.roles``).

Environment:

* ``MAILSERVER_WEBADMIN_HOST`` (default ``127.0.0.1``: loopback unless the operator decides to
  expose it) and ``MAILSERVER_WEBADMIN_PORT`` (default ``8000``);
* authentication, see ``AuthConfig.from_env`` (refuses to start without any);
* backends through the shared names: ``CASSANDRA_*``, ``S3_*``, ``OPENSEARCH_URL``, ``AMQP_URL``;
* ``MAILSERVER_LOG_FORMAT`` (``console``/``json``) and ``MAILSERVER_LOG_LEVELS``;
* ``MAILSERVER_WEBADMIN_MAX_HEADER_BYTES`` (default 16384: request line and header fields) and
  ``MAILSERVER_WEBADMIN_MAX_HEADERS`` (default 100): past either, ``431`` (``header_limits``);
  a head still incomplete past the byte limit is cut by the HTTP parser (``400``, connection closed);
* ``MAILSERVER_WEBADMIN_DOCS`` (default ``true``): ``false`` serves no ``/docs`` page.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mailserver.settings import WebAdminSettings
from mailserver.webadmin.auth import AuthConfig
from mailserver.webadmin.header_limits import DEFAULT_MAX_HEADER_BYTES, DEFAULT_MAX_HEADERS

if TYPE_CHECKING:
    import uvicorn

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


@dataclass(frozen=True)
class ServerConfig:
    host: str
    port: int
    auth: AuthConfig
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    max_headers: int = DEFAULT_MAX_HEADERS
    docs: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ServerConfig:
        s = WebAdminSettings.from_env(env)
        return cls(s.host, s.port, AuthConfig.from_env(env), max_header_bytes=s.max_header_bytes,
                   max_headers=s.max_headers, docs=s.docs)


def uvicorn_config(app: Any, config: ServerConfig, **options: Any) -> uvicorn.Config:
    """The server of ``app``: h11, whose parser bounds an incomplete request head (httptools has no such
    limit), at the configured head size; ``options`` as ``uvicorn.Config`` takes them."""
    import uvicorn

    return uvicorn.Config(app, host=config.host, port=config.port, http="h11",
                          h11_max_incomplete_event_size=config.max_header_bytes, **options)
