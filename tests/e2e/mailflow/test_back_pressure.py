"""SMTP answers 4xx instead of accepting what it could not make durable, and recovers by itself."""

from __future__ import annotations

import smtplib

import pytest

from include.stack.manager import StackManager
from mailserver.runtime.serve import Server
from mailserver.runtime.settings import ServeSettings
from tests.e2e.mailflow.conftest import MailWorld, eventually
from tests.support.ports import unused_port

pytestmark = pytest.mark.integration


def mail_from_reply(port: int) -> tuple[int, bytes]:
    """Connect and try MAIL FROM; a refused greeting counts as the reply."""
    try:
        with smtplib.SMTP("127.0.0.1", port, timeout=30) as client:
            client.ehlo("client.remote.example")
            return client.mail("someone@sender.example")
    except smtplib.SMTPConnectError as exc:
        return exc.smtp_code, exc.smtp_error
    except smtplib.SMTPServerDisconnected:
        return 0, b"disconnected"


def test_spool_over_its_limit_answers_452_and_accepts_once_drained(mail_world: MailWorld):
    user = mail_world.add_user("bp-spool")
    env = {**mail_world.env, "MAILSERVER_ROLES": "smtp", "MAILSERVER_SMTP_PORT": str(unused_port()),
           "MAILSERVER_SMTP_SPOOL_LIMIT": "2"}
    intake = Server(ServeSettings.from_env(env), env).start()
    port = int(env["MAILSERVER_SMTP_PORT"])
    spooler = mail_world.server.role("spooler")
    spooler.stop()     # nobody consumes: the spool fills up
    try:
        for n in range(2):
            with smtplib.SMTP("127.0.0.1", port, timeout=30) as client:
                assert client.sendmail("someone@sender.example", [user], f"Subject: bp {n}\r\n\r\nx\r\n") == {}
        code, reply = eventually(lambda: (r := mail_from_reply(port))[0] == 452 and r, timeout=10)
        assert code == 452 and b"4.3.1" in reply
    finally:
        spooler.start()
    try:
        assert eventually(lambda: mail_from_reply(port)[0] == 250, timeout=60)
        assert eventually(lambda: len(mail_world.inbox(user)) == 2)
    finally:
        intake.stop()


def test_rabbitmq_stopped_answers_421_and_accepts_once_back(mail_world: MailWorld, local_stack: StackManager):
    user = mail_world.add_user("bp-rabbit")
    port = mail_world.smtp_port
    local_stack.down(["rabbitmq"])
    try:
        code, _ = eventually(lambda: (r := mail_from_reply(port))[0] == 421 and r, timeout=30)
        assert code == 421
    finally:
        local_stack.up(["rabbitmq"])
    assert eventually(lambda: mail_from_reply(port)[0] == 250, timeout=60)
    assert mail_world.send("someone@sender.example", [user], "after the outage", subject="back") == {}
    assert eventually(lambda: len(mail_world.inbox(user)) == 1, timeout=90)
