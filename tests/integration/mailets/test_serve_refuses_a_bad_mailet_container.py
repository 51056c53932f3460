"""`mailserver serve` with a typo in the mailet container: it stops at start, naming file, line and
name, before any port listens (an operator sees the mistake at once, not with the first mail)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mailserver.mailets.config import DEFAULT_FILE
from tests.support.mailserver_process import IsolatedVhost, server_env

pytestmark = pytest.mark.integration


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_unknown_mailet_stops_the_server_at_start_with_file_line_and_name(stack, cassandra, unique, tmp_path):
    text = DEFAULT_FILE.read_text()
    assert "mailet: LocalDelivery\n" in text
    broken = tmp_path / "mailetcontainer.yaml"
    broken.write_text(text.replace("mailet: LocalDelivery\n", "mailet: LocalDelivry\n", 1))
    line = text[: text.index("mailet: LocalDelivery\n")].count("\n") + 1

    with IsolatedVhost(stack, f"badconfig-{unique}") as vhost:
        env = server_env(stack, vhost.amqp_url, cassandra.keyspace, f"badconfig-{unique}", broken)
        result = subprocess.run([str(Path(sys.executable).parent / "mailserver"), "serve"], env=env,
                                capture_output=True, text=True, timeout=300)

    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    assert f"{broken}:{line}: unknown mailet 'LocalDelivry'" in result.stderr, result.stderr[-2000:]
    assert not listening(int(env["MAILSERVER_SMTP_PORT"])) and not listening(int(env["MAILSERVER_WEBADMIN_PORT"]))
