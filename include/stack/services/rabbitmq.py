"""RabbitMQ from Debian's package, run as a private node ``rabbit@localhost`` on loopback.

epmd is started by us in the foreground first so that its pid is ours to stop (a node
started alone would leave a daemonised epmd behind).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .. import processes
from .base import Service, ServiceError

RABBIT_BIN = Path("/usr/lib/rabbitmq/bin")


class RabbitMQ(Service):
    name = "rabbitmq"
    start_timeout = 120.0

    @property
    def epmd_pid_file(self) -> Path:
        return self.home / "epmd.pid"

    def log_files(self) -> list[Path]:
        return [self.log_file, *sorted((self.home / "log").glob("*.log"))]

    def env(self) -> dict[str, str]:
        s, h = self.settings, self.home
        env = dict(os.environ)
        env.update({
            "HOME": str(h / "home"),  # the Erlang cookie lives in $HOME
            "RABBITMQ_NODENAME": os.environ.get("STACK_RABBITMQ_NODENAME", "rabbit@localhost"),
            "RABBITMQ_USE_LONGNAME": "false",
            "RABBITMQ_CONFIG_FILE": str(h / "rabbitmq.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(h / "enabled_plugins"),
            "RABBITMQ_MNESIA_BASE": str(h / "mnesia"),
            "RABBITMQ_LOG_BASE": str(h / "log"),
            "RABBITMQ_PID_FILE": str(h / "rabbit.pid"),
            "RABBITMQ_CONF_ENV_FILE": str(h / "rabbitmq-env.conf"),
            "RABBITMQ_DIST_PORT": str(s.ports.rabbitmq_dist),
            "ERL_EPMD_ADDRESS": s.host,
            "ERL_EPMD_PORT": str(s.ports.epmd),
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
            "RABBITMQ_CTL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
        })
        return env

    def prepare(self) -> None:
        if not (RABBIT_BIN / "rabbitmq-server").exists():
            raise ServiceError("rabbitmq-server is not installed: run the bootstrap (make bootstrap)")
        h, s = self.home, self.settings
        for sub in ("mnesia", "log", "home", "logs"):
            (h / sub).mkdir(parents=True, exist_ok=True)
        (h / "rabbitmq.conf").write_text("\n".join([
            f"listeners.tcp.default = {s.host}:{s.ports.amqp}",
            f"management.tcp.ip = {s.host}",
            f"management.tcp.port = {s.ports.rabbitmq_management}",
            f"vm_memory_high_watermark.absolute = {s.heaps.rabbitmq_watermark}",
            "disk_free_limit.absolute = 50MB",
            "loopback_users.guest = true",
            "",
        ]))
        (h / "enabled_plugins").write_text("[rabbitmq_management].\n")
        (h / "rabbitmq-env.conf").write_text("")

    def start(self) -> None:
        epmd = shutil.which("epmd") or "/usr/lib/erlang/bin/epmd"
        if not processes.owned_pid(self.epmd_pid_file, "epmd"):
            processes.spawn([epmd, "-address", self.settings.host, "-port", str(self.settings.ports.epmd)],
                            pid_file=self.epmd_pid_file, log_file=self.home / "logs" / "epmd.log",
                            env=self.env())
        # The server script execs the Erlang VM, so the pid we record is the broker's own.
        processes.spawn([str(RABBIT_BIN / "rabbitmq-server")], pid_file=self.pid_file,
                        log_file=self.log_file, env=self.env(), cwd=self.home)

    def pid(self) -> int | None:
        return processes.owned_pid(self.pid_file, "rabbit")

    def pids(self) -> list[int]:
        found = [p for p in (self.pid(), processes.owned_pid(self.epmd_pid_file, "epmd")) if p]
        return found

    def ctl(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run([str(RABBIT_BIN / "rabbitmqctl"), *args], env=self.env(),
                              capture_output=True, text=True, timeout=timeout)

    def after_ready(self) -> None:
        """Create the application user (guest stays loopback-only) once the broker answers."""
        c = self.settings.credentials
        users = self.ctl("list_users", "--silent").stdout
        if c.amqp_user not in users.split():
            self.ctl("add_user", c.amqp_user, c.amqp_password)
            self.ctl("set_user_tags", c.amqp_user, "administrator")
        self.ctl("set_permissions", "-p", "/", c.amqp_user, ".*", ".*", ".*")

    def stop(self) -> None:
        broker = self.pid()
        if broker:
            self.ctl("shutdown", timeout=90)
            processes.terminate(broker, timeout=30)
        epmd = processes.owned_pid(self.epmd_pid_file, "epmd")
        if epmd:
            processes.terminate(epmd, timeout=10)
        self.pid_file.unlink(missing_ok=True)
        self.epmd_pid_file.unlink(missing_ok=True)

    def probe(self) -> str:
        import httpx  # imported late: `status` works without a venv

        s, c = self.settings, self.settings.credentials
        url = f"http://{s.host}:{s.ports.rabbitmq_management}/api/overview"
        last: Exception | None = None
        # guest answers before the app user is created
        for auth in ((c.amqp_user, c.amqp_password), ("guest", "guest")):
            try:
                body = httpx.get(url, auth=auth, timeout=5).raise_for_status().json()
                return (f"amqp://{s.host}:{s.ports.amqp}, management {url.rsplit('/api', 1)[0]}, "
                        f"RabbitMQ {body.get('rabbitmq_version')}")
            except Exception as exc:
                last = exc
        raise RuntimeError(f"management API: {last}")
