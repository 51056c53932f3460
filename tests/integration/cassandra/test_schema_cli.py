"""``mailserver schema init|status|upgrade`` against the real Cassandra."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

MAILSERVER = str(Path(sys.executable).parent / "mailserver")


def run(*args: str, keyspace: str, stack) -> subprocess.CompletedProcess:
    env = {**os.environ, "CASSANDRA_KEYSPACE": keyspace, "CASSANDRA_HOSTS": stack.cassandra_hosts,
           "CASSANDRA_PORT": str(stack.cassandra_port)}
    return subprocess.run([MAILSERVER, "schema", *args], env=env, capture_output=True, text=True, timeout=300)


def test_init_is_idempotent_and_fresh_keyspace_is_at_latest_version(stack, unique, cassandra):
    keyspace = f"cli_{unique}"
    try:
        first = run("init", keyspace=keyspace, stack=stack)
        assert first.returncode == 0, first.stderr
        assert f"keyspace {keyspace}: UP_TO_DATE" in first.stdout
        assert run("init", keyspace=keyspace, stack=stack).returncode == 0
        status = run("status", keyspace=keyspace, stack=stack)
        assert "version 15, supported 10..15" in status.stdout
        assert run("upgrade", keyspace=keyspace, stack=stack).returncode == 0
    finally:
        cassandra.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
