"""A mail nested thousands of MIME levels in a mail repository is shown with its headers and the
bodies found within the walk's depth limit, instead of a 500 from a recursion error."""

from __future__ import annotations

import pytest

from mailserver.model.mail import MailContent
from tests.contract.mail_repository_contract import make_mail
from tests.unit.imap.test_imap_nesting import nested_messages, nested_multiparts
from tests.unit.webadmin.task_support import task_context

ERROR = "var%2Fmail%2Ferror%2F"
FIELDS = {"additionalFields": "headers,textBody,htmlBody"}


@pytest.fixture
def ctx():
    """A context with mail repositories (the memory one of ``conftest`` has none)."""
    with task_context() as context:
        yield context


NORMAL = (b"Subject: s\r\nContent-Type: multipart/mixed; boundary=m\r\n\r\n"
          b"--m\r\nContent-Type: message/rfc822\r\n\r\nContent-Type: text/plain\r\n\r\nforwarded\r\n"
          b"--m\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Disposition: attachment\r\n\r\nfile\r\n"
          b"--m\r\nContent-Type: multipart/alternative; boundary=a\r\n\r\n"
          b"--a\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n"
          b"w6l0w6k=\r\n--a\r\nContent-Type: text/html\r\n\r\n<p>html</p>\r\n--a--\r\n--m--\r\n")


def test_5000_level_mails_are_shown_with_their_headers_beside_a_normal_one(client, ctx):
    repository = ctx.repositories.select("cassandra://var/mail/error/")
    repository.store(make_mail(name="multiparts", content=MailContent.of_bytes(nested_multiparts(5000))))
    repository.store(make_mail(name="messages", content=MailContent.of_bytes(nested_messages(5000))))
    repository.store(make_mail(name="normal", content=MailContent.of_bytes(NORMAL)))
    for name in ("multiparts", "messages"):
        response = client.get(f"/mailRepositories/{ERROR}/mails/{name}", params=FIELDS)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["headers"]["Subject"] == ["deep"]
        assert (body["textBody"], body["htmlBody"]) == (None, None)   # the text lies below the depth limit
    # the bodies of a normal mail: the first text parts outside attachments and attached messages
    body = client.get(f"/mailRepositories/{ERROR}/mails/normal", params=FIELDS).json()
    assert (body["textBody"].strip(), body["htmlBody"].strip()) == ("été", "<p>html</p>")
