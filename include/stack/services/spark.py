"""A Spark standalone cluster: one master and two workers, from the pyspark distribution in the lock.

``spark-class org.apache.spark.deploy.master.Master`` (and ``...worker.Worker``) is how Spark starts
its daemons; this runs the same main classes with the same classpath (``$SPARK_HOME/jars/*``)
directly, so each daemon is one process whose pid the stack records. The workers offer one core
and ``STACK_SPARK_WORKER_MEMORY`` each: on two cores, two executors of one core are the most a job
can get, and the cluster exercises what ``local[2]`` hides (executors in other JVMs and Python
workers that see only what was shipped to them: the ``--py-files`` zip and the ``--jars``).
The master's web UI answers the readiness probe (``/json/``: status and live workers).
"""

from __future__ import annotations

from pathlib import Path

from .. import processes
from .base import Service, ServiceError

WORKERS = 2


def spark_home() -> Path:
    import pyspark  # imported late: `status` works without a venv

    return Path(pyspark.__file__).resolve().parent


class SparkStandalone(Service):
    name = "spark"
    start_timeout = 120.0

    @property
    def master_url(self) -> str:
        return f"spark://{self.settings.host}:{self.settings.ports.spark_master}"

    @property
    def ui_url(self) -> str:
        return f"http://{self.settings.host}:{self.settings.ports.spark_master_ui}"

    @property
    def pid_file(self) -> Path:   # the master's: what `status` shows
        return self.home / "master.pid"

    def _pid_files(self) -> list[Path]:
        return [self.pid_file, *(self.home / f"worker-{n}.pid" for n in range(1, WORKERS + 1))]

    def log_files(self) -> list[Path]:
        return [self.home / "logs" / f"{f.stem}.log" for f in self._pid_files()]

    def pids(self) -> list[int]:
        marker = str(self.settings.root)
        return [pid for f in self._pid_files() if (pid := processes.owned_pid(f, marker))]

    @property
    def distribution(self) -> Path:
        """A Spark home laid out as a release: the pip package's jars, bin and python, and a RELEASE file.

        A worker builds each executor's classpath with Spark's launcher, which finds the jars only in a
        release layout (``RELEASE`` beside ``jars/``); the pyspark wheel ships the jars without that file.
        """
        return self.home / "distribution"

    def prepare(self) -> None:
        for sub in ("logs", "tmp", "work", "conf"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        dist, package = self.distribution, spark_home()
        dist.mkdir(parents=True, exist_ok=True)
        for entry in ("jars", "bin", "python", "sbin"):
            link = dist / entry
            if (package / entry).exists() and not link.is_symlink():
                link.symlink_to(package / entry)
        (dist / "RELEASE").write_text(f"Spark from the pyspark package at {package}\n")

    def _daemon(self, main_class: str, *args: str) -> list[str]:
        s = self.settings
        home = self.distribution
        return [s.java, "-Xms64m", f"-Xmx{s.heaps.spark_daemon}", "-XX:+UseSerialGC",
                f"-Djava.io.tmpdir={self.home / 'tmp'}",
                "-cp", f"{self.home / 'conf'}:{home / 'jars'}/*", main_class, *args]

    def _env(self) -> dict[str, str]:
        import os

        return {**os.environ, "SPARK_HOME": str(self.distribution), "JAVA_HOME": self.settings.java_home,
                "SPARK_LOCAL_DIRS": str(self.home / "tmp"), "SPARK_NO_DAEMONIZE": "1",
                # The launcher asks for the Scala version before it looks for the jars; a release
                # names it in its scripts, the wheel's layout does not.
                "SPARK_SCALA_VERSION": "2.12"}

    def start(self) -> None:
        s = self.settings
        env = self._env()
        master = self._daemon("org.apache.spark.deploy.master.Master", "--host", s.host,
                              "--port", str(s.ports.spark_master), "--webui-port", str(s.ports.spark_master_ui))
        processes.spawn(master, pid_file=self.pid_file, log_file=self.home / "logs" / "master.log",
                        env=env, cwd=self.home)
        for n in range(1, WORKERS + 1):
            # Port 0: each worker binds a port the kernel gives it at once (no pick-then-bind race).
            worker = self._daemon("org.apache.spark.deploy.worker.Worker", "--host", s.host,
                                  "--port", "0", "--webui-port", "0", "--cores", "1",
                                  "--memory", s.heaps.spark_worker_memory,
                                  "--work-dir", str(self.home / "work" / f"worker-{n}"), self.master_url)
            processes.spawn(worker, pid_file=self.home / f"worker-{n}.pid",
                            log_file=self.home / "logs" / f"worker-{n}.log", env=env, cwd=self.home)

    def probe(self) -> str:
        import httpx  # imported late: `status` works without a venv

        state = httpx.get(f"{self.ui_url}/json/", timeout=3).raise_for_status().json()
        alive = int(state.get("aliveworkers", 0))
        if state.get("status") != "ALIVE" or alive < WORKERS:
            raise ServiceError(f"master {state.get('status')}, {alive} of {WORKERS} workers registered")
        return f"{self.master_url} ({alive} workers, {state.get('cores')} cores, UI {self.ui_url})"
