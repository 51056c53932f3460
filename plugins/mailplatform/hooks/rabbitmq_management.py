"""RabbitMQ's management HTTP API, and the AMQP URL of the same vhost, from one Airflow connection.

Connection (``rabbitmq_management`` by default, defined in ``include/connections.py``):
``conn_type`` http, ``host``, ``port`` (15672), ``schema`` (http/https), ``login`` and
``password`` (the broker user, used for both the HTTP API and AMQP) and ``extra``:
``{"vhost": "/", "amqp_host": ..., "amqp_port": 5672, "amqp_scheme": "amqp"}`` (the AMQP keys
default to the connection's host, 5672 and amqp). Nothing is read or opened before the first call,
so building the hook in a DAG file costs no I/O.

The hook answers what procedures ask the broker: a queue's depth, the queues and bindings of the
vhost (``get`` and ``vhost`` make it usable wherever the server's ``RabbitMQManagement`` is, e.g.
``RegisteredGroups``), deleting a queue only when it is empty, the broker's resource alarms, and
the AMQP URL for what the HTTP API cannot do safely (consuming with acks, confirmed publishing).

Management statistics (message counts) are refreshed by the broker every few seconds
(``collect_statistics_interval``, 5 s by default): a depth read here may lag that much behind.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx
from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowException

DEFAULT_CONN_ID = "rabbitmq_management"


class RabbitMQManagementError(AirflowException):
    """A 4xx/5xx answer of the management API, with RabbitMQ's ``error`` / ``reason``."""

    def __init__(self, method: str, path: str, status_code: int, body: Mapping[str, Any] | None, text: str) -> None:
        # AirflowException's status_code is an HTTPStatus: this one is the remote API's answer, any int.
        self.status_code = status_code  # type: ignore[assignment]
        self.method, self.path = method, path
        self.body = dict(body or {})
        self.reason = str(self.body.get("reason") or self.body.get("error") or text.strip() or "(empty body)")
        super().__init__(f"RabbitMQ management {method} {path} answered {status_code}: {self.reason}")


def _raise_for_status(response: httpx.Response) -> None:
    if response.status_code >= 400:
        try:
            body = response.json()
        except ValueError:
            body = None
        raise RabbitMQManagementError(response.request.method, response.request.url.path, response.status_code,
                                      body if isinstance(body, dict) else None, response.text)


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
        self._client: httpx.Client | None = None
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

    def get_conn(self) -> httpx.Client:
        if self._client is None:
            base_url, auth, _, _ = self._resolved()
            self._client = httpx.Client(base_url=base_url, auth=auth, timeout=self.timeout,
                                        headers={"Accept": "application/json"})
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

    def _vhost_path(self) -> str:
        return quote(self.vhost, safe="")

    def _queue_path(self, queue: str) -> str:
        return f"/api/queues/{self._vhost_path()}/{quote(queue, safe='')}"

    # -- raw ----------------------------------------------------------------------------------
    def get(self, path: str) -> Any:
        """GET a management path (``/api/...``, already escaped); the decoded JSON."""
        response = self.get_conn().get(path)
        _raise_for_status(response)
        return response.json()

    # -- queues -------------------------------------------------------------------------------
    def queue(self, name: str) -> dict[str, Any] | None:
        """The queue's management record (``messages``, ``messages_ready``, ``consumers``...), None if absent."""
        response = self.get_conn().get(self._queue_path(name))
        if response.status_code == 404:
            return None
        _raise_for_status(response)
        return response.json()

    def queue_depth(self, name: str, *, include_unacknowledged: bool = True) -> int | None:
        """Messages in the queue (ready, plus delivered but not acknowledged by default); None if absent."""
        info = self.queue(name)
        if info is None:
            return None
        return queue_depth_of(info, include_unacknowledged=include_unacknowledged)

    def queues(self, columns: tuple[str, ...] = ("name", "messages", "consumers")) -> list[dict[str, Any]]:
        return self.get(f"/api/queues/{self._vhost_path()}?columns={','.join(columns)}")

    def bindings(self) -> list[dict[str, Any]]:
        return self.get(f"/api/bindings/{self._vhost_path()}")

    def delete_queue_if_empty(self, name: str) -> bool:
        """Delete the queue only if it holds no message (the broker decides, atomically).

        True when deleted or already absent; False when it was not empty (nothing is deleted).
        """
        response = self.get_conn().delete(self._queue_path(name), params={"if-empty": "true"})
        if response.status_code in (200, 201, 204, 404):
            return True
        if response.status_code == 400:   # RabbitMQ: "precondition_failed ... not empty"
            return False
        _raise_for_status(response)
        return False

    # -- broker health ------------------------------------------------------------------------
    def vhost_exists(self) -> bool:
        response = self.get_conn().get(f"/api/vhosts/{self._vhost_path()}")
        if response.status_code == 404:
            return False
        _raise_for_status(response)
        return True

    def alarms(self) -> list[str]:
        """The broker's resource alarms (memory, disk): publishers block while any is raised. [] when none."""
        response = self.get_conn().get("/api/health/checks/alarms")
        if response.status_code == 200:
            return []
        if response.status_code == 503:
            body = response.json()
            alarms = body.get("alarms") or []
            return [f"{a.get('resource', '?')} alarm on {a.get('node', '?')}" for a in alarms] or [
                str(body.get("reason") or "resource alarm")]
        _raise_for_status(response)
        return []


def queue_depth_of(info: Mapping[str, Any], *, include_unacknowledged: bool = True) -> int:
    """The depth of a queue record. A queue whose statistics are not collected yet counts as its ready messages."""
    ready = int(info.get("messages_ready") or 0)
    if not include_unacknowledged:
        return ready
    if info.get("messages") is not None:
        return int(info["messages"])
    return ready + int(info.get("messages_unacknowledged") or 0)
