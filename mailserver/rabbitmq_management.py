"""The client of RabbitMQ's management HTTP API for one vhost, as James uses it.

Shared by the mail queues and the event bus (registered groups), so it stands below both; the
Airflow hook of ``plugins/mailplatform`` builds on it too. It answers a queue's record and depth,
the queues and bindings of the vhost, deleting a queue only when it is empty, and the broker's
resource alarms. The vhost and the credentials come from the AMQP URL of the same broker.

An answer of 400 or more raises ``ManagementAPIError`` with RabbitMQ's ``reason``; a broker that
cannot be reached raises httpx's ``TransportError``. Management statistics (message counts) are
refreshed by the broker every few seconds (``collect_statistics_interval``, 5 s by default): a
depth read here may lag that much behind.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any, ClassVar
from urllib.parse import quote

import httpx
import pika


class ManagementAPIError(Exception):
    """A 4xx/5xx answer of the management API, with RabbitMQ's ``error`` / ``reason``."""

    def __init__(self, method: str, path: str, status_code: int, body: Mapping[str, Any] | None, text: str) -> None:
        self.status_code = status_code
        self.method, self.path = method, path
        self.body = dict(body or {})
        self.reason = str(self.body.get("reason") or self.body.get("error") or text.strip() or "(empty body)")
        super().__init__(f"RabbitMQ management {method} {path} answered {status_code}: {self.reason}")


class RabbitMQManagement:
    """Sync client of the vhost of ``amqp_url``. Building it does no I/O; ``close()`` ends its connections."""

    # What a 4xx/5xx answer raises: a subclass may raise its framework's own kind.
    error_type: ClassVar[type[ManagementAPIError]] = ManagementAPIError

    def __init__(self, management_url: str, amqp_url: str, timeout: float = 10.0) -> None:
        params = pika.URLParameters(amqp_url)
        credentials = params.credentials
        if not isinstance(credentials, pika.PlainCredentials):
            raise ValueError("the management API needs the user and password of the AMQP URL")
        self.base = management_url.rstrip("/")
        self.vhost: str = params.virtual_host
        self.timeout = timeout
        self._http = httpx.Client(base_url=self.base, auth=(credentials.username, credentials.password),
                                  timeout=timeout, headers={"Accept": "application/json"})

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RabbitMQManagement:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _vhost_path(self) -> str:
        return quote(self.vhost, safe="")

    def _queue_path(self, queue: str) -> str:
        return f"/api/queues/{self._vhost_path()}/{quote(queue, safe='')}"

    def _raise_for_status(self, response: httpx.Response) -> None:
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = None
            raise self.error_type(response.request.method, response.request.url.path, response.status_code,
                                  body if isinstance(body, dict) else None, response.text)

    # -- raw ----------------------------------------------------------------------------------
    def get(self, path: str) -> Any:
        """GET a management path (``/api/...``, already escaped); the decoded JSON."""
        response = self._http.get(path)
        self._raise_for_status(response)
        return response.json()

    # -- queues -------------------------------------------------------------------------------
    def queue_names(self) -> list[str]:
        """Every queue name of the vhost."""
        return [row["name"] for row in self.queues(columns=("name",))]

    def queues(self, columns: tuple[str, ...] = ("name", "messages", "consumers")) -> list[dict[str, Any]]:
        return self.get(f"/api/queues/{self._vhost_path()}?columns={','.join(columns)}")

    def bindings(self) -> list[dict[str, Any]]:
        return self.get(f"/api/bindings/{self._vhost_path()}")

    def queue(self, name: str) -> dict[str, Any] | None:
        """The queue's management record (``messages``, ``messages_ready``, ``consumers``...), None if absent."""
        response = self._http.get(self._queue_path(name))
        if response.status_code == 404:
            return None
        self._raise_for_status(response)
        return response.json()

    def queue_depth(self, name: str, *, include_unacknowledged: bool = True) -> int | None:
        """Messages in the queue (ready, plus delivered but not acknowledged by default); None if absent."""
        info = self.queue(name)
        if info is None:
            return None
        return queue_depth_of(info, include_unacknowledged=include_unacknowledged)

    def delete_queue_if_empty(self, name: str) -> bool:
        """Delete the queue only if it holds no message (the broker decides, atomically).

        True when deleted or already absent; False when it was not empty (nothing is deleted).
        """
        response = self._http.delete(self._queue_path(name), params={"if-empty": "true"})
        if response.status_code in (200, 201, 204, 404):
            return True
        if response.status_code == 400:   # RabbitMQ: "precondition_failed ... not empty"
            return False
        self._raise_for_status(response)
        return False

    # -- broker health ------------------------------------------------------------------------
    def vhost_exists(self) -> bool:
        response = self._http.get(f"/api/vhosts/{self._vhost_path()}")
        if response.status_code == 404:
            return False
        self._raise_for_status(response)
        return True

    def alarms(self) -> list[str]:
        """The broker's resource alarms (memory, disk): publishers block while any is raised. [] when none."""
        response = self._http.get("/api/health/checks/alarms")
        if response.status_code == 200:
            return []
        if response.status_code == 503:
            body = response.json()
            alarms = body.get("alarms") or []
            return [f"{a.get('resource', '?')} alarm on {a.get('node', '?')}" for a in alarms] or [
                str(body.get("reason") or "resource alarm")]
        self._raise_for_status(response)
        return []


def queue_depth_of(info: Mapping[str, Any], *, include_unacknowledged: bool = True) -> int:
    """The depth of a queue record. A queue whose statistics are not collected yet counts as its ready messages."""
    ready = int(info.get("messages_ready") or 0)
    if not include_unacknowledged:
        return ready
    if info.get("messages") is not None:
        return int(info["messages"])
    return ready + int(info.get("messages_unacknowledged") or 0)
