"""RabbitMQ's management HTTP API, and the AMQP URL of the same vhost, from one Airflow connection.

Connection (``rabbitmq_management`` by default, defined in ``include/connections.py``):
``conn_type`` http, ``host``, ``port`` (15672), ``schema`` (http/https), ``login`` and
``password`` (the broker user, used for both the HTTP API and AMQP) and ``extra``:
``{"vhost": "/", "amqp_host": ..., "amqp_port": 5672, "amqp_scheme": "amqp"}`` (the AMQP keys
default to the connection's host, 5672 and amqp). Nothing is read or opened before the first call,
so building the hook in a DAG file costs no I/O.

The hook answers what procedures ask the broker through the server's own client
(``mailserver.rabbitmq_management.RabbitMQManagement``, which it returns from ``get_conn``): a
queue's depth, the queues and bindings of the vhost (``get`` and ``vhost`` make it usable wherever
that client is, e.g. ``RegisteredGroups``), deleting a queue only when it is empty, the broker's
resource alarms. It adds the Airflow connection, Airflow's kind of error, and the AMQP URL for
what the HTTP API cannot do safely (consuming with acks, confirmed publishing).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any
from urllib.parse import quote

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowException

from mailserver.rabbitmq_management import ManagementAPIError, RabbitMQManagement, queue_depth_of

__all__ = ["DEFAULT_CONN_ID", "RabbitMQManagementError", "RabbitMQManagementHook", "connection_settings",
           "queue_depth_of"]

DEFAULT_CONN_ID = "rabbitmq_management"


class RabbitMQManagementError(ManagementAPIError, AirflowException):  # type: ignore[misc]
    """A 4xx/5xx answer of the management API, with RabbitMQ's ``error`` / ``reason``; an Airflow error."""

    def __init__(self, method: str, path: str, status_code: int, body: Mapping[str, Any] | None, text: str) -> None:
        ManagementAPIError.__init__(self, method, path, status_code, body, text)


class _AirflowManagement(RabbitMQManagement):
    error_type = RabbitMQManagementError


def connection_settings(conn: Any) -> tuple[str, tuple[str, str], str, str]:
    """Base URL, HTTP credentials, vhost name and AMQP URL of a ``rabbitmq_management`` connection."""
    extra = conn.extra_dejson or {}
    host = conn.host or "127.0.0.1"
    scheme = conn.schema or "http"
    base_url = host if "://" in host else f"{scheme}://{host}"
    if conn.port:
        base_url = f"{base_url}:{conn.port}"
    user, password = conn.login or "guest", conn.password or "guest"
    vhost = str(extra.get("vhost") or "/")
    amqp_host = extra.get("amqp_host") or (host.split("://", 1)[-1])
    amqp_url = (f"{extra.get('amqp_scheme', 'amqp')}://{quote(user, safe='')}:{quote(password, safe='')}"
                f"@{amqp_host}:{int(extra.get('amqp_port') or 5672)}/{quote(vhost, safe='')}")
    return base_url, (user, password), vhost, amqp_url


class RabbitMQManagementHook(BaseHook):
    """Sync client of one vhost. Use as a context manager or ``close()``."""

    conn_name_attr = "rabbitmq_conn_id"
    default_conn_name = DEFAULT_CONN_ID
    conn_type = "http"
    hook_name = "RabbitMQ management (mail platform)"

    def __init__(self, rabbitmq_conn_id: str = DEFAULT_CONN_ID, *, timeout: float = 30.0) -> None:
        super().__init__()
        self.rabbitmq_conn_id = rabbitmq_conn_id
        self.timeout = timeout
        self._client: RabbitMQManagement | None = None
        self._settings: tuple[str, tuple[str, str], str, str] | None = None

    # -- connection ---------------------------------------------------------------------------
    def _resolved(self) -> tuple[str, tuple[str, str], str, str]:
        if self._settings is None:
            self._settings = connection_settings(self.get_connection(self.rabbitmq_conn_id))
        return self._settings

    @property
    def vhost(self) -> str:
        return self._resolved()[2]

    def amqp_url(self) -> str:
        """``amqp://user:password@host:port/<vhost>``: a secret, never log it."""
        return self._resolved()[3]

    def get_conn(self) -> RabbitMQManagement:
        if self._client is None:
            base_url, _, _, amqp_url = self._resolved()
            self._client = _AirflowManagement(base_url, amqp_url, timeout=self.timeout)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> RabbitMQManagementHook:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- the client's calls -------------------------------------------------------------------
    def get(self, path: str) -> Any:
        """GET a management path (``/api/...``, already escaped); the decoded JSON."""
        return self.get_conn().get(path)

    def queue(self, name: str) -> dict[str, Any] | None:
        """The queue's management record (``messages``, ``messages_ready``, ``consumers``...), None if absent."""
        return self.get_conn().queue(name)

    def queue_depth(self, name: str, *, include_unacknowledged: bool = True) -> int | None:
        """Messages in the queue (ready, plus delivered but not acknowledged by default); None if absent."""
        return self.get_conn().queue_depth(name, include_unacknowledged=include_unacknowledged)

    def queues(self, columns: tuple[str, ...] = ("name", "messages", "consumers")) -> list[dict[str, Any]]:
        return self.get_conn().queues(columns)

    def bindings(self) -> list[dict[str, Any]]:
        return self.get_conn().bindings()

    def delete_queue_if_empty(self, name: str) -> bool:
        """Delete the queue only if it holds no message: True when deleted or absent, False when not empty."""
        return self.get_conn().delete_queue_if_empty(name)

    def vhost_exists(self) -> bool:
        return self.get_conn().vhost_exists()

    def alarms(self) -> list[str]:
        """The broker's resource alarms (memory, disk): publishers block while any is raised. [] when none."""
        return self.get_conn().alarms()
