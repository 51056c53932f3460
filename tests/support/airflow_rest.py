"""What tests ask a running Airflow through its REST API, whichever Airflow it is: the stack's
(``StackAirflow``) or one a test started (``tests/support/private_airflow.py``).

The waits tolerate a slow answer of a loaded machine (two cores shared by several suites) until
their deadline; on a timeout they show the end of the scheduler's log.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

# Its single API worker also serves the tasks' Execution API: on a loaded machine an answer has taken 40 s.
API_TIMEOUT = 120.0


class AirflowRest:
    """The REST calls; a subclass gives ``url``, ``username``, ``password`` and its logs."""

    url: str
    username: str
    password: str

    def tail(self, component: str, lines: int = 40) -> str:
        """The end of ``component``'s log, for an assertion's message."""
        path = self.log_file(component)
        if not path.exists():
            return f"({path} not written)"
        return f"--- {path} ---\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def log_file(self, component: str) -> Path:
        raise NotImplementedError

    def _check_alive(self) -> None:
        """Fail at once when a component of this Airflow has exited (when the caller can tell)."""

    @contextmanager
    def api(self) -> Iterator[httpx.Client]:
        """A client of Airflow's REST API with the admin's token."""
        response = httpx.post(f"{self.url}/auth/token", json={"username": self.username, "password": self.password},
                              timeout=API_TIMEOUT)
        response.raise_for_status()
        with httpx.Client(base_url=self.url, timeout=API_TIMEOUT,
                          headers={"Authorization": f"Bearer {response.json()['access_token']}"}) as client:
            yield client

    def dags(self) -> dict[str, dict[str, Any]]:
        with self.api() as client:
            response = client.get("/api/v2/dags", params={"limit": 100})
            response.raise_for_status()
            return {dag["dag_id"]: dag for dag in response.json()["dags"]}

    def runs(self, dag_id: str = "~") -> list[dict[str, Any]]:
        """The last 100 DAG runs of ``dag_id`` (``~``: of every DAG), newest first."""
        with self.api() as client:
            # Newest first: a shared Airflow may hold more than a page of older runs.
            response = client.get(f"/api/v2/dags/{dag_id}/dagRuns", params={"limit": 100, "order_by": "-id"})
            response.raise_for_status()
            return response.json()["dag_runs"]

    def set_paused(self, dag_ids: list[str] | set[str], paused: bool) -> None:
        with self.api() as client:
            for dag_id in sorted(dag_ids):
                response = client.patch(f"/api/v2/dags/{dag_id}", json={"is_paused": paused})
                response.raise_for_status()
                assert response.json()["is_paused"] is paused, response.json()

    def delete_runs(self, dag_id: str, keep: Collection[str] = ()) -> None:
        """Every run of ``dag_id`` but those of ``keep`` (run ids) ended (marked failed: a running run
        cannot be deleted, 409) and deleted."""
        with self.api() as client:
            for run in self.runs(dag_id):
                if run["dag_run_id"] in keep:
                    continue
                path = f"/api/v2/dags/{dag_id}/dagRuns/{quote(run['dag_run_id'], safe='')}"
                if run["state"] not in ("success", "failed"):
                    client.patch(path, json={"state": "failed"}).raise_for_status()
                client.delete(path).raise_for_status()

    def wait_run(self, dag_id: str, run_id: str, timeout: float = 900.0) -> dict[str, Any]:
        """The run once it has ended (success or failed)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with self.api() as client:
                    response = client.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")
                    response.raise_for_status()
                    run = response.json()
            except httpx.TransportError as exc:   # a slow answer: ask again until the deadline
                run = {"state": f"unknown ({exc!r})"}
            if run["state"] in ("success", "failed"):
                return run
            self._check_alive()
            if time.monotonic() > deadline:
                raise AssertionError(f"{dag_id} {run_id} still {run['state']} after {timeout:.0f} s; "
                                     f"tasks: {self.task_states(dag_id, run_id)}\n{self.tail('scheduler')}")
            time.sleep(3)

    def run(self, dag_id: str, run_id: str) -> dict[str, Any]:
        with self.api() as client:
            response = client.get(f"/api/v2/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}")
            response.raise_for_status()
            return response.json()

    def wait_run_note(self, dag_id: str, run_id: str, timeout: float = 120.0) -> str:
        """The note of an ended run: the scheduler's listener writes it as the run ends, maybe a
        moment after the run's state is read as ended."""
        deadline = time.monotonic() + timeout
        while True:
            run = self.run(dag_id, run_id)
            if run.get("note"):
                return run["note"]
            if time.monotonic() > deadline:
                raise AssertionError(f"{dag_id} {run_id} ({run['state']}) has no note after {timeout:.0f} s: "
                                     f"the run-notes listener did not write one\n{self.tail('scheduler')}")
            time.sleep(2)

    def task_instance(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
        with self.api() as client:
            response = client.get(f"/api/v2/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances/{task_id}")
            response.raise_for_status()
            return response.json()

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str | None]:
        with self.api() as client:
            response = client.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances")
            response.raise_for_status()
            return {ti["task_id"]: ti["state"] for ti in response.json()["task_instances"]}

    def health(self) -> dict[str, Any]:
        response = httpx.get(f"{self.url}/api/v2/monitor/health", timeout=10)
        response.raise_for_status()
        return response.json()

    def scheduler_heartbeat(self) -> datetime | None:
        beat = self.health().get("scheduler", {}).get("latest_scheduler_heartbeat")
        return datetime.fromisoformat(beat) if beat else None

    def wait_scheduler_loops(self, after: datetime, loops: int = 2, timeout: float = 120.0) -> None:
        """Wait until the scheduler heartbeat ``loops`` times after ``after``: its loop heartbeats
        between two scheduling passes, so a pass that saw the state of ``after`` has completed."""
        deadline = time.monotonic() + timeout
        seen: set[datetime] = set()
        while True:
            try:
                beat = self.scheduler_heartbeat()
            except httpx.TransportError:
                beat = None
            if beat is not None and beat > after:
                seen.add(beat)
                if len(seen) >= loops:
                    return
            self._check_alive()
            if time.monotonic() > deadline:
                raise AssertionError(f"the scheduler heartbeat {len(seen)} time(s) in {timeout:.0f} s after "
                                     f"{after.isoformat()}:\n{self.tail('scheduler')}")
            time.sleep(1)


@dataclass
class StackAirflow(AirflowRest):
    """The stack's running Airflow (``tests/support/airflow_stack.py`` brings it up)."""

    url: str
    username: str
    password: str
    logs: Path

    def log_file(self, component: str) -> Path:
        return self.logs / f"{component}.log"

    def paused(self) -> dict[str, bool]:
        return {dag_id: dag["is_paused"] for dag_id, dag in self.dags().items()}
