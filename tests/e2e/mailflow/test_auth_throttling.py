"""A client hammering authentication from 127.0.0.2 against a real ``mailserver serve``: its guesses
slow down and stop (on every protocol), the account's owner still logs in from 127.0.0.1, and the
refusal ends by itself. The throttle's windows are test-sized through its settings."""

from __future__ import annotations

import base64
import http.client
import re
import smtplib
import socket
import time
import uuid
from collections.abc import Iterator

import pytest

from tests.support.mailserver_process import (
    WEBADMIN_PASSWORD,
    IsolatedVhost,
    ServerProcess,
    http_json,
    mailet_container_for_tests,
    server_env,
)

pytestmark = pytest.mark.integration

ATTACKER, OWNER = "127.0.0.2", "127.0.0.1"
PASSWORD = "owner-Passw0rd"
WINDOW = 15
PAIR_LIMIT, ADDRESS_LIMIT = 4, 6
THROTTLE = {
    "MAILSERVER_AUTH_THROTTLE_WINDOW_SECONDS": str(WINDOW),
    "MAILSERVER_AUTH_THROTTLE_FREE_FAILURES": "1",
    "MAILSERVER_AUTH_THROTTLE_DELAY_SECONDS": "0.2",
    "MAILSERVER_AUTH_THROTTLE_MAX_DELAY_SECONDS": "0.8",
    "MAILSERVER_AUTH_THROTTLE_ACCOUNT_MAX_DELAY_SECONDS": "0.4",
    "MAILSERVER_AUTH_THROTTLE_ACCOUNT_ADDRESS_LIMIT": str(PAIR_LIMIT),
    "MAILSERVER_AUTH_THROTTLE_ADDRESS_LIMIT": str(ADDRESS_LIMIT),
}


class Server:
    def __init__(self, process: ServerProcess, account: str) -> None:
        self.process = process
        self.account = account
        self.imap_port = int(process.env["MAILSERVER_IMAP_PORT"])
        self.webadmin_port = int(process.env["MAILSERVER_WEBADMIN_PORT"])

    def imap_login(self, source: str, password: str) -> str:
        """The tagged reply to LOGIN on a new connection from ``source``."""
        with socket.create_connection(("127.0.0.1", self.imap_port), timeout=30, source_address=(source, 0)) as s:
            reader = s.makefile("rb")
            reader.readline()   # greeting
            s.sendall(f'a1 LOGIN "{self.account}" "{password}"\r\n'.encode())
            while line := reader.readline().decode():
                if line.startswith("a1 "):
                    return line[3:].strip()
        raise ConnectionError("closed without a reply to LOGIN")

    def smtp_auth(self, source: str, password: str) -> str:
        with smtplib.SMTP("127.0.0.1", self.process.smtp_port, timeout=30, source_address=(source, 0)) as client:
            client.ehlo("client.test")
            token = base64.b64encode(f"\0{self.account}\0{password}".encode()).decode()
            code, text = client.docmd("AUTH", f"PLAIN {token}")
            return f"{code} {text.decode()}"

    def webadmin_get(self, source: str, path: str, password: str) -> http.client.HTTPResponse:
        connection = http.client.HTTPConnection("127.0.0.1", self.webadmin_port, timeout=30,
                                                source_address=(source, 0))
        connection.request("GET", path, headers={"Password": password})
        response = connection.getresponse()
        response.read()
        connection.close()
        return response

    def meter(self, name: str) -> float:
        connection = http.client.HTTPConnection("127.0.0.1", self.webadmin_port, timeout=30)
        connection.request("GET", "/metrics")   # public
        text = connection.getresponse().read().decode()
        connection.close()
        match = re.search(rf"^{re.escape(name)}_total (\S+)$", text, re.MULTILINE)
        return float(match.group(1)) if match else 0.0


