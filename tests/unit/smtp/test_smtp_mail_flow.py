"""Issue 16 from the SMTP dialogue to what is stored: SMTP intake, the shipped mailet chain and the
mailboxes, all on memory adapters (example.com with alice and bob)."""

from __future__ import annotations

import pytest

from mailserver.smtp import SmtpConfig, SmtpServer, SmtpServerThread
from tests.unit.mailets.support import Env, container_of, memory_env, run_spool
from tests.unit.smtp.smtp_helpers import RawClient

ADDRESS_ERROR = "cassandra://var/mail/address-error/"


@pytest.fixture
def env() -> Env:
    return memory_env()


@pytest.fixture
def smtp(env: Env):
    server = SmtpServer(SmtpConfig(port=0, hostname="mx.example.com"), env.spool, env.domains, env.users,
                        store=env.contents, rewriter=env.context.rewriter, postmaster=env.context.postmaster)
    with SmtpServerThread(server) as thread:
        yield thread


def dialogue(port: int, rcpts: list[str], content: bytes) -> list[str]:
    """Every reply of one transaction from an unauthenticated remote client, the RCPT ones included."""
    client = RawClient(port)
    replies = [client.reply(), client.command("EHLO client.remote.test"),
               client.command("MAIL FROM:<claimed@remote.org>")]
    replies += [client.command(f"RCPT TO:{r}") for r in rcpts]
    if any(r.startswith("250 2.1.5") for r in replies):
        replies.append(client.command("DATA"))
        client.send(content + b".\r\n")
        replies.append(client.reply())
    client.command("QUIT")
    client.close()
    return replies


def delivered(env: Env) -> None:
    run_spool(env, container_of(env))


def test_unknown_recipient_is_refused_at_rcpt_so_nothing_bounces(env: Env, smtp):
    replies = dialogue(smtp.port, ["<nobody@example.com>", "<alice@example.com>"], b"Subject: hi\r\n\r\nbody\r\n")
    assert replies[3:5] == ["550 5.1.1 Unknown user: nobody@example.com",
                            "250 2.1.5 Recipient <alice@example.com> OK"]
    assert replies[-1].startswith("250 2.6.0")
    delivered(env)
    assert len(env.inbox("alice@example.com")) == 1
    assert env.repository(ADDRESS_ERROR) == []
    assert env.drain("outgoing") == [] and env.spool.size() == 0   # no bounce to claimed@remote.org


def test_postmaster_without_a_domain_reaches_the_postmaster(env: Env, smtp):
    env.users.add_user("postmaster@example.com", "secret")
    replies = dialogue(smtp.port, ["<Postmaster>"], b"Subject: hello postmaster\r\n\r\nbody\r\n")
    assert replies[3] == "250 2.1.5 Recipient <postmaster@example.com> OK"
    assert replies[-1].startswith("250 2.6.0")
    delivered(env)
    (stored,) = env.inbox("postmaster@example.com")
    assert b"Subject: hello postmaster" in stored


def test_header_only_mail_gets_delivered_to_inside_its_header(env: Env, smtp):
    replies = dialogue(smtp.port, ["<alice@example.com>"], b"From: claimed@remote.org\r\nSubject: only a header\r\n")
    assert replies[-1].startswith("250 2.6.0")
    delivered(env)
    (stored,) = env.inbox("alice@example.com")
    assert stored.startswith(b"Return-Path: <claimed@remote.org>\r\nReceived: from 127.0.0.1")
    assert stored.endswith(b"\r\nFrom: claimed@remote.org\r\nSubject: only a header\r\n"
                           b"Delivered-To: alice@example.com\r\n")


def test_a_body_without_the_empty_line_stays_the_body(env: Env, smtp):
    replies = dialogue(smtp.port, ["<alice@example.com>"], b"Subject: no blank line\r\nhello world\r\n")
    assert replies[-1].startswith("250 2.6.0")
    delivered(env)
    (stored,) = env.inbox("alice@example.com")
    assert stored.endswith(b"\r\nSubject: no blank line\r\nDelivered-To: alice@example.com\r\n\r\nhello world\r\n")


def test_a_long_body_without_the_empty_line_is_accepted_and_stays_the_body(env: Env, smtp):
    """Past the store's 1 MiB header limit it was refused (554 5.6.0) for want of an end of header."""
    body = b"body text line\r\n" * 70_000   # 1.1 MB
    replies = dialogue(smtp.port, ["<alice@example.com>"], b"Subject: long, no blank line\r\n" + body)
    assert replies[-1].startswith("250 2.6.0")
    delivered(env)
    (stored,) = env.inbox("alice@example.com")
    assert stored.endswith(b"\r\nSubject: long, no blank line\r\nDelivered-To: alice@example.com\r\n\r\n" + body)

