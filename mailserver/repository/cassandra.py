"""Mail repositories on James's tables and the blob store (CassandraMailRepository).

store: blobs -> ``mailRepositoryContentV2`` -> ``mailRepositoryKeys``; remove: key -> content ->
blobs. A key without content (resurrected by a late write) is deleted when read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC

from mailserver.cassandra.session import CassandraSession
from mailserver.model.address import MailAddress
from mailserver.model.mail import Mail, MailContent, PerRecipientHeader
from mailserver.queue.content import MimeMessageStore
from mailserver.repository.api import MailRepository, MailRepositoryStore, validate_url

INSERT_CONTENT = (
    "INSERT INTO mailRepositoryContentV2 (name, mailKey, messageSize, state, headerBlobId, bodyBlobId, attributes, "
    "errorMessage, sender, recipients, remoteHost, remoteAddr, lastUpdated, perRecipientSpecificHeaders) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")


class CassandraMailRepository(MailRepository):
    def __init__(self, url: str, session: CassandraSession, contents: MimeMessageStore) -> None:
        self.url = validate_url(url)
        self.s = session
        self.contents = contents

    def store(self, mail: Mail) -> str:
        # Its own blobs (a copy unless deduplicating): remove() deletes them, and the queue entry the mail
        # comes from deletes its own once processed.
        content = self.contents.owned_copy(mail.content)
        attributes = {k: json.dumps(v) for k, v in mail.serializable_attributes().items()}
        headers = [(h.recipient, h.name, h.value) for h in mail.per_recipient_headers] or None
        self.s.execute(INSERT_CONTENT, (
            self.url, mail.name, content.size, mail.state, content.header_blob_id, content.body_blob_id,
            attributes or None, mail.error_message, str(mail.sender) if mail.sender else None,
            [str(r) for r in mail.recipients], mail.remote_host, mail.remote_addr, mail.last_updated, headers))
        self.s.execute("INSERT INTO mailRepositoryKeys (name, mailKey) VALUES (?, ?)", (self.url, mail.name))
        return mail.name

    def list_keys(self) -> Iterator[str]:
        for row in self.s.execute("SELECT mailKey FROM mailRepositoryKeys WHERE name = ?", (self.url,)):
            yield row["mailkey"]

    def size(self) -> int:
        row = self.s.one("SELECT COUNT(*) AS n FROM mailRepositoryKeys WHERE name = ?", (self.url,))
        return int(row["n"]) if row else 0

    def retrieve(self, key: str) -> Mail | None:
        row = self.s.one("SELECT * FROM mailRepositoryContentV2 WHERE name = ? AND mailKey = ?", (self.url, key))
        if row is None:
            self.s.execute("DELETE FROM mailRepositoryKeys WHERE name = ? AND mailKey = ?", (self.url, key))
            return None
        last_updated = row["lastupdated"]
        return Mail(
            name=key,
            sender=MailAddress.of(row["sender"]) if row["sender"] else None,
            recipients=[MailAddress.of(r) for r in row["recipients"] or []],
            content=MailContent.of_blobs(row["headerblobid"], row["bodyblobid"], row["messagesize"] or 0),
            state=row["state"],
            error_message=row["errormessage"],
            attributes={k: json.loads(v) for k, v in (row["attributes"] or {}).items()},
            remote_host=row["remotehost"] or "localhost",
            remote_addr=row["remoteaddr"] or "127.0.0.1",
            last_updated=last_updated.replace(tzinfo=UTC) if last_updated and last_updated.tzinfo is None
            else last_updated,
            per_recipient_headers=[PerRecipientHeader(*h) for h in row["perrecipientspecificheaders"] or []],
        )

    def remove(self, key: str, *, delete_content: bool = True) -> None:
        row = self.s.one("SELECT headerBlobId, bodyBlobId, messageSize FROM mailRepositoryContentV2 "
                         "WHERE name = ? AND mailKey = ?", (self.url, key))
        self.s.execute("DELETE FROM mailRepositoryKeys WHERE name = ? AND mailKey = ?", (self.url, key))
        self.s.execute("DELETE FROM mailRepositoryContentV2 WHERE name = ? AND mailKey = ?", (self.url, key))
        if delete_content and row and row["headerblobid"]:
            self.delete_content(MailContent.of_blobs(row["headerblobid"], row["bodyblobid"], row["messagesize"] or 0))

    def delete_content(self, content: MailContent) -> None:
        self.contents.delete(content)

    def remove_all(self) -> int:
        keys = list(self.list_keys())
        for key in keys:
            self.remove(key)
        return len(keys)


class CassandraMailRepositoryStore(MailRepositoryStore):
    protocols = ("cassandra",)   # James's distributed server maps only this one

    def __init__(self, session: CassandraSession, contents: MimeMessageStore) -> None:
        self.s = session
        self.contents = contents

    def select(self, url: str) -> MailRepository:
        validate_url(url)
        self.s.execute("INSERT INTO mailRepositoryUrls (url) VALUES (?)", (url,))
        return CassandraMailRepository(url, self.s, self.contents)

    def urls(self) -> list[str]:
        return sorted(r["url"] for r in self.s.session.execute("SELECT url FROM mailRepositoryUrls"))
