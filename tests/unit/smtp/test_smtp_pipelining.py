"""DATA ends a pipeline group (RFC 2920 3.1; issue 16): nothing the client sent after DATA, or after
the end of its content, without waiting for our reply is run: the reply, then the session ends.

PIPELINING is not offered, so such input means the client ignores our replies; what it sent
next must not start a new transaction, whatever DATA's reply was (a refusal above all, where
the "next transaction" is often the content of a smuggling attempt).
"""

from __future__ import annotations

from tests.unit.smtp.smtp_helpers import LOCAL, RawClient, drain

SECOND = (f"MAIL FROM:<ceo@{LOCAL}>\r\nRCPT TO:<alice@{LOCAL}>\r\nDATA\r\n"
          f"From: ceo@{LOCAL}\r\nSubject: second\r\n\r\nsend money\r\n.\r\n").encode()


def session(port: int) -> RawClient:
    client = RawClient(port)
    assert client.reply().startswith("220")
    assert client.command("EHLO client.test").startswith("250")
    return client


def data_accepted(client: RawClient) -> None:
    assert client.command("MAIL FROM:<bob@remote.test>").startswith("250")
    assert client.command(f"RCPT TO:<alice@{LOCAL}>").startswith("250")
    assert client.command("DATA").startswith("354")


def closed(client: RawClient) -> bool:
    """The server ended the session: nothing more than what was already read comes."""
    client.sock.settimeout(5)
    try:
        rest = client.sock.recv(65536)
    except ConnectionResetError:
        rest = b""
    client.close()
    return client.buffer == b"" and rest == b""


def test_a_transaction_pipelined_after_a_refused_content_is_not_run(server):
    thread, queue = server()
    client = session(thread.port)
    data_accepted(client)
    client.send(b"Subject: first\r\n\r\nbare\nline feed\r\n.\r\n" + SECOND)   # one write
    assert client.reply() == "500 5.0.0 line delimiter must be CRLF"
    assert closed(client)
    assert drain(queue) == []


def test_a_transaction_pipelined_after_an_oversized_content_is_not_run(server):
    thread, queue = server(max_message_size=200)
    client = session(thread.port)
    data_accepted(client)
    client.send(b"Subject: first\r\n\r\n" + b"z" * 70 + b"\r\n" * 4 + b"z" * 200 + b"\r\n.\r\n" + SECOND)
    assert client.reply() == "552 5.3.4 Message size exceeds fixed maximum message size"
    assert closed(client)
    assert drain(queue) == []


def test_content_pipelined_with_a_refused_data_command_is_never_read_as_commands(server):
    thread, queue = server()
    client = session(thread.port)
    assert client.command("MAIL FROM:<bob@remote.test>").startswith("250")
    assert client.command("RCPT TO:<carol@elsewhere.test>").startswith("550")   # no recipient: DATA is refused
    client.send(b"DATA\r\nSubject: first\r\n\r\n" + SECOND + b".\r\n")            # one write: DATA, content, "."
    assert client.reply() == "503 5.5.1 Error: need RCPT command"
    assert closed(client)
    assert drain(queue) == []


def test_content_sent_before_the_354_is_refused(server):
    thread, queue = server()
    client = session(thread.port)
    assert client.command("MAIL FROM:<bob@remote.test>").startswith("250")
    assert client.command(f"RCPT TO:<alice@{LOCAL}>").startswith("250")
    client.send(b"DATA\r\nSubject: eager\r\n\r\nbody\r\n.\r\n" + SECOND)
    assert client.reply() == "554 5.5.0 Error: SMTP protocol synchronization"
    assert closed(client)
    assert drain(queue) == []


def test_two_transactions_in_one_write_after_a_refused_data(server):
    """The issue's dialogue: a refused DATA, then MAIL/RCPT/DATA + content + "." + MAIL/RCPT/DATA... at once."""
    thread, queue = server()
    client = session(thread.port)
    assert client.command("MAIL FROM:<bob@remote.test>").startswith("250")
    assert client.command("DATA") == "503 5.5.1 Error: need RCPT command"
    first = (f"MAIL FROM:<bob@remote.test>\r\nRCPT TO:<alice@{LOCAL}>\r\nDATA\r\n"
             f"Subject: first\r\n\r\nbody\r\n.\r\n").encode()
    client.send(b"RSET\r\n" + first + SECOND)
    replies = [client.reply() for _ in range(4)]
    assert replies[:3] == ["250 2.0.0 OK", "250 2.1.0 Sender <bob@remote.test> OK",
                           f"250 2.1.5 Recipient <alice@{LOCAL}> OK"]
    assert replies[3] == "554 5.5.0 Error: SMTP protocol synchronization"   # DATA with its content behind it
    assert closed(client)
    assert drain(queue) == []


def test_a_client_that_waits_goes_on_after_a_refused_content(server):
    thread, queue = server()
    client = session(thread.port)
    data_accepted(client)
    client.send(b"Subject: first\r\n\r\nbare\nline feed\r\n.\r\n")
    assert client.reply() == "500 5.0.0 line delimiter must be CRLF"
    data_accepted(client)
    client.send(b"Subject: second\r\n\r\nfine\r\n.\r\n")
    assert client.reply().startswith("250 2.6.0")
    client.command("QUIT")
    client.close()
    (mail,) = drain(queue)
    assert mail.content.data.endswith(b"Subject: second\r\n\r\nfine\r\n")
