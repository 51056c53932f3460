"""Start detached processes, remember them by pid file, measure and stop them.

A pid file alone is not proof of ownership (pids are reused), so a process only counts as
ours when its command line also mentions the stack directory. Processes are read through psutil,
imported where it is used so that `status` works without a venv.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path


def spawn(
    argv: Sequence[str],
    *,
    pid_file: Path,
    log_file: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    user: str | None = None,
) -> int:
    """Start ``argv`` in its own session, output to ``log_file``, and record its pid."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab") as log:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            cwd=str(cwd) if cwd else None,
            start_new_session=True,
            user=user,
            group=user,
            extra_groups=[] if user else None,
        )
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    pid_file.write_text(f"{proc.pid}\n")
    # Until exec completes the process shows the forking Python's command line; wait for the real one
    # so that an ownership check right after spawn does not mistake the child for a stranger.
    program = os.path.basename(argv[0])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and program not in cmdline(proc.pid) and proc.poll() is None:
        time.sleep(0.05)
    return proc.pid


def read_pid(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text().split()[0])
    except (FileNotFoundError, ValueError, IndexError):
        return None


def cmdline(pid: int) -> str:
    import psutil

    try:
        return " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return ""


def is_alive(pid: int | None) -> bool:
    """True while ``pid`` runs; a zombie (exited, not yet reaped) counts as gone."""
    import psutil

    if pid is None:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def owned_pid(pid_file: Path, marker: str) -> int | None:
    """The pid in ``pid_file`` if that process is alive and its command line has ``marker``."""
    pid = read_pid(pid_file)
    if pid is not None and is_alive(pid) and marker in cmdline(pid):
        return pid
    return None


def children(pid: int) -> list[int]:
    """All descendants of ``pid`` (uvicorn workers, executor processes, ...)."""
    import psutil

    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def rss_bytes(pid: int, include_children: bool = True) -> int:
    import psutil

    total = 0
    for p in [pid, *(children(pid) if include_children else [])]:
        try:
            total += psutil.Process(p).memory_info().rss
        except psutil.Error:
            continue
    return total


def terminate(pid: int, *, sig: int = signal.SIGTERM, timeout: float = 60.0) -> bool:
    """Signal ``pid`` and its descendants; escalate to SIGKILL after ``timeout``.

    Returns True when every process is gone.
    """
    family = [pid, *children(pid)]
    for p in family:
        try:
            os.kill(p, sig if p == pid else signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(is_alive(p) for p in family):
            return True
        time.sleep(0.2)
    for p in family:
        if is_alive(p):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
    time.sleep(0.5)
    return not any(is_alive(p) for p in family)


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit in ("B", "KiB") else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"
