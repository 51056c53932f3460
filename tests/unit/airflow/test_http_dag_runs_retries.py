"""HttpDagRuns retries a timeout or a 5xx (every call is idempotent), and only those, RETRIES times in all."""

from __future__ import annotations

import httpx
import pytest

from mailserver.airflow import http
from mailserver.airflow.api import AirflowError, DagNotFound
from mailserver.airflow.http import RETRIES, HttpDagRuns
from mailserver.airflow.settings import AirflowSettings

DAG = {"dag_id": "d", "params": {}, "is_paused": False}


def dag_runs(monkeypatch: pytest.MonkeyPatch, answers: list[httpx.Response | Exception]) -> tuple[HttpDagRuns, list]:
    """An adapter whose API calls get ``answers`` in turn (the last one again once they run out)."""
    monkeypatch.setattr(http, "RETRY_PAUSE", 0.0)   # read when the adapter is built
    calls: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/auth/token":
            return httpx.Response(200, json={"access_token": "t"})
        calls.append(request.url.path)
        answer = answers[min(len(calls), len(answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer

    settings = AirflowSettings("http://airflow.test", "admin", "pw")
    return HttpDagRuns(settings, transport=httpx.MockTransport(handle)), calls


def test_a_5xx_then_a_timeout_are_tried_again_until_an_answer(monkeypatch):
    runs, calls = dag_runs(monkeypatch, [httpx.Response(503), httpx.ReadTimeout("slow"), httpx.Response(200, json=DAG)])
    assert runs.dag("d").dag_id == "d"
    assert len(calls) == 3 == RETRIES


def test_a_5xx_every_time_fails_after_the_last_attempt(monkeypatch):
    runs, calls = dag_runs(monkeypatch, [httpx.Response(503, json={"detail": "database is locked"})])
    with pytest.raises(AirflowError, match=r"Airflow failed GET .*\(503: database is locked\)"):
        runs.dag("d")
    assert len(calls) == RETRIES


def test_an_unreachable_airflow_fails_after_the_last_attempt(monkeypatch):
    runs, calls = dag_runs(monkeypatch, [httpx.ConnectError("refused")])
    with pytest.raises(AirflowError, match="is unreachable: refused"):
        runs.dag("d")
    assert len(calls) == RETRIES


def test_a_4xx_is_an_answer_not_retried(monkeypatch):
    runs, calls = dag_runs(monkeypatch, [httpx.Response(404, json={"detail": "no such DAG"})])
    with pytest.raises(DagNotFound):
        runs.dag("d")
    assert len(calls) == 1


def test_a_refused_token_is_renewed_once():
    """A restarted api-server (a new secret) refuses the cached token: one new login, then the call passes."""
    issued: list[str] = []
    accepted: set[str] = set()

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/auth/token":
            issued.append(f"t{len(issued)}")
            accepted.add(issued[-1])
            return httpx.Response(200, json={"access_token": issued[-1]})
        if request.headers["Authorization"].removeprefix("Bearer ") not in accepted:
            return httpx.Response(401, json={"detail": "Invalid JWT"})
        return httpx.Response(200, json=DAG)

    runs = HttpDagRuns(AirflowSettings("http://airflow.test", "admin", "pw"), transport=httpx.MockTransport(handle))
    assert runs.dag("d").dag_id == "d"
    accepted.clear()   # the api-server restarts
    assert runs.dag("d").dag_id == "d"
    assert issued == ["t0", "t1"]
