"""RCPT of local recipients (issue 16): unknown ones refused with 550 5.1.1 (James's ValidRcptHandler),
accounts, rewrite-table mappings and postmaster accepted; ``<postmaster>`` without a domain accepted."""

from __future__ import annotations

import pytest

from mailserver.rrt.mapping import Mapping
from mailserver.rrt.memory import MemoryRecipientRewriteTable
from tests.unit.smtp.smtp_helpers import LOCAL, POSTMASTER, RawClient, drain, make_server


@pytest.fixture
def rrt() -> MemoryRecipientRewriteTable:
    return MemoryRecipientRewriteTable()


@pytest.fixture
def server(rrt):
    started = []

    def start(**config):
        thread, queue = make_server(rrt=rrt, **config)
        started.append(thread)
        return thread, queue

    yield start
    for thread in started:
        thread.stop()


def transaction(port: int, *rcpts: str) -> tuple[list[str], str | None]:
    """The RCPT replies, then DATA's final reply when a recipient was accepted (else None)."""
    client = RawClient(port)
    client.reply()
    client.command("EHLO client.remote.test")
    assert client.command("MAIL FROM:<someone@remote.test>").startswith("250")
    replies = [client.command(f"RCPT TO:{r}") for r in rcpts]
    final = None
    if any(r.startswith("250") for r in replies):
        assert client.command("DATA").startswith("354")
        client.send(b"Subject: hi\r\n\r\nhello\r\n.\r\n")
        final = client.reply()
    client.command("QUIT")
    client.close()
    return replies, final


def test_an_unknown_local_recipient_is_refused_at_rcpt(server):
    thread, queue = server()
    replies, final = transaction(thread.port, f"<nobody@{LOCAL}>")
    assert replies == [f"550 5.1.1 Unknown user: nobody@{LOCAL}"]
    assert final is None and drain(queue) == []


def test_only_the_unknown_recipient_is_dropped_from_the_transaction(server):
    thread, queue = server()
    replies, final = transaction(thread.port, f"<nobody@{LOCAL}>", f"<Alice@{LOCAL}>")
    assert replies == [f"550 5.1.1 Unknown user: nobody@{LOCAL}", f"250 2.1.5 Recipient <Alice@{LOCAL}> OK"]
    assert final.startswith("250 2.6.0")
    (mail,) = drain(queue)
    assert [str(r) for r in mail.recipients] == [f"Alice@{LOCAL}"]


@pytest.mark.parametrize("mapping", [
    Mapping.alias(f"alice@{LOCAL}"),
    Mapping.forward("someone@elsewhere.test"),
    Mapping.group(f"bob@{LOCAL}"),
    Mapping.error("550 gone, write to alice instead"),   # James: an error mapping is a mapping
])
def test_a_recipient_the_rewrite_table_resolves_is_accepted(server, rrt, mapping):
    rrt.add_mapping(f"sales@{LOCAL}", mapping)
    thread, queue = server()
    replies, final = transaction(thread.port, f"<sales@{LOCAL}>")
    assert replies == [f"250 2.1.5 Recipient <sales@{LOCAL}> OK"] and final.startswith("250 2.6.0")
    assert [str(r) for r in drain(queue)[0].recipients] == [f"sales@{LOCAL}"]


def test_a_domain_alias_makes_its_addresses_valid(server, rrt):
    thread, _ = server()
    thread.server.handler.domains.add("alias.test")
    rrt.add_mapping("*@alias.test", Mapping.domain_alias(LOCAL))
    replies, _ = transaction(thread.port, "<anyone@alias.test>")
    assert replies == ["250 2.1.5 Recipient <anyone@alias.test> OK"]


def test_postmaster_of_a_local_domain_is_always_accepted(server):
    thread, _ = server()
    replies, final = transaction(thread.port, f"<PostMaster@{LOCAL}>", f"<abuse@{LOCAL}>")
    assert replies == [f"250 2.1.5 Recipient <PostMaster@{LOCAL}> OK", f"550 5.1.1 Unknown user: abuse@{LOCAL}"]
    assert final.startswith("250 2.6.0")


@pytest.mark.parametrize("spelling", ["<postmaster>", "<Postmaster>", "postmaster"])
def test_postmaster_without_a_domain_is_the_servers_postmaster(server, spelling):
    """RFC 5321 4.5.1: "RCPT TO:<Postmaster>" MUST be accepted, even from an unauthenticated client."""
    thread, queue = server()
    replies, final = transaction(thread.port, spelling)
    assert replies == [f"250 2.1.5 Recipient <{POSTMASTER}> OK"] and final.startswith("250 2.6.0")
    assert [str(r) for r in drain(queue)[0].recipients] == [POSTMASTER]


def test_no_validation_without_a_users_repository_or_when_switched_off(server):
    for config in ({"users": False}, {"validate_recipients": False}):
        thread, _ = server(**config)
        replies, _ = transaction(thread.port, f"<nobody@{LOCAL}>")
        assert replies == [f"250 2.1.5 Recipient <nobody@{LOCAL}> OK"], config


def test_a_failing_users_repository_is_a_temporary_refusal(server):
    thread, queue = server()

    def broken(name):
        raise ConnectionError("cassandra unreachable")

    thread.server.handler.recipients.users.contains = broken
    replies, _ = transaction(thread.port, f"<alice@{LOCAL}>")
    assert replies == ["451 4.3.0 Temporary internal failure, try again later"]
    assert drain(queue) == []
