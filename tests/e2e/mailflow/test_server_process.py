"""The test harness's server process: a port taken after ``unused_port`` found it free is picked again."""

from __future__ import annotations

import socket

import pytest

from tests.e2e.mailflow.conftest import MailWorld
from tests.support.mailserver_process import ServerProcess
from tests.support.ports import unused_port

pytestmark = pytest.mark.integration


def test_a_port_taken_before_the_server_binds_it_is_picked_again(mail_world: MailWorld, tmp_path):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        env = {**mail_world.env, "MAILSERVER_ROLES": "smtp,webadmin", "MAILSERVER_SMTP_PORT": str(taken),
               "MAILSERVER_WEBADMIN_PORT": str(unused_port())}
        server = ServerProcess(env, tmp_path / "server.log").start()
        try:
            assert server.smtp_port != taken
            assert "address already in use" in (tmp_path / "server.log").read_text()
            with socket.create_connection(("127.0.0.1", server.smtp_port), timeout=10) as client:
                assert client.recv(3) == b"220"
        finally:
            server.terminate()
