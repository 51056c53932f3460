"""``DagRuns`` on Airflow 3's REST API v2, with httpx.

Authentication is the auth manager's JWT: ``POST /auth/token`` with the username and password
(Airflow 3's simple auth manager, and the others that keep that endpoint) answers
``{"access_token": ...}``, sent as ``Authorization: Bearer``. The token is cached until shortly
before its ``exp`` claim and fetched again when Airflow refuses it (401/403: a restarted
api-server with a new secret, an expired token).
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx
from tenacity import (
    RetryCallState,
    retry,
    retry_if_exception_type,
    retry_if_result,
    stop_after_attempt,
    wait_incrementing,
)

from mailserver.airflow.api import (
    REPORT_TASK,
    AirflowError,
    DagInfo,
    DagNotFound,
    DagRun,
    DagRunNotFound,
    DagRunRefused,
    DagRuns,
    DagRunState,
)
from mailserver.airflow.settings import AirflowSettings

REFRESH_MARGIN = 60.0   # seconds before ``exp`` a token is replaced
RETRIES, RETRY_PAUSE = 3, 1.0


def _last_outcome(state: RetryCallState) -> Any:
    """The last attempt's response, or its error raised again."""
    assert state.outcome is not None   # tenacity calls this after an attempt
    return state.outcome.result()


