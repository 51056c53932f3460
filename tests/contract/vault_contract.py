"""Behaviour every deleted-messages vault must have (memory metadata, Cassandra + S3).

Subclasses provide ``vault_at``: a function ``(clock) -> BlobStoreDeletedMessageVault`` on their
backend. Tests use their own owner, and months of their own (long past) when they expire
buckets, so a keyspace shared by the session is fine.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from mailserver.blob.api import BlobNotFound
from mailserver.model.address import MailAddress, Username
from mailserver.model.ids import MailboxId, MessageId
from mailserver.vault.api import DeletedMessageContentNotFound
from mailserver.vault.model import DeletedMessage
from mailserver.vault.query import Query

NOW = datetime(2001, 5, 17, 10, 30, 12, 345000, tzinfo=UTC)


def fixed(moment: datetime):
    return lambda: moment


def raw(subject: str) -> bytes:
    return (f"From: alice@example.com\r\nTo: bob@example.com\r\nSubject: {subject}\r\n\r\n"
            f"Body of {subject}\r\n").encode()


def deleted(owner: Username, subject: str | None = "invoice 42", *, sender: str | None = "alice@example.com",
            recipients: tuple[str, ...] = ("bob@example.com",), has_attachment: bool = False,
            delivered: datetime = NOW - timedelta(days=3), deleted_at: datetime = NOW,
            origins: tuple[MailboxId, ...] | None = None, size: int = 100) -> DeletedMessage:
    return DeletedMessage(
        message_id=MessageId.generate(), origin_mailboxes=origins or (MailboxId.generate(),), owner=owner,
        delivery_date=delivered, deletion_date=deleted_at, sender=MailAddress.of(sender) if sender else None,
        recipients=tuple(MailAddress.of(r) for r in recipients), subject=subject, has_attachment=has_attachment,
        size=size)


def q(*criteria: tuple[str, str, str], limit: int | None = None) -> Query:
    body: dict = {"combinator": "and",
                  "criteria": [{"fieldName": f, "operator": o, "value": v} for f, o, v in criteria]}
    if limit is not None:
        body["limit"] = limit
    return Query.parse(body)


class VaultContract:
    @pytest.fixture
    def vault_at(self):
        raise NotImplementedError

    @pytest.fixture
    def vault(self, vault_at):
        return vault_at(fixed(NOW))

    @pytest.fixture
    def owner(self) -> Username:
        return Username.of(f"v{uuid.uuid4().hex[:10]}@example.com")

    # ------------------------------------------------------------------ append, search, load
    def test_appended_message_is_found_with_its_metadata_and_byte_identical_content(self, vault, owner):
        message = deleted(owner)
        storage = vault.append(message, raw("invoice 42"))
        assert storage.bucket_name == "deleted-messages-2001-05-01"
        assert list(vault.search(owner, Query())) == [message]
        with vault.load(owner, message.message_id) as stream:
            assert stream.read() == raw("invoice 42")

    def test_content_is_streamed_from_chunks(self, vault, owner):
        message = deleted(owner)
        content = raw("chunked") * 500
        vault.append(message, (content[i:i + 1000] for i in range(0, len(content), 1000)))
        with vault.load(owner, message.message_id) as stream:
            assert stream.read() == content

    def test_absent_subject_and_null_sender_round_trip(self, vault, owner):
        message = deleted(owner, subject=None, sender=None, recipients=())
        vault.append(message, raw("x"))
        assert list(vault.search(owner, Query())) == [message]

    def test_search_sees_only_the_owners_messages(self, vault, owner):
        other = Username.of(f"o{uuid.uuid4().hex[:10]}@example.com")
        mine, theirs = deleted(owner), deleted(other)
        vault.append(mine, raw("a"))
        vault.append(theirs, raw("b"))
        assert list(vault.search(owner, Query())) == [mine]
        with pytest.raises(DeletedMessageContentNotFound):
            vault.load(owner, theirs.message_id)

    def test_search_spans_months(self, vault_at, owner):
        january = deleted(owner, "january", deleted_at=datetime(2001, 1, 9, tzinfo=UTC))
        march = deleted(owner, "march", deleted_at=datetime(2001, 3, 9, tzinfo=UTC))
        vault_at(fixed(datetime(2001, 1, 9, tzinfo=UTC))).append(january, raw("january"))
        vault_at(fixed(datetime(2001, 3, 9, tzinfo=UTC))).append(march, raw("march"))
        found = vault_at(fixed(NOW)).search(owner, Query())
        assert sorted(m.subject for m in found) == ["january", "march"]

    @pytest.mark.parametrize(("criterion", "expected"), [
        (("subject", "containsIgnoreCase", "INVOICE"), {"Invoice March", "invoice april"}),
        (("subject", "contains", "Invoice"), {"Invoice March"}),
        (("subject", "equals", "invoice april"), {"invoice april"}),
        (("subject", "equalsIgnoreCase", "INVOICE APRIL"), {"invoice april"}),
        (("sender", "equals", "carol@example.org"), {"holiday"}),
        (("recipients", "contains", "dave@example.org"), {"holiday"}),
        (("hasAttachment", "equals", "true"), {"invoice april"}),
        (("hasAttachment", "equals", "false"), {"Invoice March", "holiday", None}),
        (("deliveryDate", "beforeOrEquals", "2001-05-01T00:00:00Z"), {"Invoice March"}),
        (("deliveryDate", "afterOrEquals", "2001-05-01T00:00:00Z"), {"invoice april", "holiday", None}),
        (("deletionDate", "afterOrEquals", "2001-05-17T10:30:12.345Z"), {"Invoice March", "invoice april",
                                                                          "holiday", None}),
        (("deletionDate", "beforeOrEquals", "2001-05-17T10:30:12.344Z"), set()),
    ])
    def test_search_by_criterion(self, vault, owner, criterion, expected):
        vault.append(deleted(owner, "Invoice March", delivered=datetime(2001, 3, 30, tzinfo=UTC)), raw("1"))
        vault.append(deleted(owner, "invoice april", has_attachment=True,
                             delivered=datetime(2001, 5, 2, tzinfo=UTC)), raw("2"))
        vault.append(deleted(owner, "holiday", sender="carol@example.org",
                             recipients=("bob@example.com", "dave@example.org"),
                             delivered=datetime(2001, 5, 3, tzinfo=UTC)), raw("3"))
        vault.append(deleted(owner, None, sender=None, delivered=datetime(2001, 5, 4, tzinfo=UTC)), raw("4"))
        assert {m.subject for m in vault.search(owner, q(criterion))} == expected

    def test_search_by_origin_mailbox_and_message_id(self, vault, owner):
        mailbox = MailboxId.generate()
        a = deleted(owner, "a", origins=(mailbox,))
        b = deleted(owner, "b")
        vault.append(a, raw("a"))
        vault.append(b, raw("b"))
        assert [m.subject for m in vault.search(owner, q(("originMailboxes", "contains", str(mailbox))))] == ["a"]
        assert [m.subject for m in vault.search(owner, q(("messageId", "equals", str(b.message_id))))] == ["b"]

    def test_criteria_are_and_ed_and_limit_caps_the_matches(self, vault, owner):
        for n in range(5):
            vault.append(deleted(owner, f"report {n}", has_attachment=n % 2 == 0), raw(str(n)))
        both = vault.search(owner, q(("subject", "contains", "report"), ("hasAttachment", "equals", "true")))
        assert sorted(m.subject for m in both) == ["report 0", "report 2", "report 4"]
        assert len(list(vault.search(owner, q(("subject", "contains", "report"), limit=2)))) == 2

    def test_a_message_appended_again_is_one_entry(self, vault, owner):
        message = deleted(owner)
        vault.append(message, raw("first"))
        vault.append(message, raw("second"))
        assert list(vault.search(owner, Query())) == [message]
        with vault.load(owner, message.message_id) as stream:
            assert stream.read() == raw("second")

    def test_identical_contents_are_two_blobs(self, vault, owner):
        """Vault content is not deduplicated: deleting one entry keeps the other's content."""
        first, second = deleted(owner), deleted(owner)
        vault.append(first, raw("same"))
        vault.append(second, raw("same"))
        assert vault.delete(owner, first.message_id)
        with vault.load(owner, second.message_id) as stream:
            assert stream.read() == raw("same")

    # ------------------------------------------------------------------ delete one
    def test_delete_removes_metadata_and_content(self, vault, owner):
        kept, gone = deleted(owner, "kept"), deleted(owner, "gone")
        vault.append(kept, raw("kept"))
        storage = vault.append(gone, raw("gone"))
        assert vault.delete(owner, gone.message_id) is True
        assert [m.subject for m in vault.search(owner, Query())] == ["kept"]
        with pytest.raises(DeletedMessageContentNotFound):
            vault.load(owner, gone.message_id)
        with pytest.raises(BlobNotFound):
            vault.blobs.read(storage.bucket_name, storage.blob_id)

    def test_delete_of_an_unknown_message_is_false(self, vault, owner):
        assert vault.delete(owner, MessageId.generate()) is False

    def test_load_of_an_unknown_message_raises(self, vault, owner):
        with pytest.raises(DeletedMessageContentNotFound):
            vault.load(owner, MessageId.generate())

    # ------------------------------------------------------------------ expiry
    def test_delete_expired_drops_whole_ended_months_only(self, vault_at, owner):
        months = [datetime(1991, m, 15, tzinfo=UTC) for m in (1, 2, 3)]
        messages = []
        for month in months:
            message = deleted(owner, f"{month:%B}", deleted_at=month)
            vault_at(fixed(month)).append(message, raw(f"{month:%B}"))
            messages.append(message)
        vault = vault_at(fixed(NOW))
        # February's month ends on 1991-03-01: a retention starting on 1991-03-01T00:00:01 expires it.
        beginning = datetime(1991, 3, 1, 0, 0, 1, tzinfo=UTC)
        assert {"deleted-messages-1991-01-01", "deleted-messages-1991-02-01"} <= set(vault.expired_buckets(beginning))
        assert "deleted-messages-1991-03-01" not in vault.expired_buckets(beginning)
        deleted_buckets = vault.delete_expired(beginning)
        assert {"deleted-messages-1991-01-01", "deleted-messages-1991-02-01"} <= set(deleted_buckets)
        assert "deleted-messages-1991-03-01" not in deleted_buckets
        assert [m.subject for m in vault.search(owner, Query())] == ["March"]
        for message in messages[:2]:
            with pytest.raises(DeletedMessageContentNotFound):
                vault.load(owner, message.message_id)
        assert list(vault.blobs.list_blobs("deleted-messages-1991-01-01")) == []
        with vault.load(owner, messages[2].message_id) as stream:
            assert stream.read() == raw("March")
        assert "deleted-messages-1991-01-01" not in vault.metadata.related_buckets()
        assert not [b for b in vault.delete_expired(beginning) if b.startswith("deleted-messages-1991")]

    def test_expiry_stopped_after_the_blobs_is_finished_by_the_next_run(self, vault_at, owner):
        month = datetime(1985, 6, 2, tzinfo=UTC)
        message = deleted(owner, "june", deleted_at=month)
        vault_at(fixed(month)).append(message, raw("june"))
        vault = vault_at(fixed(NOW))
        vault.blobs.delete_bucket("deleted-messages-1985-06-01")   # a run killed between blobs and metadata
        assert "deleted-messages-1985-06-01" in vault.metadata.related_buckets()
        assert "deleted-messages-1985-06-01" in vault.delete_expired(datetime(1986, 1, 1, tzinfo=UTC))
        assert list(vault.search(owner, Query())) == []
        assert "deleted-messages-1985-06-01" not in vault.metadata.related_buckets()

