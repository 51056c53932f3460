"""The mail-repository contract on Cassandra (James's tables) and the S3 server."""

from __future__ import annotations

import pytest

from mailserver.queue.content import MimeMessageStore
from mailserver.repository.cassandra import CassandraMailRepositoryStore
from tests.contract.mail_repository_contract import MailRepositoryContract, make_mail

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
