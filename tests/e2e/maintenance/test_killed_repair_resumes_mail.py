"""A repair task killed while it holds maintenance mode: the server resumes mail by itself.

Real parts: ``mailserver serve`` as a child process (SMTP, WebAdmin) on the maintenance keyspace,
the repair DAG's own Spark task run in a process of its own as a worker runs it, with a short
maximum duration. Its ``spark-submit`` is a stand-in that never ends (the repair "is running"),
so the task holds maintenance mode until the whole process group is killed: no teardown, no
``finally`` runs. SMTP answers 421 while the window is open and takes mail again once its
deadline passes.
"""

from __future__ import annotations

import os
import signal
import smtplib
import stat
import subprocess
import sys
import uuid

import pytest

from include.connections import airflow_connections
from mailserver.mailets.config import DEFAULT_FILE
from tests.support.events import eventually
from tests.support.mailserver_process import WEBADMIN_PASSWORD, IsolatedVhost, ServerProcess, http_json, server_env

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

DAG_ID = "recompute_current_quotas"
MAX_DURATION_SECONDS = 20
STUB_SPARK_SUBMIT = """#!/bin/sh
# The repair job, running: it never ends by itself.
touch "$STUB_SPARK_SUBMIT_STARTED"
exec sleep 3600
"""


def greeting(port: int) -> int:
    """The SMTP server's greeting code: 220, or 421 while in maintenance."""
    try:
        with smtplib.SMTP("127.0.0.1", port, timeout=10):
            return 220   # smtplib raises on any other greeting
    except smtplib.SMTPConnectError as refused:
        return refused.smtp_code


def send(port: int, recipient: str) -> dict:
    message = f"From: ops@remote.example\r\nTo: {recipient}\r\nSubject: back\r\n\r\nhello\r\n"
    with smtplib.SMTP("127.0.0.1", port, timeout=30) as client:
        return client.sendmail("ops@remote.example", [recipient], message.encode())


def accepts_mail(port: int, recipient: str) -> bool:
    try:
        return send(port, recipient) == {}
    except (smtplib.SMTPConnectError, smtplib.SMTPServerDisconnected, smtplib.SMTPResponseException):
        return False


@pytest.fixture
def mail_server(stack, maintenance_cassandra, unique, tmp_path):
    tag = f"kill-{unique}-{uuid.uuid4().hex[:6]}"
    with IsolatedVhost(stack, tag) as vhost:
        env = server_env(stack, vhost.amqp_url, maintenance_cassandra.keyspace, tag, DEFAULT_FILE)
        server = ServerProcess(env, tmp_path / "mailserver.log").start()
        try:
            yield server
        finally:
            http_json("DELETE", server.webadmin_url + "/maintenance")
            server.terminate()


def test_a_killed_repair_task_leaves_maintenance_by_the_deadline_and_smtp_takes_mail_again(
        stack, airflow_db, mail_server, maintenance_cassandra, tmp_path):
    domain = f"kill{uuid.uuid4().hex[:8]}.test"
    http_json("PUT", f"{mail_server.webadmin_url}/domains/{domain}")
    http_json("PUT", f"{mail_server.webadmin_url}/users/bob@{domain}", {"password": "secret-pw"})
    recipient = f"bob@{domain}"
    assert send(mail_server.smtp_port, recipient) == {}   # mail flows before the repair

    bin_dir, started = tmp_path / "bin", tmp_path / "spark-submit-started"
    bin_dir.mkdir()
    stub = bin_dir / "spark-submit"
    stub.write_text(STUB_SPARK_SUBMIT)
    stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    conns = airflow_connections(stack, spark_master="local[1]", keyspace=maintenance_cassandra.keyspace,
                                webadmin_url=mail_server.webadmin_url, webadmin_password=WEBADMIN_PASSWORD)
    env = {**os.environ, **conns, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "STUB_SPARK_SUBMIT_STARTED": str(started),
           "MAILPLATFORM_MAINTENANCE_MAX_DURATION_SECONDS": str(MAX_DURATION_SECONDS)}
    log = (tmp_path / "task.log").open("w")
    task = subprocess.Popen([sys.executable, "-m", "tests.support.repair_task_process", DAG_ID, "killed__1"],
                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        eventually(lambda: started.exists() or task.poll() is not None, timeout=180)
        assert task.poll() is None, (tmp_path / "task.log").read_text()[-3000:]
        state = http_json("GET", mail_server.webadmin_url + "/maintenance")
        assert state["enabled"] is True and DAG_ID in state["reason"] and state["expiresAt"]
        eventually(lambda: greeting(mail_server.smtp_port) == 421, timeout=15)   # the guard's cache: 2 s
    finally:
        if task.poll() is None:
            os.killpg(task.pid, signal.SIGKILL)   # the worker dies with its job: nothing switches maintenance off
        task.wait(30)
        log.close()

    # Within the maximum duration (from when the task switched it on), plus the guard's 2 s cache.
    eventually(lambda: accepts_mail(mail_server.smtp_port, recipient), timeout=MAX_DURATION_SECONDS + 10,
               interval=0.5)
    assert http_json("GET", mail_server.webadmin_url + "/maintenance")["enabled"] is False
