"""An Airflow of the test's own: api-server, scheduler, dag-processor and triggerer on a fresh database.

The stack's Airflow (``airflow_stack.py``) is shared and serves most tests that need a real
scheduler or the UI. Tests that enable schedules through the environment of the scheduler and the
dag-processor must restart both, which a shared Airflow must not undergo: they start this one, with
its own home, port, log-server ports and PostgreSQL database (in the stack's PostgreSQL, dropped at
the end), a DAG folder (the repository's unless given), the repository's plugins, and the
connections of the caller's environment.

``reconfigure`` restarts the dag-processor and the scheduler with other platform settings (schedules
are read when a DAG file is parsed) and waits until the DAGs were parsed again with them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from include.stack.manager import StackManager
from include.stack.services.airflow import DAG_FILE_REPARSE_SECONDS
from include.stack.services.postgres import Postgres
from include.stack.settings import StackSettings
from tests.support.airflow_rest import AirflowRest
from tests.support.ports import unused_port

REPO = Path(__file__).resolve().parents[2]
COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
# The processes that read MAILPLATFORM_* settings: DAG files are parsed by the dag-processor, and
# the scheduler runs the timetables (and hands its environment to the tasks it starts).
PARSING = ("dag-processor", "scheduler")
USERNAME = "admin"
POOLS_FILE = REPO / "include" / "airflow" / "pools.json"


def dag_ids(dags_folder: Path) -> set[str]:
    """Each DAG file of the platform holds one DAG named as the file."""
    return {p.stem for p in dags_folder.glob("*.py") if not p.name.startswith("_")}


@dataclass
class PrivateAirflow(AirflowRest):
    home: Path
    base_env: Mapping[str, str]
    dags_folder: Path = REPO / "dags"
    plugins_folder: Path = REPO / "plugins"
    settings: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=unused_port)
    password: str = field(default_factory=lambda: uuid.uuid4().hex)
    username: str = USERNAME
    database: str = field(default_factory=lambda: f"airflow_private_{uuid.uuid4().hex[:8]}")
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    stack_settings: StackSettings = field(default_factory=StackSettings)

    url: str = field(init=False)

    def __post_init__(self) -> None:
        self.url = f"http://127.0.0.1:{self.port}"

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self, timeout: float = 600.0) -> PrivateAirflow:
        self._postgres().psql(f"CREATE DATABASE {self.database} OWNER {self._pg_user()}")
        self.home.mkdir(parents=True, exist_ok=True)
        # The simple auth manager keeps a password it finds in its file: a known one for the tests.
        passwords = self.home / "passwords.json"
        passwords.write_text(json.dumps({USERNAME: self.password}))
        passwords.chmod(0o600)
        self._cli("db", "migrate", timeout=900)
        self._cli("pools", "import", str(POOLS_FILE), timeout=300)
        for component in COMPONENTS:
            self._spawn(component)
        self.wait_healthy(timeout)
        self.wait_parsed(lambda dag: True, timeout)
        return self

    def stop(self) -> None:
        for component in reversed(COMPONENTS):
            self._terminate(component)
        try:
            self._postgres().psql(f"DROP DATABASE IF EXISTS {self.database} WITH (FORCE)")
        except RuntimeError as exc:   # the server stopped under us: nothing left to drop
            print(f"[private airflow] database {self.database} not dropped: {exc}")

    def reconfigure(self, settings: Mapping[str, str], parsed: Callable[[dict[str, Any]], bool],
                    timeout: float = 300.0) -> None:
        """Restart the dag-processor and the scheduler with ``settings`` (MAILPLATFORM_* variables)
        instead of the current ones (no restart when they are the same); returns once every DAG reads
        ``parsed`` as true."""
        if dict(settings) != self.settings:
            self.settings = dict(settings)
            for component in PARSING:
                self._terminate(component)
                self._spawn(component)
        self.wait_healthy(timeout)
        self.wait_parsed(parsed, timeout)

    def wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last: Any = None
        while True:
            self._check_alive()
            try:
                last = self.health()
                states = {k: v.get("status") for k, v in last.items() if isinstance(v, dict)}
                if states and all(v == "healthy" for v in states.values()) and len(states) >= len(COMPONENTS):
                    return
            except httpx.HTTPError as exc:
                last = exc
            if time.monotonic() > deadline:
                raise AssertionError(f"private Airflow not healthy within {timeout:.0f} s: {last}\n"
                                     f"{self.tail('api-server')}")
            time.sleep(2)

    def wait_parsed(self, parsed: Callable[[dict[str, Any]], bool], timeout: float) -> None:
        """Wait until every DAG file is known, without import error, and ``parsed(dag)`` holds for each."""
        expected = dag_ids(self.dags_folder)
        deadline = time.monotonic() + timeout
        while True:
            self._check_alive()
            try:
                dags = self.dags()
            except httpx.TransportError:
                dags = {}
            pending = sorted(d for d in expected if d not in dags or not parsed(dags[d]))
            if not pending:
                return
            if time.monotonic() > deadline:
                with self.api() as client:
                    errors = client.get("/api/v2/importErrors").json().get("import_errors", [])
                raise AssertionError(f"DAGs not parsed as expected within {timeout:.0f} s: {pending}; "
                                     f"import errors: {errors or 'none'}\n{self.tail('dag-processor')}")
            time.sleep(3)

    # -- processes -----------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        s = self.stack_settings
        sql = (f"postgresql+psycopg2://{s.credentials.postgres_user}:{s.credentials.postgres_password}"
               f"@{s.host}:{s.ports.postgres}/{self.database}")
        env = {k: v for k, v in self.base_env.items()
               if not k.startswith(("AIRFLOW__", "MAILPLATFORM_SCHEDULE__")) and k != "MAILPLATFORM_SCAN_REPAIRS"}
        secrets = self._secrets()
        env.update({
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags_folder),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(self.plugins_folder),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CORE__FERNET_KEY": secrets["fernet"],
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USERNAME}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(self.home / "passwords.json"),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": sql,
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API__SECRET_KEY": secrets["api"],
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets["jwt"],
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(self.home / "logs" / "tasks"),
            # Their defaults (8793, 8794) are the stack's Airflow's.
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": secrets["worker_log_port"],
            "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": secrets["trigger_log_port"],
            "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
            # As the stack's: its tests change settings by restarting the dag-processor, which parses
            # everything at start, never by waiting for a re-parse.
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": str(DAG_FILE_REPARSE_SECONDS),
            # A DAG file imports in a second or two, but a task re-imports its file at start-up and a
            # loaded test machine (two cores shared by several suites) has taken over the default 30 s.
            "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "240",
            "AIRFLOW__DAG_PROCESSOR__DAG_FILE_PROCESSOR_TIMEOUT": "300",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), str(self.plugins_folder),
                                                        self.base_env.get("PYTHONPATH")])),
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), self.base_env.get("PATH", "")]),
        })
        env.update(self.settings)
        return env

    def _secrets(self) -> dict[str, str]:
        path = self.home / "secrets.json"
        if not path.exists():
            from cryptography.fernet import Fernet

            path.write_text(json.dumps({"fernet": Fernet.generate_key().decode(), "api": uuid.uuid4().hex,
                                        "jwt": uuid.uuid4().hex, "worker_log_port": str(unused_port()),
                                        "trigger_log_port": str(unused_port())}))
            path.chmod(0o600)
        return json.loads(path.read_text())

    def log_file(self, component: str) -> Path:
        return self.home / "logs" / f"{component}.log"

    def _cli(self, *args: str, timeout: float) -> None:
        result = subprocess.run([str(Path(sys.executable).parent / "airflow"), *args], env=self.env(),
                                capture_output=True, text=True, timeout=timeout, cwd=self.home)
        if result.returncode != 0:
            raise AssertionError(f"airflow {' '.join(args)} failed:\n" + (result.stdout + result.stderr)[-3000:])

    def _spawn(self, component: str) -> None:
        log = self.log_file(component)
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            # A session of its own: the component's children (API workers, task runners, parsers) are
            # stopped with it by their process group.
            self.processes[component] = subprocess.Popen(
                [str(Path(sys.executable).parent / "airflow"), component], env=self.env(), cwd=self.home,
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def _terminate(self, component: str, timeout: float = 60.0) -> None:
        process = self.processes.pop(component, None)
        if process is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                return
            try:
                process.wait(timeout)
                # Children left in the group (a task runner) go with it.
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                return
            except subprocess.TimeoutExpired:
                continue
            return

    def _check_alive(self) -> None:
        for component, process in self.processes.items():
            if process.poll() is not None:
                raise AssertionError(f"private Airflow's {component} exited with {process.returncode}:\n"
                                     f"{self.tail(component)}")

    # -- the stack's PostgreSQL ----------------------------------------------------------------

    def _postgres(self) -> Postgres:
        manager = StackManager(self.stack_settings, log=lambda _msg: None)
        manager.up(("postgres",))   # idempotent: a running server is left alone
        postgres = manager.services["postgres"]
        assert isinstance(postgres, Postgres)
        return postgres

    def _pg_user(self) -> str:
        return self.stack_settings.credentials.postgres_user
