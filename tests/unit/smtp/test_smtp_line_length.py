"""Line length as James: DATA lines of up to 8,192 octets (a setting), a longer one refused with a reply
that names the limit; command lines keep aiosmtpd's limit and its "too long" reply."""

from __future__ import annotations

import pytest

from mailserver.runtime.settings import ServeSettings, SettingsError
from mailserver.smtp import SmtpConfig
from tests.unit.smtp.smtp_helpers import USER, RawClient, drain


def send_mail(port: int, line: bytes) -> tuple[RawClient, str]:
    """(the client, the reply to the end of DATA) for a message with ``line`` (CRLF added) in its body."""
    client = RawClient(port)
    assert client.reply().startswith("220")
    assert client.command("EHLO client.test").startswith("250")
    assert client.command("MAIL FROM:<bob@remote.test>").startswith("250")
    assert client.command(f"RCPT TO:<{USER}>").startswith("250")
    assert client.command("DATA").startswith("354")
    client.send(b"Subject: long\r\n\r\n" + line + b"\r\n.\r\n")
    return client, client.reply()


def test_the_default_is_james_s():
    assert SmtpConfig().max_line_length == 8192
    assert ServeSettings.from_env({}).smtp.max_line_length == 8192


def test_a_line_of_8192_octets_is_accepted(server):
    thread, queue = server()
    line = b"x" * 8192
    client, reply = send_mail(thread.port, line)
    assert reply.startswith("250 ")
    client.close()
    [mail] = drain(queue)
    assert mail.content.data is not None and line + b"\r\n" in mail.content.data


def test_a_longer_line_is_refused_with_the_limit_in_the_reply(server):
    thread, queue = server()
    client, reply = send_mail(thread.port, b"x" * 8193)
    assert reply == "500 5.5.2 Line too long: at most 8192 octets a line, CRLF not counted"
    assert client.command("NOOP").startswith("250 ")   # the session goes on, in step
    client.close()
    assert drain(queue) == []


def test_the_limit_is_a_setting(server):
    thread, queue = server(max_line_length=2000)
    client, reply = send_mail(thread.port, b"x" * 2000)
    assert reply.startswith("250 ")
    client.close()
    client, reply = send_mail(thread.port, b"x" * 2001)
    assert reply == "500 5.5.2 Line too long: at most 2000 octets a line, CRLF not counted"
    client.close()
    assert len(drain(queue)) == 1


def test_the_setting_comes_from_the_environment_and_keeps_rfc_5321_s_minimum():
    assert ServeSettings.from_env({"MAILSERVER_SMTP_MAX_LINE_LENGTH": "2048"}).smtp.max_line_length == 2048
    with pytest.raises(SettingsError, match="MAILSERVER_SMTP_MAX_LINE_LENGTH: must be at least 998"):
        ServeSettings.from_env({"MAILSERVER_SMTP_MAX_LINE_LENGTH": "997"})


@pytest.mark.parametrize("length", [600, 9000, 100_000])
def test_an_over_long_command_line_is_too_long_and_the_session_goes_on(server, length):
    thread, _ = server()
    client = RawClient(thread.port)
    assert client.reply().startswith("220")
    assert client.command("NOOP " + "x" * length) == "500 5.5.2 Command line too long"
    assert client.command("NOOP").startswith("250 ")
    client.close()
