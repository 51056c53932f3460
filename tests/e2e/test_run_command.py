"""`make run`'s stack command on a platform that is already up: it prints every URL and credential
and changes nothing (no service restarted: same pids before and after)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from include.stack.manager import PROFILES, StackManager
from tests.support.airflow_stack import stack_airflow

pytestmark = pytest.mark.e2e


def test_run_again_prints_every_url_and_changes_nothing():
    stack_airflow()   # the whole platform up (idempotent), as after a first `make run`
    manager = StackManager(log=lambda _m: None)
    services = list(PROFILES["all"])
    before = {name: manager.services[name].pids() for name in services}
    assert all(before.values()), f"not every service runs under the stack manager: {before}"

    result = subprocess.run([sys.executable, "-m", "include.stack", "up"], capture_output=True, text=True,
                            timeout=600)

    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "nothing to start" in result.stdout, result.stdout
    assert {name: manager.services[name].pids() for name in services} == before
    s = manager.settings
    h = s.host
    for shown in (f"{h}:{s.ports.cassandra}", f"http://{h}:{s.ports.opensearch}", f"http://{h}:{s.ports.s3}",
                  f"amqp://{h}:{s.ports.amqp}", f"http://{h}:{s.ports.rabbitmq_management}",
                  f"smtp://{h}:{s.ports.smtp}", f"imap://{h}:{s.ports.imap}", f"http://{h}:{s.ports.webadmin}",
                  f"https://{h}:{s.ports.jmap}/.well-known/jmap", f"http://{h}:{s.ports.airflow}",
                  f"{h}:{s.ports.postgres}"):
        assert shown in result.stdout, f"{shown} not printed:\n{result.stdout}"
    airflow_password = manager.services["airflow"].admin_password()
    assert airflow_password and airflow_password in result.stdout, "the Airflow credential is not printed"
