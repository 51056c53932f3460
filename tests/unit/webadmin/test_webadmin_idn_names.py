"""Issue 16, internationalised names: a domain is stored in its IDNA (xn--) form, so a user name's
domain part is stored the same way (else SMTP, which looks the punycode up, never finds the user),
and a Unicode label IDNA 2003 would fold into another name is refused instead."""

from __future__ import annotations

import pytest

from mailserver.model.address import MailAddress, Username
from mailserver.queue.memory import MemoryMailQueue
from mailserver.rrt.resolver import RecipientRewriter
from mailserver.smtp import SmtpConfig, SmtpServer, SmtpServerThread
from tests.unit.smtp.smtp_helpers import RawClient, drain
from tests.unit.webadmin.webadmin_support import error

PUNYCODE = "xn--bcher-kva.example"   # bücher.example


@pytest.mark.parametrize("name", ["stra%C3%9Fe.de",           # straße: IDNA 2003 stores strasse.de
                                  "%CF%83%CE%AF%CF%83%CF%85%CF%86%CE%BF%CF%82.gr"])   # σίσυφος: final sigma
def test_a_label_idna_would_fold_into_another_name_is_refused(client, ctx, name):
    body = error(client.put(f"/domains/{name}"))
    assert (body["statusCode"], body["type"]) == (400, "InvalidArgument")
    assert "xn--" in body["details"]
    assert ctx.domains.list() == []


def test_a_unicode_domain_is_stored_in_its_ascii_form(client, ctx):
    assert client.put("/domains/B%C3%BCcher.Example").status_code == 204
    assert [d.name for d in ctx.domains.list()] == [PUNYCODE]


def test_a_user_of_a_unicode_domain_is_stored_under_the_stored_domain(client, ctx):
    client.put("/domains/b%C3%BCcher.example")
    assert client.put("/users/Alice@B%C3%BCcher.example", json={"password": "secret"}).status_code == 204
    assert [u.value for u in ctx.users.list_users()] == [f"alice@{PUNYCODE}"]
    assert client.head(f"/users/alice@{PUNYCODE}").status_code == 200


def test_smtp_finds_the_user_created_with_the_unicode_spelling(client, ctx):
    """The SMTP dialogue and the spool: mail for the punycode address reaches the new user."""
    client.put("/domains/b%C3%BCcher.example")
    assert client.put("/users/alice@b%C3%BCcher.example", json={"password": "secret"}).status_code == 204
    spool = MemoryMailQueue("spool")
    server = SmtpServer(SmtpConfig(port=0, hostname="mx.test"), spool, ctx.domains, ctx.users,
                        rewriter=RecipientRewriter(ctx.rrt, ctx.domains),
                        postmaster=MailAddress.of(f"postmaster@{PUNYCODE}"))
    with SmtpServerThread(server) as thread:
        smtp = RawClient(thread.port)
        assert smtp.reply().startswith("220")
        assert smtp.command("EHLO client.test").startswith("250")
        assert smtp.command("MAIL FROM:<bob@remote.test>").startswith("250")
        assert smtp.command(f"RCPT TO:<alice@{PUNYCODE}>") == f"250 2.1.5 Recipient <alice@{PUNYCODE}> OK"
        assert smtp.command("DATA").startswith("354")
        smtp.send(b"Subject: hallo\r\n\r\nhi\r\n.\r\n")
        assert smtp.reply().startswith("250 2.6.0")
        smtp.command("QUIT")
        smtp.close()
    (mail,) = drain(spool)
    assert [str(r) for r in mail.recipients] == [f"alice@{PUNYCODE}"]


def test_the_unicode_spelling_finds_verifies_and_deletes_the_stored_user(client, ctx):
    client.put("/domains/b%C3%BCcher.example")
    client.put("/users/alice@b%C3%BCcher.example", json={"password": "secret"})
    assert client.head("/users/alice@b%C3%BCcher.example").status_code == 200
    assert client.post("/users/alice@b%C3%BCcher.example/verify", json={"password": "secret"}).status_code == 204
    assert client.get("/users/alice@b%C3%BCcher.example/allowedFromHeaders").json() == [f"alice@{PUNYCODE}"]
    assert client.delete("/users/alice@b%C3%BCcher.example").status_code == 204
    assert list(ctx.users.list_users()) == []


def test_a_user_stored_with_a_unicode_domain_part_before_can_still_be_deleted(client, ctx):
    ctx.domains.add("b\u00fccher.example")
    ctx.users.add_user(Username.of("old@b\u00fccher.example"), "secret")   # as an older version stored it
    assert client.head("/users/old@b%C3%BCcher.example").status_code == 200
    assert client.delete("/users/old@b%C3%BCcher.example").status_code == 204
    assert list(ctx.users.list_users()) == []
