"""The local stack manager: idempotent up, real health, memory, stop by pid only."""

from __future__ import annotations

import subprocess
import sys

import pytest

from include.stack import processes
from include.stack.manager import BACKENDS, StackManager
from include.stack.settings import StackSettings

pytestmark = pytest.mark.integration


def test_up_again_changes_nothing(stack):
    manager = StackManager(log=lambda _m: None)
    before = {name: manager.services[name].pids() for name in BACKENDS}
    if not all(before.values()):
        pytest.fail("the session's backends are not run by the local stack manager here "
                    "(endpoints came from the environment or containers)", pytrace=False)
    messages: list[str] = []
    StackManager(log=messages.append).up(BACKENDS)
    after = {name: manager.services[name].pids() for name in BACKENDS}
    assert after == before
    assert any("nothing to start" in m for m in messages)


def test_status_reports_health_pid_and_memory(stack):
    rows = StackManager(log=lambda _m: None).status(BACKENDS)
    for row in rows:
        assert row.healthy, row
        assert row.pid and row.rss > 10 * 1024 * 1024, f"{row.name}: resident memory {row.rss}"


def test_second_stack_starts_and_stops_only_its_own_processes(tmp_path, monkeypatch):
    """A private S3Proxy on another port: up, up again, down; a stranger's pid survives down."""
    monkeypatch.setenv("STACK_HOME", str(tmp_path / "stack"))
    monkeypatch.setenv("STACK_LIB_HOME", str(StackSettings().jars_dir))  # reuse the fetched jars
    monkeypatch.setenv("STACK_S3_PORT", "19000")
    manager = StackManager(StackSettings(), log=lambda _m: None)
    s3 = manager.services["s3"]
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        manager.up(["s3"])
        pid = s3.pid()
        assert pid and "19000" in s3.health().detail
        manager.up(["s3"])
        assert s3.pid() == pid  # idempotent
        # A pid file pointing at a process we did not start must not make `down` kill it.
        manager.services["cassandra"].pid_file.parent.mkdir(parents=True, exist_ok=True)
        manager.services["cassandra"].pid_file.write_text(f"{stranger.pid}\n")

        manager.down(["s3", "cassandra"])

        assert not processes.is_alive(pid)
        assert stranger.poll() is None, "down killed a process it did not start"
        assert not s3.health().running
    finally:
        s3.stop()
        stranger.kill()
        stranger.wait()
