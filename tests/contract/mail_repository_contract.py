"""Behaviour every mail-repository adapter must have (memory and Cassandra + S3)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from mailserver.model.address import MailAddress
from mailserver.model.mail import MAILET_ERROR, Mail, MailContent, PerRecipientHeader, new_mail_name

RAW = b"From: a@example.com\r\nSubject: stored\r\n\r\nbody of the stored mail\r\n"


def make_mail(**overrides) -> Mail:
    values = dict(
        name=new_mail_name(), sender=MailAddress.of("sender@example.com"),
        recipients=[MailAddress.of("r1@example.com"), MailAddress.of("r2@other.org")],
        content=MailContent.of_bytes(RAW), state="error", error_message="boom: mailet failed",
        attributes={"org.apache.james.SMTPAuthUser": "bob@example.com", "custom": {"n": 1, "l": [1, "a"]}},
        remote_host="client.example", remote_addr="192.0.2.7",
        last_updated=datetime(2026, 11, 1, 12, 0, tzinfo=UTC),
        per_recipient_headers=[PerRecipientHeader("r1@example.com", "X-Tag", "v")])
    values.update(overrides)
    return Mail(**values)


class MailRepositoryContract:
    @pytest.fixture
    def store(self):
        raise NotImplementedError

    @pytest.fixture
    def read_content(self):
        """A function MailContent -> bytes for the adapter under test."""
        raise NotImplementedError

    @pytest.fixture
    def repository(self, store):
        return store.select(f"cassandra://var/mail/test-{uuid.uuid4().hex[:8]}/")

    def test_store_retrieve_round_trip(self, repository, read_content):
        mail = make_mail()
        mail.attributes[MAILET_ERROR] = object()  # not serialisable: James drops it when storing
        key = repository.store(mail)
        got = repository.retrieve(key)
        assert got is not None and key == mail.name
        assert (got.sender, got.recipients, got.state, got.error_message) == \
            (mail.sender, mail.recipients, "error", "boom: mailet failed")
        assert got.attributes == {"org.apache.james.SMTPAuthUser": "bob@example.com",
                                  "custom": {"n": 1, "l": [1, "a"]}}
        assert (got.remote_host, got.remote_addr) == ("client.example", "192.0.2.7")
        assert got.last_updated == mail.last_updated
        assert got.per_recipient_headers == mail.per_recipient_headers
        assert read_content(got.content) == RAW

    def test_null_sender_is_kept(self, repository):
        key = repository.store(make_mail(sender=None))
        assert repository.retrieve(key).sender is None

    def test_list_size_remove_and_remove_all(self, repository):
        keys = [repository.store(make_mail()) for _ in range(3)]
        assert sorted(repository.list_keys()) == sorted(keys)
        assert repository.size() == 3
        repository.remove(keys[0])
        assert repository.retrieve(keys[0]) is None
        assert repository.size() == 2
        assert repository.remove_all() == 2
        assert repository.size() == 0 and list(repository.list_keys()) == []

    def test_store_again_replaces(self, repository):
        mail = make_mail()
        repository.store(mail)
        mail.error_message = "second failure"
        repository.store(mail)
        assert repository.size() == 1
        assert repository.retrieve(mail.name).error_message == "second failure"

    def test_repositories_are_isolated_and_listed(self, store):
        a = store.select(f"cassandra://var/mail/a-{uuid.uuid4().hex[:6]}/")
        b = store.select(f"cassandra://var/mail/b-{uuid.uuid4().hex[:6]}/")
        a.store(make_mail())
        assert b.size() == 0
        assert {a.url, b.url} <= set(store.urls())

    def test_invalid_url_is_refused(self, store):
        with pytest.raises(ValueError, match="protocol://path"):
            store.select("not a url")

    def test_missing_key(self, repository):
        assert repository.retrieve("nope") is None
        repository.remove("nope")  # idempotent
