"""A stand-in for Airflow's REST API v2 over real HTTP: the calls ``mailserver.airflow.http.HttpDagRuns`` makes.

``POST /auth/token`` (the account given), then, with that bearer token: a DAG's details (declared
params, not paused), triggering a run (``queued``), reading it (``running`` from the first read
on: a scheduler that took it), marking it failed (the server's cancel), and no report. A run
never ends by itself, so a WebAdmin task following it stays ``inProgress`` until it is canceled
or its worker dies. Every call is recorded for the test to assert on.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN = "fake-airflow-token"
_DAG = r"/api/v2/dags/(?P<dag>[^/]+)"
_RUN = _DAG + r"/dagRuns/(?P<run>[^/]+)"
ROUTES = {
    ("GET", re.compile(_DAG + r"/details")): "details",
    ("POST", re.compile(_DAG + r"/dagRuns")): "trigger",
    ("GET", re.compile(_RUN)): "read",
    ("PATCH", re.compile(_RUN)): "update",
    ("GET", re.compile(_RUN + r"/taskInstances/[^/]+/xcomEntries/[^/]+")): "report",
}


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    body: Any


@dataclass
class FakeAirflow:
    username: str = "mailserver"
    password: str = "fake-airflow-secret"
    params: frozenset[str] = frozenset()   # the params every DAG declares
    runs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def env(self, poll_interval: float = 0.5) -> dict[str, str]:
        """The mail server's settings pointing at this Airflow."""
        return {"MAILSERVER_AIRFLOW_URL": self.url, "MAILSERVER_AIRFLOW_USERNAME": self.username,
                "MAILSERVER_AIRFLOW_PASSWORD": self.password,
                "MAILSERVER_AIRFLOW_POLL_INTERVAL": str(poll_interval)}

    def run(self, dag_id: str, run_id: str) -> dict[str, Any] | None:
        with self._lock:
            run = self.runs.get((dag_id, run_id))
            return dict(run) if run else None

    def calls_to(self, method: str, path_part: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method and path_part in c.path]

    def __enter__(self) -> FakeAirflow:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="fake-airflow", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # ------------------------------------------------------------------ the API
    def answer(self, method: str, path: str, headers: Any, body: Any) -> tuple[int, Any]:
        with self._lock:
            self.calls.append(Call(method, path, body))
        if (method, path) == ("POST", "/auth/token"):
            if isinstance(body, dict) and (body.get("username"), body.get("password")) == (self.username,
                                                                                            self.password):
                return 201, {"access_token": TOKEN}
            return 401, {"detail": "Invalid credentials"}
        if headers.get("Authorization") != f"Bearer {TOKEN}":
            return 401, {"detail": "Not authenticated"}
        for (verb, pattern), name in ROUTES.items():
            match = pattern.fullmatch(path)
            if verb == method and match:
                args = {k: urllib.parse.unquote(v) for k, v in match.groupdict().items()}
                with self._lock:
                    return getattr(self, f"_{name}")(body=body, **args)
        return 404, {"detail": f"no route {method} {path}"}

    def _details(self, dag: str, body: Any) -> tuple[int, Any]:
        return 200, {"dag_id": dag, "is_paused": False, "params": {p: {"value": None} for p in self.params}}

    def _trigger(self, dag: str, body: Any) -> tuple[int, Any]:
        key = (dag, body["dag_run_id"])
        if key in self.runs:
            return 409, {"detail": "DAG run already exists"}
        self.runs[key] = {"dag_id": dag, "dag_run_id": key[1], "state": "queued", "conf": body.get("conf") or {}}
        return 200, self.runs[key]

    def _read(self, dag: str, run: str, body: Any) -> tuple[int, Any]:
        found = self.runs.get((dag, run))
        if found is None:
            return 404, {"detail": "DAG run not found"}
        if found["state"] == "queued":
            found["state"] = "running"
        return 200, found

    def _update(self, dag: str, run: str, body: Any) -> tuple[int, Any]:
        found = self.runs.get((dag, run))
        if found is None:
            return 404, {"detail": "DAG run not found"}
        found["state"] = body["state"]
        return 200, found

    def _report(self, dag: str, run: str, body: Any) -> tuple[int, Any]:
        return 404, {"detail": "XCom entry not found"}


def _handler(airflow: FakeAirflow) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            path = urllib.parse.urlsplit(self.path).path
            status, payload = airflow.answer(self.command, path, self.headers, body)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
