"""Apache Airflow 3: api-server, scheduler, dag-processor and triggerer on PostgreSQL.

Secrets (JWT, Fernet, API secret) are generated once into ``.stack/airflow/secrets.json``
(mode 0600) and shared by the four components: with a different JWT secret each, tasks could
not talk to the Execution API.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

from include.connections import airflow_connections

from .. import artifacts, processes, spark_cds
from ..endpoints import Endpoints
from ..settings import REPO_ROOT
from .base import Service, ServiceError
from .mailserver import MailServer

COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
POOLS_FILE = REPO_ROOT / "include" / "airflow" / "pools.json"
# Unchanged DAG files are parsed again after this long (changed ones at once: see env()).
DAG_FILE_REPARSE_SECONDS = 600


class Airflow(Service):
    name = "airflow"
    start_timeout = 240.0

    def component_pid_file(self, component: str) -> Path:
        return self.home / "run" / f"{component}.pid"

    def component_log(self, component: str) -> Path:
        return self.home / "logs" / f"{component}.log"

    def log_files(self) -> list[Path]:
        return [self.component_log(c) for c in COMPONENTS]

    @property
    def passwords_file(self) -> Path:
        return self.home / "simple_auth_manager_passwords.json.generated"

    def _secrets(self) -> dict[str, str]:
        path = self.home / "secrets.json"
        if path.exists():
            return json.loads(path.read_text())
        from cryptography.fernet import Fernet

        values = {
            "jwt_secret": secrets.token_urlsafe(32),
            "api_secret_key": secrets.token_urlsafe(32),
            "fernet_key": Fernet.generate_key().decode(),
        }
        self.home.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
        path.chmod(0o600)
        return values

    def env(self) -> dict[str, str]:
        """The environment of every Airflow process (also written to ``.stack/env.sh``)."""
        s, c = self.settings, self.settings.credentials
        sec = self._secrets()
        venv_bin = str(Path(sys.executable).parent)
        env = dict(os.environ)
        env.update(Endpoints.from_settings(s).to_env())
        mail = MailServer(s)   # the admin API the maintenance DAGs call
        jars = artifacts.spark_jars(s)
        env.update(airflow_connections(Endpoints.from_settings(s), webadmin_url=mail.webadmin_url,
                                       webadmin_password=mail.webadmin_password()))
        env.update({
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_ROOT / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO_ROOT / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CORE__FERNET_KEY": sec["fernet_key"],
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://{s.host}:{s.ports.airflow}/execution/",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{c.airflow_user}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(self.passwords_file),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": (
                f"postgresql+psycopg2://{c.postgres_user}:{c.postgres_password}"
                f"@{s.host}:{s.ports.postgres}/{c.postgres_db}"),
            "AIRFLOW__API__HOST": s.host,
            "AIRFLOW__API__PORT": str(s.ports.airflow),
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API__SECRET_KEY": sec["api_secret_key"],
            "AIRFLOW__API_AUTH__JWT_SECRET": sec["jwt_secret"],
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(self.home / "logs" / "tasks"),
            "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "True",
            # The DAG files change only when the platform is deployed, and a changed file is parsed as
            # soon as the folder listing sees its new mtime (file_parsing_sort_mode=modified_time).
            # Airflow's 30 s default re-imports every file twice a minute: a fifth of a core, idle.
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": str(DAG_FILE_REPARSE_SECONDS),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])),
            "PATH": os.pathsep.join([venv_bin, env.get("PATH", "")]),
            "JAVA_HOME": s.java_home,
            "SPARK_CONNECTOR_JARS": ",".join(str(j) for j in jars),
            "SPARK_LOCAL_DIRS": str(s.root / "spark-tmp"),
        })
        archive = spark_cds.archive_path(s.root / "spark-cds", s.java_home, jars)
        if archive.exists():   # recorded by prepare(): each spark-submit starts a third faster
            env["SPARK_SUBMIT_OPTS"] = spark_cds.submit_options(archive, env.get("SPARK_SUBMIT_OPTS", ""))
        return env

    def prepare(self) -> None:
        artifacts.fetch(self.settings, "spark")
        for sub in ("run", "logs"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        (self.settings.root / "spark-tmp").mkdir(parents=True, exist_ok=True)
        s = self.settings
        spark_cds.ensure_archive(s.root / "spark-cds", {**os.environ, "JAVA_HOME": s.java_home},
                                 artifacts.spark_jars(s), cassandra_host=s.host, cassandra_port=s.ports.cassandra)
        result = subprocess.run([self._airflow(), "db", "migrate"], env=self.env(),
                                capture_output=True, text=True, timeout=900)
        if result.returncode != 0:
            raise ServiceError("airflow db migrate failed:\n" + "\n".join(
                (result.stdout + result.stderr).splitlines()[-30:]))
        # The per-backend pools the maintenance DAGs queue in (a missing pool leaves tasks unscheduled).
        result = subprocess.run([self._airflow(), "pools", "import", str(POOLS_FILE)], env=self.env(),
                                capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            raise ServiceError("airflow pools import failed:\n" + (result.stdout + result.stderr)[-3000:])

    @staticmethod
    def _airflow() -> str:
        return str(Path(sys.executable).parent / "airflow")

    def start(self) -> None:
        env = self.env()
        for component in COMPONENTS:
            if processes.owned_pid(self.component_pid_file(component), "airflow"):
                continue
            processes.spawn([self._airflow(), component], pid_file=self.component_pid_file(component),
                            log_file=self.component_log(component), env=env, cwd=self.home)

    def pids(self) -> list[int]:
        return [p for c in COMPONENTS if (p := processes.owned_pid(self.component_pid_file(c), "airflow"))]

    def ensure_started(self) -> bool:
        # A component that died alone (say the triggerer) is restarted without touching the rest.
        if len(self.pids()) == len(COMPONENTS):
            return False
        self.prepare()
        self.start()
        return True

    def stop(self) -> None:
        for component in reversed(COMPONENTS):
            pid = processes.owned_pid(self.component_pid_file(component), "airflow")
            if pid:
                processes.terminate(pid, timeout=30)
            self.component_pid_file(component).unlink(missing_ok=True)

    def probe(self) -> str:
        import httpx  # imported late: `status` works without a venv

        s = self.settings
        url = f"http://{s.host}:{s.ports.airflow}/api/v2/monitor/health"
        body = httpx.get(url, timeout=5).raise_for_status().json()
        states = {k: v.get("status") for k, v in body.items() if isinstance(v, dict)}
        bad = {k: v for k, v in states.items() if v not in ("healthy", None)}
        if bad or len(self.pids()) < len(COMPONENTS):
            raise RuntimeError(f"unhealthy components {bad or 'missing processes'}")
        return f"http://{s.host}:{s.ports.airflow} ({', '.join(f'{k} {v}' for k, v in states.items())})"

    def admin_password(self) -> str | None:
        try:
            data = json.loads(self.passwords_file.read_text())
        except (OSError, ValueError):
            return None
        return data.get(self.settings.credentials.airflow_user)

    def ensure_admin_password(self) -> str:
        """The admin's password, written now into the simple auth manager's file when it is not there yet.

        The mail server starts before Airflow and needs it to trigger DAG runs; the auth manager
        keeps a password it finds in its file and only generates the missing ones.
        """
        existing = self.admin_password()
        if existing:
            return existing
        try:
            data = json.loads(self.passwords_file.read_text()) if self.passwords_file.exists() else {}
        except ValueError:
            data = {}
        password = secrets.token_urlsafe(16)
        data[self.settings.credentials.airflow_user] = password
        self.home.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.passwords_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(json.dumps(data) + "\n")
        return password