def token_expiry(token: str) -> float | None:
    """The ``exp`` claim of a JWT (unverified: only used to refresh early), None when absent."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return float(claims["exp"])
    except (IndexError, ValueError, KeyError, TypeError):
        return None


class HttpDagRuns(DagRuns):
    def __init__(self, settings: AirflowSettings, *, transport: httpx.BaseTransport | None = None) -> None:
        self.settings = settings
        self.base_url = settings.url
        self._client = httpx.Client(base_url=settings.url, timeout=settings.http_timeout, transport=transport)
        self._lock = threading.Lock()
        self._token: str | None = None
        self._expires: float | None = None
        # The last attempt's answer or error is the call's, whatever it is.
        self._authorized_with_retries = retry(
            retry=retry_if_exception_type(httpx.HTTPError) | retry_if_result(lambda r: r.status_code >= 500),
            stop=stop_after_attempt(RETRIES), wait=wait_incrementing(start=RETRY_PAUSE, increment=RETRY_PAUSE),
            retry_error_callback=_last_outcome)(self._authorized)

    def close(self) -> None:
        self._client.close()

    # ------------------------------------------------------------------ auth
    def _bearer(self, *, renew: bool = False) -> str:
        with self._lock:
            stale = self._expires is not None and time.time() > self._expires - REFRESH_MARGIN
            if renew or self._token is None or stale:
                self._token = self._login()
                self._expires = token_expiry(self._token)
            return self._token

    def _login(self) -> str:
        try:
            response = self._client.post("/auth/token", json={"username": self.settings.username,
                                                              "password": self.settings.password})
        except httpx.HTTPError as exc:
            raise AirflowError(f"Airflow at {self.base_url} is unreachable: {exc}") from exc
        if response.status_code not in (200, 201):
            raise AirflowError(f"Airflow refused the credentials of {self.settings.username!r} "
                               f"(POST /auth/token answered {response.status_code}: {_detail(response)})")
        return str(response.json()["access_token"])

    def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One API call; a refused token is renewed once, a transient failure retried.

        Every call of this adapter is idempotent (the trigger names its run), so a timeout or a
        5xx (the api-server's database busy with the scheduler's locks) is simply tried again.
        """
        try:
            response = self._authorized_with_retries(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise AirflowError(f"Airflow at {self.base_url} is unreachable: {exc}") from exc
        if response.status_code in (401, 403):
            raise AirflowError(f"Airflow refused {method} {path} ({response.status_code}: {_detail(response)})")
        if response.status_code >= 500:
            raise AirflowError(f"Airflow failed {method} {path} ({response.status_code}: {_detail(response)})")
        return response

    def _authorized(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        for renew in (False, True):
            headers = {"Authorization": f"Bearer {self._bearer(renew=renew)}"}
            response = self._client.request(method, path, headers=headers, **kwargs)
            if response.status_code not in (401, 403):
                break
        return response

    # ------------------------------------------------------------------ port
    def dag(self, dag_id: str) -> DagInfo:
        response = self._call("GET", f"/api/v2/dags/{_seg(dag_id)}/details")
        if response.status_code == 404:
            raise DagNotFound(f"Airflow has no DAG {dag_id}")
        body = _ok(response, f"reading DAG {dag_id}")
        return DagInfo(dag_id, frozenset(body.get("params") or {}), bool(body.get("is_paused")))

    def trigger(self, dag_id: str, run_id: str, conf: Mapping[str, Any]) -> DagRun:
        # ``logical_date: null``: a manual run with no data interval (Airflow 3), so two runs may
        # start in the same instant; the run id is ours, which makes a repeated trigger harmless.
        response = self._call("POST", f"/api/v2/dags/{_seg(dag_id)}/dagRuns",
                              json={"dag_run_id": run_id, "logical_date": None, "conf": dict(conf)})
        if response.status_code == 409:
            return self.get(dag_id, run_id)
        if response.status_code == 404:
            raise DagNotFound(f"Airflow has no DAG {dag_id}: {_detail(response)}")
        if response.status_code >= 400:
            raise DagRunRefused(f"Airflow refused the run of {dag_id} ({response.status_code}: {_detail(response)})")
        return _run(_ok(response, f"triggering {dag_id}"))

    def get(self, dag_id: str, run_id: str) -> DagRun:
        response = self._call("GET", f"/api/v2/dags/{_seg(dag_id)}/dagRuns/{_seg(run_id)}")
        if response.status_code == 404:
            raise DagRunNotFound(f"Airflow has no run {run_id} of DAG {dag_id}")
        return _run(_ok(response, f"reading run {run_id} of {dag_id}"))

    def report(self, dag_id: str, run_id: str) -> dict[str, Any] | None:
        response = self._call("GET", f"/api/v2/dags/{_seg(dag_id)}/dagRuns/{_seg(run_id)}/taskInstances/"
                                     f"{REPORT_TASK}/xcomEntries/return_value")
        if response.status_code == 404:
            return None
        value = _ok(response, f"reading the report of run {run_id}").get("value")
        if isinstance(value, str):   # the API returns the value as stored: JSON text for a dict
            value = json.loads(value)
        if value is not None and not isinstance(value, dict):
            raise AirflowError(f"the report of run {run_id} of {dag_id} is not an object: {value!r}")
        return value

    def cancel(self, dag_id: str, run_id: str) -> DagRun:
        run = self.get(dag_id, run_id)
        if run.state.finished:
            return run
        response = self._call("PATCH", f"/api/v2/dags/{_seg(dag_id)}/dagRuns/{_seg(run_id)}",
                              params={"update_mask": "state"}, json={"state": DagRunState.FAILED.value})
        if response.status_code == 404:
            raise DagRunNotFound(f"Airflow has no run {run_id} of DAG {dag_id}")
        return _run(_ok(response, f"canceling run {run_id} of {dag_id}"))


def _seg(value: str) -> str:
    return quote(value, safe="")


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except ValueError:
        detail = None
    return str(detail if detail is not None else response.text[:500])


def _ok(response: httpx.Response, what: str) -> dict[str, Any]:
    if response.status_code >= 400:
        raise AirflowError(f"Airflow answered {response.status_code} {what}: {_detail(response)}")
    return response.json()


def _run(body: Mapping[str, Any]) -> DagRun:
    try:
        state = DagRunState(body["state"])
    except ValueError as exc:
        raise AirflowError(f"unknown DAG run state {body.get('state')!r}") from exc
    return DagRun(body["dag_id"], body["dag_run_id"], state, body.get("conf") or {})
