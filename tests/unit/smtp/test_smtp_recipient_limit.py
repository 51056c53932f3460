"""Recipients per message (Postfix's ``smtpd_recipient_limit``): a RCPT over the limit gets ``452 4.5.3``
(RFC 5321 4.5.3.1.10) and the mail still goes to the recipients accepted before it."""

from __future__ import annotations

import pytest

from mailserver.model.address import MailAddress
from mailserver.runtime.settings import ServeSettings
from mailserver.smtp import SmtpConfig
from tests.unit.smtp.smtp_helpers import LOCAL, OTHER_USER, POSTMASTER, USER, RawClient, drain

CONTENT = b"Subject: many\r\n\r\nbody\r\n.\r\n"


def transaction(port: int) -> RawClient:
    client = RawClient(port)
    assert client.reply().startswith("220")
    assert client.command("EHLO client.test").startswith("250")
    assert client.command("MAIL FROM:<bob@remote.test>").startswith("250")
    return client


def test_the_default_is_postfix_s():
    assert SmtpConfig().max_recipients == 1000
    assert ServeSettings.from_env({}).smtp.max_recipients == 1000


@pytest.mark.parametrize(("value", "expected"), [("50", 50), ("0", None)])
def test_the_limit_is_a_setting(value, expected):
    assert ServeSettings.from_env({"MAILSERVER_SMTP_MAX_RECIPIENTS": value}).smtp.max_recipients == expected


def test_a_rcpt_over_the_limit_is_refused_and_the_mail_goes_to_the_accepted_ones(server):
    thread, queue = server(max_recipients=2)
    client = transaction(thread.port)
    assert client.command(f"RCPT TO:<{USER}>").startswith("250 ")
    assert client.command(f"RCPT TO:<{OTHER_USER}>").startswith("250 ")
    assert client.command(f"RCPT TO:<{POSTMASTER}>") == "452 4.5.3 Too many recipients (at most 2 a message)"
    assert client.command("DATA").startswith("354")
    client.send(CONTENT)
    assert client.reply().startswith("250 ")
    client.close()
    [mail] = drain(queue)
    assert mail.recipients == [MailAddress.of(USER), MailAddress.of(OTHER_USER)]


def test_the_default_limit_holds_on_a_thousand_and_one_recipients(server):
    thread, queue = server(validate_recipients=False)   # every address of the local domain exists
    client = transaction(thread.port)
    # PIPELINING is not offered but RCPTs sent in one write are answered in order, one reply each
    client.send(b"".join(f"RCPT TO:<user{n}@{LOCAL}>\r\n".encode() for n in range(1001)))
    replies = [client.reply() for _ in range(1001)]
    assert all(reply.startswith("250 ") for reply in replies[:1000])
    assert replies[1000] == "452 4.5.3 Too many recipients (at most 1000 a message)"
    assert client.command("DATA").startswith("354")
    client.send(CONTENT)
    assert client.reply().startswith("250 ")
    client.close()
    [mail] = drain(queue)
    assert len(mail.recipients) == 1000


def test_over_limit_rcpts_are_no_client_errors_until_the_overshoot_limit(server):
    """Postfix: a client that pipelined too many RCPTs is not at fault; one that keeps going is."""
    thread, queue = server(max_recipients=1, recipient_overshoot_limit=4, hard_error_limit=3, error_sleep_time=0)
    client = transaction(thread.port)
    assert client.command(f"RCPT TO:<{USER}>").startswith("250 ")
    for _ in range(4):
        assert client.command(f"RCPT TO:<{OTHER_USER}>").startswith("452 4.5.3 ")
    assert client.command("DATA").startswith("354")   # four refusals, no error counted: still open
    client.send(CONTENT)
    assert client.reply().startswith("250 ")
    assert len(drain(queue)) == 1

    assert client.command("MAIL FROM:<bob@remote.test>").startswith("250")
    assert client.command(f"RCPT TO:<{USER}>").startswith("250 ")
    for _ in range(4 + 2):   # the overshoot allowance again (per transaction), then two errors
        assert client.command(f"RCPT TO:<{OTHER_USER}>").startswith("452 4.5.3 ")
    assert client.command(f"RCPT TO:<{OTHER_USER}>").startswith("452 4.5.3 ")   # the third error
    assert client.reply() == "421 4.7.0 mx.local.test Error: too many errors"
    client.close()
