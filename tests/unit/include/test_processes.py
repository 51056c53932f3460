"""Pid files prove ownership only together with the command line; stop reaches descendants."""

from __future__ import annotations

import subprocess
import sys

from include.stack import processes


def test_spawned_process_is_owned_measured_and_terminated_with_children(tmp_path):
    marker = str(tmp_path)
    script = ("import subprocess, sys, time; "
              "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); time.sleep(600)")
    pid = processes.spawn([sys.executable, "-c", script, marker], pid_file=tmp_path / "p.pid",
                          log_file=tmp_path / "p.log")
    try:
        assert processes.owned_pid(tmp_path / "p.pid", marker) == pid
        assert processes.rss_bytes(pid) > 0
        for _ in range(50):
            if processes.children(pid):
                break
            import time

            time.sleep(0.1)
        kids = processes.children(pid)
        assert kids, "the child process should be visible"
        assert processes.terminate(pid, timeout=10)
        assert not processes.is_alive(pid)
        assert not any(processes.is_alive(k) for k in kids)
    finally:
        processes.terminate(pid, timeout=1)


def test_pid_file_of_a_foreign_process_is_not_ours(tmp_path):
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        (tmp_path / "x.pid").write_text(f"{stranger.pid}\n")
        assert processes.owned_pid(tmp_path / "x.pid", str(tmp_path)) is None
    finally:
        stranger.kill()
        stranger.wait()


def test_missing_or_garbage_pid_file(tmp_path):
    assert processes.read_pid(tmp_path / "none.pid") is None
    (tmp_path / "bad.pid").write_text("not-a-pid")
    assert processes.read_pid(tmp_path / "bad.pid") is None