@pytest.fixture
def server(stack, cassandra, cassandra_config, tmp_path) -> Iterator[Server]:
    tag = uuid.uuid4().hex[:8]
    container = mailet_container_for_tests(tmp_path / "mailetcontainer.yaml")
    with IsolatedVhost(stack, f"e2e-throttle-{tag}") as vhost:
        env = server_env(stack, vhost.amqp_url, cassandra_config.keyspace, f"throttle-{tag}", container,
                         MAILSERVER_ROLES="smtp,imap,webadmin", MAILSERVER_IMAP_AUTH_REQUIRE_TLS="false", **THROTTLE)
        process = ServerProcess(env, tmp_path / "server.log").start()
        try:
            domain = f"throttle-{tag}.test"
            account = f"owner@{domain}"
            base = process.webadmin_url
            http_json("PUT", f"{base}/domains/{domain}")
            http_json("PUT", f"{base}/users/{account}", {"password": PASSWORD})
            yield Server(process, account)
        finally:
            process.terminate()


def test_a_hammering_address_is_slowed_then_stopped_while_the_owner_logs_in_from_another(server, tmp_path):
    replies = [server.imap_login(ATTACKER, f"guess-{n}") for n in range(PAIR_LIMIT + 3)]
    assert replies[:PAIR_LIMIT] == ["NO [AUTHENTICATIONFAILED] Authentication failed"] * PAIR_LIMIT
    assert all(r.startswith("NO [UNAVAILABLE] Too many authentication failures, try again in ") for r in
               replies[PAIR_LIMIT:]), replies
    # Slowed: every guess after the first (free) one waited before its password was checked.
    assert server.meter("authenticationDelays:IMAP") == PAIR_LIMIT - 1
    assert server.meter("authenticationFailures:IMAP") == PAIR_LIMIT

    # Stopped: the right password from that address is refused too, on IMAP and on SMTP AUTH.
    assert server.imap_login(ATTACKER, PASSWORD).startswith("NO [UNAVAILABLE]")
    assert server.smtp_auth(ATTACKER, PASSWORD).startswith("454 4.7.0 Too many authentication failures")
    # The owner, from another address, gets in on both.
    assert server.imap_login(OWNER, PASSWORD).startswith("OK ")
    assert server.smtp_auth(OWNER, PASSWORD).startswith("235 ")

    # The owner waited too (the account's failures, capped at its short delay), never refused.
    assert server.meter("authenticationDelays:IMAP") == PAIR_LIMIT
    assert server.meter("authenticationRefusals:IMAP") == 4
    assert server.meter("authenticationRefusals:SMTP") == 1
    log = (tmp_path / "server.log").read_text()
    assert re.search(rf"WARNING.*IMAP authentication refused for account {re.escape(server.account)} "
                     rf"from address {ATTACKER}", log), log[-3000:]

    # The address goes on guessing elsewhere (WebAdmin) until its own limit: refused with 429 and Retry-After.
    statuses = [server.webadmin_get(ATTACKER, "/domains", f"guess-{n}").status
                for n in range(ADDRESS_LIMIT - PAIR_LIMIT + 1)]
    assert statuses == [401] * (ADDRESS_LIMIT - PAIR_LIMIT) + [429]
    refused = server.webadmin_get(ATTACKER, "/domains", WEBADMIN_PASSWORD)
    assert refused.status == 429 and 1 <= int(refused.getheader("Retry-After")) <= WINDOW
    assert server.webadmin_get(OWNER, "/domains", WEBADMIN_PASSWORD).status == 200

    # The refusal ends by itself once the failures leave the window (refused attempts do not extend it).
    deadline = time.monotonic() + WINDOW + 10
    reply = server.imap_login(ATTACKER, PASSWORD)
    while reply.startswith("NO [UNAVAILABLE]") and time.monotonic() < deadline:
        time.sleep(0.5)
        reply = server.imap_login(ATTACKER, PASSWORD)
    assert reply.startswith("OK "), reply
