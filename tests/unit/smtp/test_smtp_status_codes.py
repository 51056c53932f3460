"""ENHANCEDSTATUSCODES (RFC 2034): advertised in EHLO, and an RFC 3463 code on every 2xx/4xx/5xx reply,
aiosmtpd's own included; only the greeting, the replies to HELO/EHLO and 3xx replies go without."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mailserver.smtp.replies import with_status_code
from tests.unit.smtp.smtp_helpers import LOCAL, USER, RawClient, self_signed

ENHANCED = re.compile(r"^\d{3}[ -]\d\.\d{1,3}\.\d{1,3}( |$)")

# A session through the typical mistakes: each command's reply must carry a code.
COMMANDS = [
    "HELO",
    "MAIL FROM:<bob@remote.test>",                     # before HELO/EHLO
    "EHLO client.test",
    "NOOP",
    "FOO",
    "",
    "HELP",
    "HELP FOO",
    "HELP MAIL",
    "VRFY",
    f"VRFY <{USER}>",
    "VRFY @@@",
    "EXPN staff",
    f"RCPT TO:<{USER}>",                               # before MAIL
    "DATA",
    "MAIL FROM:bob",
    "MAIL FROM:<bob@remote.test> FOO=BAR",
    "MAIL FROM:<bob@remote.test> SIZE=999999999999",
    "MAIL FROM:<bob@remote.test> BODY=X",
    "MAIL FROM:<bob@remote.test> SMTPUTF8",
    "MAIL FROM:<bob@remote.test>",
    "MAIL FROM:<bob@remote.test>",                     # nested
    "RCPT TO:",
    f"RCPT TO:<{USER}> FOO=1",
    f"RCPT TO:<nobody@{LOCAL}>",
    "RCPT TO:<someone@remote.test>",
    f"RCPT TO:<{USER}>",
    "DATA now",
    "RSET now",
    "RSET",
    "AUTH PLAIN",
    "STARTTLS",
    "NOOP " + "x" * 600,
    "QUIT now",
    "QUIT",
]


def test_ehlo_advertises_enhancedstatuscodes(server):
    thread, _ = server()
    client = RawClient(thread.port)
    client.reply()
    assert "250-ENHANCEDSTATUSCODES" in client.command("EHLO client.test").split("\n")
    client.close()


def test_every_reply_of_a_session_of_mistakes_carries_a_code(server):
    # Many errors on purpose: the error limits must not slow or end this session
    thread, _ = server(error_sleep_time=0, hard_error_limit=None)
    client = RawClient(thread.port)
    assert client.reply().startswith("220 ")   # the greeting: exempt
    replies = {}
    for command in COMMANDS:
        reply = client.command(command)
        if command.startswith("EHLO"):
            continue   # the reply to EHLO: exempt, and its keyword lines must stay keywords
        replies[command[:40]] = reply
    client.send("NOOP \u00e9\r\n".encode())   # non-ASCII: aiosmtpd's strict ASCII mode
    client.close()
    without = {command: reply for command, reply in replies.items() if not ENHANCED.match(reply)}
    assert without == {}
    assert replies["QUIT"] == "221 2.0.0 Bye"


def test_the_replies_of_a_tls_session_carry_codes(server, tmp_path: Path):
    cert, key = self_signed(tmp_path)
    thread, _ = server(tls_cert=cert, tls_key=key, require_starttls=True)
    client = RawClient(thread.port)
    client.reply()
    client.command("EHLO client.test")
    assert client.command("MAIL FROM:<bob@remote.test>") == "530 5.7.0 Must issue a STARTTLS command first"
    assert client.command("STARTTLS") == "220 2.0.0 Ready to start TLS"
    client.close()


@pytest.mark.parametrize("reply", [
    "220 mx.local.test JAMES SMTP Server",   # the greeting
    "250-mx.local.test Hello client.test [127.0.0.1]",
    "250-SIZE 26214400",
    "250 HELP",
    "250 mx.local.test Hello client.test [127.0.0.1]",   # HELO
    "354 End data with <CR><LF>.<CR><LF>",
    "334 VXNlciBOYW1lAA==",
    "250 2.1.0 Sender <bob@remote.test> OK",
    "421 4.7.0 mx.local.test Error: too many errors",
])
def test_replies_that_need_no_code_or_have_one_are_left_alone(reply):
    assert with_status_code(reply) == reply


@pytest.mark.parametrize(("reply", "expected"), [
    ("500 Error: command \"FOO\" not recognized", "500 5.5.1 Error: command \"FOO\" not recognized"),
    ("503 Error: need MAIL command", "503 5.5.1 Error: need MAIL command"),
    ("501 Syntax: MAIL FROM: <address>", "501 5.5.4 Syntax: MAIL FROM: <address>"),
    ("250 OK", "250 2.0.0 OK"),
    ("451 Local trouble", "451 4.0.0 Local trouble"),   # unknown to the table: the class's undefined status
    ("554 Refused", "554 5.0.0 Refused"),
])
def test_replies_without_a_code_get_one(reply, expected):
    assert with_status_code(reply) == expected
