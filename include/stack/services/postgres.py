"""PostgreSQL from Debian's package: a private cluster for Airflow's metadata database.

The server refuses to run as root, so when the stack runs as root the cluster belongs to the
``postgres`` system user (created by the Debian package) and is started with that uid.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from pathlib import Path

from .. import processes
from .base import Service, ServiceError


def _pg_bin() -> Path:
    found = shutil.which("pg_ctl")
    if found:
        return Path(os.path.realpath(found)).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"))
    if versions:
        return versions[-1]
    raise ServiceError("PostgreSQL is not installed: run the bootstrap (make bootstrap)")


class Postgres(Service):
    name = "postgres"
    start_timeout = 60.0

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    @property
    def socket_dir(self) -> Path:
        return self.home / "run"

    @property
    def run_as(self) -> str | None:
        return "postgres" if os.geteuid() == 0 else None

    def _chown(self, path: Path) -> None:
        if self.run_as:
            pw = pwd.getpwnam(self.run_as)
            os.chown(path, pw.pw_uid, pw.pw_gid)

    def prepare(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "logs").mkdir(exist_ok=True)
        self.socket_dir.mkdir(exist_ok=True)
        self._chown(self.socket_dir)
        if (self.data_dir / "PG_VERSION").exists():
            return
        self.data_dir.mkdir(exist_ok=True)
        self.data_dir.chmod(0o700)
        self._chown(self.data_dir)
        pwfile = self.home / "initdb.pw"
        pwfile.write_text(self.settings.credentials.postgres_password + "\n")
        self._chown(pwfile)
        try:
            subprocess.run(
                [str(_pg_bin() / "initdb"), "-D", str(self.data_dir), "-U", "postgres",
                 "--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={pwfile}",
                 "-E", "UTF8", "--locale=C.UTF-8"],
                check=True, capture_output=True, text=True, user=self.run_as, group=self.run_as,
            )
        except subprocess.CalledProcessError as exc:
            raise ServiceError(f"initdb failed: {exc.stderr}") from exc
        finally:
            pwfile.unlink(missing_ok=True)

    def start(self) -> None:
        s = self.settings
        argv = [str(_pg_bin() / "postgres"), "-D", str(self.data_dir),
                "-c", f"listen_addresses={s.host}", "-p", str(s.ports.postgres),
                "-c", f"unix_socket_directories={self.socket_dir}",
                "-c", "shared_buffers=64MB", "-c", "max_connections=100"]
        log = self.log_file
        log.parent.mkdir(parents=True, exist_ok=True)
        if not log.exists():
            log.touch()
        self._chown(log)
        processes.spawn(argv, pid_file=self.pid_file, log_file=log, user=self.run_as, cwd=self.home)

    def psql(self, sql: str, db: str = "postgres") -> str:
        result = subprocess.run(
            [str(_pg_bin() / "psql"), "-h", str(self.socket_dir), "-p", str(self.settings.ports.postgres),
             "-U", "postgres", "-d", db, "-v", "ON_ERROR_STOP=1", "-tAc", sql],
            capture_output=True, text=True, timeout=30,
        )
        if result.returncode != 0:
            raise RuntimeError(result.stderr.strip())
        return result.stdout.strip()

    def after_ready(self) -> None:
        """Create Airflow's role and database (idempotent)."""
        c = self.settings.credentials
        if self.psql(f"SELECT 1 FROM pg_roles WHERE rolname = '{c.postgres_user}'") != "1":
            self.psql(f"CREATE ROLE {c.postgres_user} LOGIN PASSWORD '{c.postgres_password}'")
        for db in (c.postgres_db,):
            if self.psql(f"SELECT 1 FROM pg_database WHERE datname = '{db}'") != "1":
                self.psql(f"CREATE DATABASE {db} OWNER {c.postgres_user}")

    def stop(self) -> None:
        pid = self.pid()
        if pid:
            import signal

            processes.terminate(pid, sig=signal.SIGINT, timeout=60)  # SIGINT = fast shutdown
        self.pid_file.unlink(missing_ok=True)

    def probe(self) -> str:
        version = self.psql("SHOW server_version")
        return f"postgresql://{self.settings.host}:{self.settings.ports.postgres} (PostgreSQL {version})"
