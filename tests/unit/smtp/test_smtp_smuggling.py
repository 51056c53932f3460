"""SMTP smuggling (SEC Consult, December 2023): every published vector, sent as raw bytes.

Each vector is injected in the body, followed by the commands of a second, spoofed message and
the real end of data. Whatever the server does, it must never accept a second message: either
it refuses the transaction (strict CRLF, James's ``500 5.0.0 line delimiter must be CRLF``) or it
keeps one message whose body holds the injected text (aiosmtpd's treat-as-content behaviour).
"""

from __future__ import annotations

import pytest

from tests.unit.smtp.smtp_helpers import LOCAL, RawClient, drain, make_server

# hannob/smtpsmug and SEC Consult SMTP-Smuggling-Tools (inbound and outbound lists).
VECTORS = [
    b"\n.\n", b"\r.\r", b"\r.\n", b"\n.\r", b"\n.\r\n", b"\r\n.\n", b"\r.\r\n", b"\r\n.\r",
    b"\r\n\x00.\r\n", b"\r\n.\r\r\n", b"\r\r\n.\r\r\n",
]
SMUGGLED = (f"MAIL FROM:<ceo@{LOCAL}>\r\nRCPT TO:<victim@{LOCAL}>\r\nDATA\r\n"
            f"From: ceo@{LOCAL}\r\nSubject: smuggled\r\n\r\nsend money\r\n").encode()


@pytest.fixture(params=[True, False], ids=["strict", "lenient"])
def server(request):
    thread, queue = make_server(strict_crlf=request.param, users=False)
    yield thread, queue, request.param
    thread.stop()


def transaction(client: RawClient, data: bytes) -> str:
    assert client.command("EHLO attacker.test").startswith("250")
    assert client.command("MAIL FROM:<someone@remote.test>").startswith("250")
    assert client.command(f"RCPT TO:<alice@{LOCAL}>").startswith("250")
    assert client.command("DATA").startswith("354")
    client.send(data)
    return client.reply()


@pytest.mark.parametrize("vector", VECTORS, ids=[repr(v) for v in VECTORS])
def test_vector_never_yields_a_second_message(server, vector):
    thread, queue, strict = server
    client = RawClient(thread.port)
    assert client.reply().startswith("220")
    reply = transaction(client, b"From: someone@remote.test\r\nSubject: first\r\n\r\nbody 1" + vector
                        + SMUGGLED + b"\r\n.\r\n")
    # whatever happened, the session is back at the command level, in sync
    assert client.command("NOOP").startswith("250")
    client.command("QUIT")
    client.close()
    mails = drain(queue)
    assert len(mails) <= 1
    bare = (b"\r" in vector.replace(b"\r\n", b"")) or (b"\n" in vector.replace(b"\r\n", b""))
    if strict and bare:
        assert reply == "500 5.0.0 line delimiter must be CRLF"
        assert mails == []
    else:
        assert reply.startswith("250 2.6.0")
        [mail] = mails
        assert [str(r) for r in mail.recipients] == [f"alice@{LOCAL}"]
        assert f"MAIL FROM:<ceo@{LOCAL}>".encode() in mail.content.data
        assert b"send money" in mail.content.data


def test_pipelined_second_transaction_after_data_is_refused(server):
    """Everything in one write, PIPELINING not offered: no message is accepted (Postfix's
    smtpd_forbid_unauth_pipelining; hannob's pipelining check)."""
    thread, queue, _ = server
    client = RawClient(thread.port)
    assert client.reply().startswith("220")
    client.send(b"EHLO attacker.test\r\n")
    assert client.reply().startswith("250")
    client.send(b"MAIL FROM:<someone@remote.test>\r\n")
    client.reply()
    client.send(f"RCPT TO:<alice@{LOCAL}>\r\n".encode())
    client.reply()
    client.send(b"DATA\r\n")
    assert client.reply().startswith("354")
    client.send(b"Subject: first\r\n\r\nbody 1\r\n.\r\n" + SMUGGLED + b".\r\nQUIT\r\n")
    assert client.reply() == "554 5.5.0 Error: SMTP protocol synchronization"
    client.close()
    assert drain(queue) == []


def test_legit_dot_stuffing_is_undone(server):
    thread, queue, _ = server
    client = RawClient(thread.port)
    client.reply()
    reply = transaction(client, b"Subject: dots\r\n\r\n..leading dot\r\n...\r\n.\r\n")
    assert reply.startswith("250")
    client.command("QUIT")
    client.close()
    [mail] = drain(queue)
    assert mail.content.data.endswith(b"\r\n\r\n.leading dot\r\n..\r\n")


def test_command_lines_must_end_with_crlf_when_strict(server):
    thread, _, strict = server
    client = RawClient(thread.port)
    client.reply()
    assert client.command("EHLO attacker.test").startswith("250")
    client.send(b"MAIL FROM:<someone@remote.test>\n")
    reply = client.reply()
    if strict:
        assert reply == "500 5.0.0 line delimiter must be CRLF"
        assert client.command("MAIL FROM:<someone@remote.test>").startswith("250")
    else:
        assert reply.startswith("250")
    client.command("QUIT")
    client.close()
