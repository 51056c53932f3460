"""The mail-repository contract on Cassandra (James's tables) and the S3 server."""

from __future__ import annotations

import uuid

import pytest

from mailserver.queue.content import MimeMessageStore
from mailserver.repository.cassandra import CassandraMailRepositoryStore
from tests.contract.mail_repository_contract import RAW, MailRepositoryContract, make_mail

pytestmark = pytest.mark.integration


class TestCassandraMailRepository(MailRepositoryContract):
    @pytest.fixture
    def contents(self, s3_blobs):
        return MimeMessageStore(s3_blobs)

    @pytest.fixture
    def store(self, cassandra, contents):
        return CassandraMailRepositoryStore(cassandra, contents)

    @pytest.fixture
    def read_content(self, contents):
        return contents.read

    def test_rows_follow_james_layout(self, repository, cassandra):
        mail = make_mail()
        repository.store(mail)
        key = cassandra.one("SELECT mailKey FROM mailRepositoryKeys WHERE name = ? AND mailKey = ?",
                            (repository.url, mail.name))
        row = cassandra.one("SELECT state, headerBlobId, bodyBlobId, recipients FROM mailRepositoryContentV2 "
                            "WHERE name = ? AND mailKey = ?", (repository.url, mail.name))
        assert key and row["state"] == "error" and row["headerblobid"] and row["bodyblobid"]
        assert row["recipients"] == ["r1@example.com", "r2@other.org"]
        assert cassandra.one("SELECT url FROM mailRepositoryUrls WHERE url = ?", (repository.url,))

    def test_key_without_content_heals_on_read(self, repository, cassandra):
        cassandra.execute("INSERT INTO mailRepositoryKeys (name, mailKey) VALUES (?, ?)", (repository.url, "ghost"))
        assert repository.retrieve("ghost") is None
        assert "ghost" not in list(repository.list_keys())


@pytest.mark.parametrize("deduplication", [False, True], ids=["passthrough", "deduplication"])
def test_a_mail_stored_from_a_queue_keeps_its_content_after_the_queue_deletes_its_blobs(cassandra, s3_blobs,
                                                                                       deduplication):
    """ToRepository stores the spool item's mail, then the item is acknowledged and deletes its blobs:
    without deduplication the repository entry must hold blobs of its own, which its removal deletes."""
    from mailserver.blob.s3 import S3BlobStore

    contents = MimeMessageStore(S3BlobStore(s3_blobs.config, deduplication=deduplication, client=s3_blobs.client))
    repository = CassandraMailRepositoryStore(cassandra, contents).select(f"cassandra://var/mail/t-{uuid.uuid4().hex[:8]}/")
    queued = contents.save(RAW)
    repository.store(make_mail(name="from-the-spool", content=queued))
    contents.delete(queued)   # the spool item is done
    stored = repository.retrieve("from-the-spool")
    assert stored is not None and contents.read(stored.content) == RAW
    assert (stored.content.header_blob_id == queued.header_blob_id) is deduplication
    repository.remove("from-the-spool")
    bucket = contents.blobs.default_bucket
    assert [contents.blobs.exists(bucket, b) for b in (stored.content.header_blob_id, stored.content.body_blob_id)] \
        == [deduplication, deduplication]
