"""The mail server's WebAdmin (James's admin API) from the ``webadmin_default`` Airflow connection.

Connection: ``conn_type`` http, ``host``, ``port``, ``schema`` (the URL scheme), ``password``
(sent in James's ``Password`` header) and optionally ``extra={"jwt": "<token>"}`` (sent as
``Authorization: Bearer``). Nothing is read or opened before the first request, so building a
hook in a DAG file costs no I/O.

The health helpers below are module functions because the deferrable sensor's trigger runs in
the triggerer with ``httpx.AsyncClient`` and must judge a report exactly as the hook does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx
from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowException

DEFAULT_CONN_ID = "webadmin_default"
# James answers /healthcheck with 200 (healthy, or degraded when relaxed) or 503 (unhealthy), both with a body.
HEALTH_CODES = frozenset({200, 503})


class WebAdminApiError(AirflowException):
    """A 4xx/5xx answer; carries James's error JSON (``statusCode``, ``type``, ``message``, ``details``).

    Authentication failures are plain text in James (``Wrong password.``): then ``type`` is None
    and ``message`` is that text.
    """

    def __init__(self, method: str, path: str, status_code: int, body: Mapping[str, Any] | None, text: str) -> None:
        # AirflowException's status_code is an HTTPStatus: this one is the remote API's answer, any int.
        self.status_code = status_code  # type: ignore[assignment]
        self.method, self.path = method, path
        self.body: dict[str, Any] = dict(body or {})
        self.type: str | None = self.body.get("type")
        self.message: str = str(self.body.get("message") or text.strip() or "(empty body)")
        self.details: str | None = self.body.get("details")
        detail = f" ({self.details})" if self.details else ""
        kind = f"{self.type}: " if self.type else ""
        super().__init__(f"WebAdmin {method} {path} answered {status_code}: {kind}{self.message}{detail}")


def client_settings(conn: Any) -> tuple[str, dict[str, str]]:
    """Base URL and auth headers of an Airflow connection (shared with the async trigger)."""
    scheme = conn.schema or "http"
    host = conn.host or "127.0.0.1"
    base_url = host if "://" in host else f"{scheme}://{host}"
    if conn.port:
        base_url = f"{base_url}:{conn.port}"
    headers = {"Accept": "application/json"}
    if conn.password:
        headers["Password"] = conn.password
    token = (conn.extra_dejson or {}).get("jwt")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return base_url, headers


def health_request(component: str | None = None, checks: Sequence[str] | None = None) -> tuple[str, dict[str, Any]]:
    """Path and query of a health call: one component, a selection (``?check=``), or everything."""
    if component is not None:
        # James escapes names with %20 ("Cassandra%20backend"); a "/" in a name must not split the path.
        return "/healthcheck/checks/" + quote(component, safe=""), {}
    return "/healthcheck", ({"check": list(checks)} if checks else {})


def raise_for_status(response: httpx.Response) -> None:
    if response.status_code >= 400:
        try:
            body = response.json()
        except ValueError:
            body = None
        raise WebAdminApiError(response.request.method, response.request.url.path, response.status_code,
                               body if isinstance(body, dict) else None, response.text)


def health_body(response: httpx.Response) -> dict[str, Any]:
    """The health report; 503 is an answer (unhealthy), not an error. 404 (unknown component) raises."""
    if response.status_code not in HEALTH_CODES:
        raise_for_status(response)
    try:
        return response.json()
    except ValueError:   # e.g. a proxy's 503 page: not James's report
        raise_for_status(response)
        raise


def failing_components(body: Mapping[str, Any], accept_degraded: bool = False) -> list[dict[str, Any]]:
    """The components of a report (aggregate or single) that are not good enough."""
    accepted = {"healthy", "degraded"} if accept_degraded else {"healthy"}
    components = body["checks"] if "checks" in body else [body]
    failing = [dict(c) for c in components if c.get("status") not in accepted]
    if not failing and body.get("status") not in accepted:   # never trust a report we cannot read as good
        failing.append({"componentName": "(aggregate)", "status": body.get("status"), "cause": None})
    return failing


def describe(failing: Sequence[Mapping[str, Any]]) -> str:
    """``"OpenSearch Backend is unhealthy (red); MaintenanceMode is degraded (...)"``, for logs and errors."""
    return "; ".join(f"{c.get('componentName')} is {c.get('status')}" + (f" ({c['cause']})" if c.get("cause") else "")
                     for c in failing)


class WebAdminHook(BaseHook):
    """Sync client of WebAdmin: health, maintenance mode and tasks. Use as a context manager or ``close()``."""

    conn_name_attr = "webadmin_conn_id"
    default_conn_name = DEFAULT_CONN_ID
    conn_type = "http"
    hook_name = "WebAdmin (mail platform)"

    def __init__(self, webadmin_conn_id: str = DEFAULT_CONN_ID, *, timeout: float = 30.0,
                 connect_timeout: float = 10.0) -> None:
        super().__init__()
        self.webadmin_conn_id = webadmin_conn_id
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._client: httpx.Client | None = None

    def get_conn(self) -> httpx.Client:
        if self._client is None:
            base_url, headers = client_settings(self.get_connection(self.webadmin_conn_id))
            self._client = httpx.Client(base_url=base_url, headers=headers,
                                        timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout))
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> WebAdminHook:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.get_conn().request(method, path, **kwargs)
        raise_for_status(response)
        return response.json() if response.content else None

    # -- health -------------------------------------------------------------------------------
    def health(self, component: str | None = None, *, checks: Sequence[str] | None = None) -> dict[str, Any]:
        """``GET /healthcheck`` (optionally ``?check=`` a selection) or ``/healthcheck/checks/{component}``."""
        path, params = health_request(component, checks)
        return health_body(self.get_conn().get(path, params=params))

    # -- maintenance mode (our extension: GET/PUT/DELETE /maintenance) ------------------------
    def maintenance_state(self) -> dict[str, Any]:
        """``{"enabled": bool, "since": iso|None, "reason": str|None, "updatedBy": str|None,
        "expiresAt": iso|None}`` (``expiresAt``: when the server leaves maintenance by itself)."""
        return self._call("GET", "/maintenance")

    def enable_maintenance(self, reason: str | None = None, max_duration_seconds: int | None = None) -> dict[str, Any]:
        """With ``max_duration_seconds`` the server leaves maintenance by itself once that time has passed."""
        body: dict[str, Any] = {"reason": reason}
        if max_duration_seconds is not None:
            body["maxDurationSeconds"] = max_duration_seconds
        return self._call("PUT", "/maintenance", json=body)

    def disable_maintenance(self) -> dict[str, Any]:
        """Idempotent on the server: switching off an already-off cluster answers 200."""
        return self._call("DELETE", "/maintenance")

    # -- tasks --------------------------------------------------------------------------------
    def get_task(self, task_id: str) -> dict[str, Any]:
        return self._call("GET", f"/tasks/{task_id}")

    def await_task(self, task_id: str, timeout: float) -> dict[str, Any]:
        """The report once the task finished; ``WebAdminApiError`` with status 408 when ``timeout`` passes."""
        seconds = max(0, math.ceil(timeout))
        # The server holds the request for up to `seconds`: the read timeout must outlast it.
        read = httpx.Timeout(seconds + self.timeout, connect=self.connect_timeout)
        return self._call("GET", f"/tasks/{task_id}/await", params={"timeout": f"{seconds}s"}, timeout=read)
