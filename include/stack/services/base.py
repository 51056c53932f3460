"""What every managed service can do: prepare, start, answer a real request, report, stop."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from .. import processes
from ..settings import StackSettings


class ServiceError(RuntimeError):
    pass


@dataclass(frozen=True)
class Health:
    name: str
    running: bool
    healthy: bool
    pid: int | None
    rss: int
    detail: str


class Service(ABC):
    name: str = ""

    def __init__(self, settings: StackSettings) -> None:
        self.settings = settings
        self.home = settings.service_dir(self.name)

    # -- layout -------------------------------------------------------------------------
    @property
    def pid_file(self) -> Path:
        return self.home / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        return self.home / "logs" / "stdout.log"

    def log_files(self) -> list[Path]:
        return [self.log_file]

    # -- lifecycle ------------------------------------------------------------------------
    def prepare(self) -> None:  # noqa: B027 - optional hook, most services need it
        """Download artifacts, write configuration, create directories. Idempotent."""

    @abstractmethod
    def start(self) -> None:
        """Launch the process(es) and write the pid file. Called only when not running."""

    @abstractmethod
    def probe(self) -> str:
        """Make a real request; return a short description, raise on failure."""

    def pid(self) -> int | None:
        return processes.owned_pid(self.pid_file, str(self.settings.root))

    def pids(self) -> list[int]:
        pid = self.pid()
        return [pid] if pid else []

    def stop(self) -> None:
        for pid in reversed(self.pids()):
            processes.terminate(pid, timeout=self.stop_timeout)
        self.pid_file.unlink(missing_ok=True)

    stop_timeout: float = 60.0
    start_timeout: float = 180.0

    # -- orchestration helpers ----------------------------------------------------------
    def ensure_started(self) -> bool:
        """Start unless already running. Returns True when a process was launched."""
        if self.pids():
            return False
        self.prepare()
        self.start()
        return True

    def wait_ready(self, timeout: float | None = None) -> str:
        deadline = time.monotonic() + (timeout or self.start_timeout)
        last_error = "not probed"
        while time.monotonic() < deadline:
            if not self.pids():
                raise ServiceError(f"{self.name} exited during start-up\n{self.tail_logs()}")
            try:
                return self.probe()
            except Exception as exc:  # any failure means "not yet"; the deadline decides
                last_error = f"{type(exc).__name__}: {exc}"
            time.sleep(1.0)
        raise ServiceError(f"{self.name} did not answer within {timeout or self.start_timeout:.0f}s "
                           f"({last_error})\n{self.tail_logs()}")

    def health(self) -> Health:
        pids = self.pids()
        rss = sum(processes.rss_bytes(p) for p in pids)
        if not pids:
            return Health(self.name, False, False, None, 0, "stopped")
        try:
            return Health(self.name, True, True, pids[0], rss, self.probe())
        except Exception as exc:
            return Health(self.name, True, False, pids[0], rss, f"{type(exc).__name__}: {exc}")

    def tail_logs(self, lines: int = 60) -> str:
        out = []
        for f in self.log_files():
            if f.exists():
                text = f.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {f} ---\n" + "\n".join(text))
        return "\n".join(out)
