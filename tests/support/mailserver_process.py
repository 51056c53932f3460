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
from tests.support.ports import unused_port

WEBADMIN_PASSWORD = "e2e-admin-secret"



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


def server_env(stack: Endpoints, amqp_url: str, keyspace: str, bucket: str, container: Path,
               **extra: str) -> dict[str, str]:
    env = {**os.environ, **stack.to_env(), "AMQP_URL": amqp_url,
           "CASSANDRA_KEYSPACE": keyspace, "S3_DEFAULT_BUCKET": bucket,
           "MAILSERVER_MAILETCONTAINER": str(container),
           "MAILSERVER_SMTP_PORT": str(unused_port()), "MAILSERVER_WEBADMIN_PORT": str(unused_port()),
           "MAILSERVER_IMAP_PORT": str(unused_port()),
           "MAILSERVER_WEBADMIN_PASSWORD": WEBADMIN_PASSWORD,
           "MAILSERVER_HOSTNAME": "mx.e2e.test",
           # Loopback tests authenticate without STARTTLS; the default (TLS first) is tested elsewhere.
           "MAILSERVER_SMTP_AUTH_REQUIRE_TLS": "false",
           "MAILSERVER_HEALTH_INTERVAL_MS": "500",
           "MAILSERVER_LOG_LEVELS": "cassandra=WARNING,pika=WARNING,botocore=WARNING"}
    env.update(extra)
    return env


class IsolatedVhost:
    """A RabbitMQ virtual host of its own, so the James queue names (``spool``, ``outgoing``) of a
    test server never meet those of another server on the same broker (``make run``'s, say)."""

    def __init__(self, stack: Endpoints, name: str) -> None:
        self.stack = stack
        self.name = name
        parsed = urllib.parse.urlsplit(stack.amqp_url)
        self.user, self.password = parsed.username or "guest", parsed.password or "guest"
        self.amqp_url = urllib.parse.urlunsplit(parsed._replace(path="/" + urllib.parse.quote(name, safe="")))

    def _call(self, method: str, path: str, body: Any = None) -> None:
        token = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
        request = urllib.request.Request(
            self.stack.rabbitmq_management_url.rstrip("/") + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Basic {token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30):
            pass

    def __enter__(self) -> IsolatedVhost:
        vhost = urllib.parse.quote(self.name, safe="")
        self._call("PUT", f"/api/vhosts/{vhost}")
        self._call("PUT", f"/api/permissions/{vhost}/{urllib.parse.quote(self.user, safe='')}",
                   {"configure": ".*", "write": ".*", "read": ".*"})
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._call("DELETE", f"/api/vhosts/{urllib.parse.quote(self.name, safe='')}")
        except urllib.error.HTTPError as error:
            if error.code != 404:
                raise


PORT_SETTINGS = ("MAILSERVER_SMTP_PORT", "MAILSERVER_WEBADMIN_PORT", "MAILSERVER_IMAP_PORT")


class PortTaken(RuntimeError):
    """The server could not bind a port ``unused_port`` had found free."""


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

    def start(self, timeout: float = 120.0, attempts: int = 3) -> ServerProcess:
        """Start and wait until ready. A port that another program took after ``unused_port`` handed
        it out (it lies outside the kernel's ephemeral range, so no outgoing connection can) is
        picked again, not a failure."""
        for attempt in range(1, attempts + 1):
            try:
                return self._start_once(timeout)
            except PortTaken:
                if attempt == attempts:
                    raise
                for key in PORT_SETTINGS:
                    if key in self.env:
                        self.env[key] = str(unused_port())
        raise AssertionError("unreachable")

    def _start_once(self, timeout: float) -> ServerProcess:
        log = self.log_path.open("ab")
        written_before = log.tell()
        self.process = subprocess.Popen([sys.executable, "-m", "mailserver.cli", "serve"], env=self.env,
                                        stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                failure = f"mailserver exited with {self.process.returncode}:\n{self.tail()}"
                with self.log_path.open("rb") as written:
                    written.seek(written_before)
                    if b"address already in use" in written.read():
                        raise PortTaken(failure)
                raise RuntimeError(failure)
            if self.ready():
                return self
            time.sleep(0.3)
        raise RuntimeError(f"mailserver was not ready within {timeout}s:\n{self.tail()}")

    def ready(self) -> bool:
        """Whether the server is up; by default its SMTP greeting (every role has started)."""
        return self.smtp_answers()

    def smtp_answers(self) -> bool:
        """A greeting came (220, or 421 while in maintenance): every role has started."""
        try:
            with socket.create_connection(("127.0.0.1", self.smtp_port), timeout=2) as s:
                return s.recv(3) in (b"220", b"421")
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


class WebAdminProcess(ServerProcess):
    """``mailserver serve --roles webadmin,tasks``: ready once ``/healthcheck`` answers."""

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.webadmin_url + "/healthcheck", timeout=5):
                return True
        except urllib.error.HTTPError:   # 503 while a backend warms up: it answers, it is up
            return True
        except OSError:
            return False
