"""Error limits per session (Postfix's ``smtpd_soft_error_limit`` / ``smtpd_hard_error_limit``): a client
that keeps getting 4xx/5xx replies (unknown-user RCPTs: address harvesting) is slowed, then disconnected."""

from __future__ import annotations

import asyncio
import select

import pytest

from mailserver.runtime.settings import ServeSettings, SettingsError
from mailserver.smtp import SmtpConfig
from mailserver.smtp.errors import SessionErrors
from tests.unit.smtp.smtp_helpers import LOCAL, USER, RawClient, drain

TOO_MANY_ERRORS = "421 4.7.0 mx.local.test Error: too many errors"


def session(port: int) -> RawClient:
    client = RawClient(port)
    assert client.reply().startswith("220")
    assert client.command("EHLO client.test").startswith("250")
    return client


def closed_by_server(client: RawClient) -> bool:
    client.sock.settimeout(5)
    try:
        return client.sock.recv(1) == b""
    except ConnectionResetError:
        return True


def unknown_user(client: RawClient, n: int) -> str:
    return client.command(f"RCPT TO:<nobody{n}@{LOCAL}>")


def test_postfix_defaults():
    config = SmtpConfig()
    assert (config.soft_error_limit, config.hard_error_limit, config.error_sleep_time) == (10, 20, 1.0)


@pytest.mark.parametrize(("env", "expected"), [
    ({}, (10, 20, 1.0)),
    ({"MAILSERVER_SMTP_SOFT_ERROR_LIMIT": "3", "MAILSERVER_SMTP_HARD_ERROR_LIMIT": "6",
      "MAILSERVER_SMTP_ERROR_SLEEP_MS": "250"}, (3, 6, 0.25)),
    ({"MAILSERVER_SMTP_SOFT_ERROR_LIMIT": "0", "MAILSERVER_SMTP_HARD_ERROR_LIMIT": "0"}, (None, None, 1.0)),
])
def test_limits_from_the_environment(env, expected):
    smtp = ServeSettings.from_env(env).smtp
    assert (smtp.soft_error_limit, smtp.hard_error_limit, smtp.error_sleep_time) == expected


def test_a_negative_sleep_is_a_settings_error():
    with pytest.raises(SettingsError, match="MAILSERVER_SMTP_ERROR_SLEEP_MS"):
        ServeSettings.from_env({"MAILSERVER_SMTP_ERROR_SLEEP_MS": "-1"})


def test_harvesting_unknown_users_ends_at_the_hard_limit(server):
    thread, queue = server(error_sleep_time=0)   # the default hard limit (20), without the soft delays
    client = session(thread.port)
    assert client.command("MAIL FROM:<bob@remote.test>").startswith("250")
    for n in range(20):
        assert unknown_user(client, n).startswith("550 5.1.1 Unknown user")
    assert client.reply() == TOO_MANY_ERRORS   # right after the 20th error, as Postfix
    assert closed_by_server(client)
    client.close()
    assert drain(queue) == []


def test_every_kind_of_error_counts(server):
    thread, _ = server(hard_error_limit=4, error_sleep_time=0)
    client = session(thread.port)
    assert client.command("FOO").startswith("500 ")                       # unknown command
    assert client.command("RCPT TO:<x@remote.test>").startswith("503 ")   # out of sequence
    assert client.command("MAIL FROM:<bob@remote.test> FOO=1").startswith("555 ")
    assert client.command("MAIL FROM:<bob@remote.test>").startswith("250 ")
    assert client.command("RCPT TO:<x@remote.test>").startswith("550 5.7.1 ")   # relaying denied
    assert client.reply() == TOO_MANY_ERRORS
    assert closed_by_server(client)
    client.close()


def test_errors_before_an_accepted_mail_are_forgiven(server):
    thread, queue = server(hard_error_limit=3, error_sleep_time=0)
    client = session(thread.port)
    assert client.command("MAIL FROM:<bob@remote.test>").startswith("250")
    assert unknown_user(client, 1).startswith("550 ") and unknown_user(client, 2).startswith("550 ")
    assert client.command(f"RCPT TO:<{USER}>").startswith("250")
    assert client.command("DATA").startswith("354")
    client.send(b"Subject: hi\r\n\r\nbody\r\n.\r\n")
    assert client.reply().startswith("250 ")
    assert client.command("MAIL FROM:<bob@remote.test>").startswith("250")
    assert unknown_user(client, 3).startswith("550 ") and unknown_user(client, 4).startswith("550 ")
    assert client.command("NOOP").startswith("250 ")   # two errors since the mail: still served
    assert unknown_user(client, 5).startswith("550 ")
    assert client.reply() == TOO_MANY_ERRORS
    client.close()
    assert len(drain(queue)) == 1


def test_over_the_soft_limit_replies_wait_without_holding_other_sessions(server):
    # A delay far longer than the test: the slowed reply must still be pending when the other session ends.
    thread, _ = server(soft_error_limit=2, hard_error_limit=None, error_sleep_time=600)
    slowed = session(thread.port)
    assert slowed.command("FOO").startswith("500 ")
    assert slowed.command("BAR").startswith("500 ")   # the second error: from now on every reply waits
    slowed.send(b"NOOP\r\n")

    other = session(thread.port)   # served on the same event loop meanwhile
    assert other.command("NOOP").startswith("250 ")
    assert other.command("QUIT").startswith("221 ")
    other.close()

    readable, _, _ = select.select([slowed.sock], [], [], 0)
    assert readable == [] and slowed.buffer == b""   # the NOOP of the slowed session is not answered yet
    slowed.close()


def test_the_pace_is_one_sleep_a_reply_from_the_soft_limit_on():
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def run() -> None:
        errors = SessionErrors(soft=2, hard=3, sleep_time=1.5, sleep=sleep)
        await errors.pace()
        assert errors.record() is False
        await errors.pace()
        assert errors.record() is False
        assert slept == []
        await errors.pace()
        await errors.pace()
        assert slept == [1.5, 1.5]
        errors.forgive()
        await errors.pace()
        assert slept == [1.5, 1.5] and errors.count == 0
        assert [errors.record() for _ in range(3)] == [False, False, True]

    asyncio.run(run())
