"""Start detached processes, remember them by pid file, measure and stop them.

A pid file alone is not proof of ownership (pids are reused), so a process only counts as
ours when its command line also mentions the stack directory.
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
    # Until exec completes /proc shows the forking Python's command line; wait for the real one
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
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def is_alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def owned_pid(pid_file: Path, marker: str) -> int | None:
    """The pid in ``pid_file`` if that process is alive and its command line has ``marker``."""
    pid = read_pid(pid_file)
    if is_alive(pid) and marker in cmdline(pid):  # type: ignore[arg-type]
        return pid
    return None


def children(pid: int) -> list[int]:
    """All descendants of ``pid`` (uvicorn workers, executor processes, ...)."""
    by_parent: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        by_parent.setdefault(ppid, []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in by_parent.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def rss_bytes(pid: int, include_children: bool = True) -> int:
    total = 0
    for p in [pid, *(children(pid) if include_children else [])]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
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
