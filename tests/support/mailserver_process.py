"""Run the mail server for end-to-end tests: in this process (``Server``) or as a child process.

Both read the same environment: the stack's endpoints, the session keyspace, a bucket and
ports of their own, and a test copy of ``mailetcontainer.yaml`` with short delivery delays.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from include.stack.endpoints import Endpoints
from mailserver.mailets.config import DEFAULT_FILE

WEBADMIN_PASSWORD = "e2e-admin-secret"
JAMES_QUEUE_PREFIX = "JamesMailQueue-"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mailet_container_for_tests(path: Path, *, delay_time: str = "2s, 2s", max_retries: int = 2,
                               spooler_threads: int = 4) -> Path:
    """The shipped chain with test-sized delivery retries (the file under test stays the shipped one).

    Edited as text: a YAML round trip would turn the mailet name ``Null`` into a null.
    """
    text = DEFAULT_FILE.read_text()
    edits = {'delayTime: "5000, 100000, 500000"': f'delayTime: "{delay_time}"',
             "maxRetries: 3\n": f"maxRetries: {max_retries}\n        timeout: 10000\n        connectiontimeout: 5000\n",
             "deliveryThreads: 10": "deliveryThreads: 2",
             "  threads: 20": f"  threads: {spooler_threads}"}
    for old, new in edits.items():
        if text.count(old) != 1:
            raise AssertionError(f"the shipped mailetcontainer.yaml changed: {old!r} is not found exactly once")
        text = text.replace(old, new)
    path.write_text(text)
    return path


def server_env(stack: Endpoints, keyspace: str, bucket: str, container: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, **stack.to_env(),
           "CASSANDRA_KEYSPACE": keyspace, "S3_DEFAULT_BUCKET": bucket,
           "MAILSERVER_MAILETCONTAINER": str(container),
           "MAILSERVER_SMTP_PORT": str(free_port()), "MAILSERVER_WEBADMIN_PORT": str(free_port()),
           "MAILSERVER_WEBADMIN_PASSWORD": WEBADMIN_PASSWORD,
           "MAILSERVER_HOSTNAME": "mx.e2e.test",
           # Loopback tests authenticate without STARTTLS; the default (TLS first) is tested elsewhere.
           "MAILSERVER_SMTP_AUTH_REQUIRE_TLS": "false",
           "MAILSERVER_HEALTH_INTERVAL_MS": "500",
           "MAILSERVER_LOG_LEVELS": "cassandra=WARNING,pika=WARNING,botocore=WARNING"}
    env.update(extra)
    return env


def reset_james_queues(stack: Endpoints, names: tuple[str, ...] = ("spool", "outgoing")) -> None:
    """Delete the broker objects of these mail queues (left over by an earlier session)."""
    import pika

    base = stack.rabbitmq_management_url.rstrip("/")
    parsed = urllib.parse.urlparse(stack.amqp_url)
    request = urllib.request.Request(f"{base}/api/queues/%2F?columns=name")
    token = base64.b64encode(f"{parsed.username or 'guest'}:{parsed.password or 'guest'}".encode()).decode()
    request.add_header("Authorization", f"Basic {token}")
    with urllib.request.urlopen(request, timeout=10) as response:
        existing = [q["name"] for q in json.load(response)]
    doomed = [q for q in existing for n in names
              if q in (f"{JAMES_QUEUE_PREFIX}workqueue-{n}", f"{JAMES_QUEUE_PREFIX}dead-letter-queue-{n}")
              or q.startswith(f"{JAMES_QUEUE_PREFIX}delay-{n}-")]
    connection = pika.BlockingConnection(pika.URLParameters(stack.amqp_url))
    try:
        channel = connection.channel()
        for queue in doomed:
            channel.queue_delete(queue)
    finally:
        connection.close()


class ServerProcess:
    """``mailserver serve`` as a child process (for SIGKILL tests)."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.env = env
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def smtp_port(self) -> int:
        return int(self.env["MAILSERVER_SMTP_PORT"])

    @property
    def webadmin_url(self) -> str:
        return f"http://127.0.0.1:{self.env['MAILSERVER_WEBADMIN_PORT']}"

    def start(self, timeout: float = 120.0) -> ServerProcess:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen([sys.executable, "-m", "mailserver.cli", "serve"], env=self.env,
                                        stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"mailserver exited with {self.process.returncode}:\n{self.tail()}")
            if self.smtp_answers():
                return self
            time.sleep(0.3)
        raise RuntimeError(f"mailserver did not answer SMTP within {timeout}s:\n{self.tail()}")

    def smtp_answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.smtp_port), timeout=2) as s:
                return s.recv(3) == b"220"
        except OSError:
            return False

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(30)

    def terminate(self, timeout: float = 60.0) -> int:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.terminate()
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(30)

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def http_json(method: str, url: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Password": WEBADMIN_PASSWORD,
                                                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        payload = response.read()
    return json.loads(payload) if payload else None
