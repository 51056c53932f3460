"""The stack's Airflow for tests that trigger real DAG runs (scheduler, LocalExecutor, PostgreSQL).

``stack_airflow`` starts what a DAG run needs through the stack manager (idempotent: services
already running are left alone, never restarted): the backends, PostgreSQL, the stack's mail
server (the DAGs' health sensor asks its WebAdmin) and Airflow. Its connections point at
``james_keyspace``, so tests seed there with unique users and assert on their own data.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from include.connections import DEFAULT_KEYSPACE
from include.stack.manager import BACKENDS, StackManager
from include.stack.services.airflow import Airflow
from include.stack.services.mailserver import MailServer
from include.stack.settings import StackSettings
from mailserver.airflow.settings import AirflowSettings
from tests.support.airflow_rest import StackAirflow

STACK_KEYSPACE = DEFAULT_KEYSPACE
NEEDED = (*BACKENDS, "postgres", "mailserver", "airflow")


def stack_airflow() -> AirflowSettings:
    manager = StackManager(log=lambda _msg: None)
    manager.up(NEEDED)
    airflow = manager.services["airflow"]
    assert isinstance(airflow, Airflow)
    s = manager.settings
    password = airflow.admin_password()
    assert password, f"no admin password in {airflow.passwords_file}"
    return AirflowSettings(f"http://{s.host}:{s.ports.airflow}", s.credentials.airflow_user, password,
                           poll_interval=3.0, unreachable_timeout=120.0)


def api(settings: AirflowSettings) -> httpx.Client:
    """A client of Airflow's REST API as an operator's script would use it (its own token)."""
    token = httpx.post(f"{settings.url}/auth/token", json={"username": settings.username,
                                                           "password": settings.password}, timeout=30)
    token.raise_for_status()
    return httpx.Client(base_url=settings.url, timeout=30,
                        headers={"Authorization": f"Bearer {token.json()['access_token']}"})


def wait_for_dag(client: httpx.Client, dag_id: str, timeout: float = 300.0) -> None:
    """Wait until the dag-processor has parsed ``dag_id``: a healthy Airflow may not have read its
    DAG files yet (the first parse of the folder takes a minute or more on a busy machine)."""
    deadline = time.monotonic() + timeout
    while True:
        response = client.get(f"/api/v2/dags/{dag_id}")
        if response.status_code != 404:
            response.raise_for_status()
            return
        if time.monotonic() > deadline:
            errors = client.get("/api/v2/importErrors").json().get("import_errors", [])
            raise AssertionError(f"the stack's Airflow has no DAG {dag_id} after {timeout:.0f} s; "
                                 f"import errors: {errors or 'none'}")
        time.sleep(2)


def unpause(settings: AirflowSettings, dag_id: str) -> None:
    """A DAG is paused when Airflow first sees it: an operator unpauses it once before using it."""
    with api(settings) as client:
        wait_for_dag(client, dag_id)
        response = client.patch(f"/api/v2/dags/{dag_id}", json={"is_paused": False})
        response.raise_for_status()
        assert response.json()["is_paused"] is False


def stack_airflow_rest(settings: AirflowSettings) -> StackAirflow:
    """The REST client of tests that drive the stack's Airflow as an operator would (its logs for failures)."""
    airflow = StackManager(log=lambda _msg: None).services["airflow"]
    assert isinstance(airflow, Airflow)
    return StackAirflow(settings.url, settings.username, settings.password, airflow.home / "logs")


@dataclass(frozen=True)
class StackWebAdmin:
    """WebAdmin of the stack's mail server: the one the stack's Airflow connections name."""

    url: str
    password: str

    @classmethod
    def of_stack(cls) -> StackWebAdmin:
        server = MailServer(StackSettings())
        password = server.webadmin_password()
        assert password, f"no WebAdmin password in {server.password_file}"
        return cls(server.webadmin_url, password)

    def get(self, path: str) -> Any:
        response = httpx.get(self.url + path, headers={"Password": self.password}, timeout=30)
        response.raise_for_status()
        return response.json() if response.content else None

    def delete(self, path: str) -> None:
        httpx.delete(self.url + path, headers={"Password": self.password}, timeout=30).raise_for_status()
