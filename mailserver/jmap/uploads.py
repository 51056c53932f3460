"""JMAP uploads (RFC 8620 6.1) stored as James's distributed server stores them
(``CassandraUploadRepository``): the content in the ``jmap-uploads`` bucket under the upload id, a
row per upload in ``uploadsV2`` (partition: the user), and the blob id handed to the client is
``uploads-<upload id>`` (``UploadRoutes.asBlobId``)."""

from __future__ import annotations

import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO

from mailserver.blob.api import BlobStore, BucketName
from mailserver.cassandra.session import CassandraSession
from mailserver.model.address import Username

UPLOAD_BUCKET = BucketName("jmap-uploads")
BLOB_ID_PREFIX = "uploads-"


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Upload:
    id: uuid.UUID
    user: Username
    content_type: str
    size: int
    blob_id: str        # the key of the content in UPLOAD_BUCKET: the upload id, as James writes it
    uploaded: datetime

    @property
    def jmap_blob_id(self) -> str:
        return f"{BLOB_ID_PREFIX}{self.id}"


def upload_id(jmap_blob_id: str) -> uuid.UUID | None:
    """The upload a JMAP blob id names, or None when it names no upload (James's ``UploadResolver``)."""
    if not jmap_blob_id.startswith(BLOB_ID_PREFIX):
        return None
    try:
        return uuid.UUID(jmap_blob_id[len(BLOB_ID_PREFIX):])
    except ValueError:
        return None


class UploadRepository(ABC):
    """Content in the blob store, one record per upload, visible to its uploader only."""

    def __init__(self, blobs: BlobStore, clock: Callable[[], datetime] = _now) -> None:
        self.blobs, self.clock = blobs, clock

    def upload(self, user: Username, content_type: str, data: IO[bytes]) -> Upload:
        """Store the content first, then the record: a record never names missing content."""
        new_id = uuid.uuid1()   # James's Uuids.timeBased(): the id column is a TIMEUUID
        counted = _Counting(data)
        blob_id = self.blobs.save_as(UPLOAD_BUCKET, str(new_id), counted)
        # Milliseconds, as James truncates (a Cassandra timestamp keeps no more).
        now = self.clock()
        uploaded = now.replace(microsecond=now.microsecond // 1000 * 1000)
        record = Upload(new_id, user, content_type, counted.size, str(blob_id), uploaded)
        self._save(record)
        return record

    def retrieve(self, user: Username, id_: uuid.UUID) -> Upload | None:
        """The user's upload of that id; another user's is None, as if it did not exist."""
        return self._find(user, id_)

    def content(self, upload: Upload) -> bytes:
        return self.blobs.read(UPLOAD_BUCKET, upload.blob_id)

    def delete_uploaded_before(self, horizon: datetime) -> int:
        """Delete every user's uploads made before ``horizon`` (James's ``deleteByUploadDateBefore``);
        how many. The content goes first: a failure leaves a record a re-run finds again."""
        deleted = 0
        for upload in self._all():
            if upload.uploaded < horizon:
                self.blobs.delete(UPLOAD_BUCKET, upload.blob_id)
                self._delete(upload)
                deleted += 1
        return deleted

    @abstractmethod
    def _save(self, upload: Upload) -> None: ...

    @abstractmethod
    def _find(self, user: Username, id_: uuid.UUID) -> Upload | None: ...

    @abstractmethod
    def _all(self) -> Iterator[Upload]: ...

    @abstractmethod
    def _delete(self, upload: Upload) -> None: ...


class _Counting:
    """The content in chunks, counting its bytes (James's ``CountingInputStream``)."""

    CHUNK = 64 * 1024

    def __init__(self, inner: IO[bytes]) -> None:
        self.inner, self.size = inner, 0

    def __iter__(self) -> Iterator[bytes]:
        while chunk := self.inner.read(self.CHUNK):
            self.size += len(chunk)
            yield chunk


class MemoryUploadRepository(UploadRepository):
    def __init__(self, blobs: BlobStore, clock: Callable[[], datetime] = _now) -> None:
        super().__init__(blobs, clock)
        self._uploads: dict[tuple[Username, uuid.UUID], Upload] = {}
        self._lock = threading.Lock()

    def _save(self, upload: Upload) -> None:
        with self._lock:
            self._uploads[(upload.user, upload.id)] = upload

    def _find(self, user: Username, id_: uuid.UUID) -> Upload | None:
        with self._lock:
            return self._uploads.get((user, id_))

    def _all(self) -> Iterator[Upload]:
        with self._lock:
            return iter(list(self._uploads.values()))

    def _delete(self, upload: Upload) -> None:
        with self._lock:
            self._uploads.pop((upload.user, upload.id), None)


class CassandraUploadRepository(UploadRepository):
    def __init__(self, session: CassandraSession, blobs: BlobStore, clock: Callable[[], datetime] = _now) -> None:
        super().__init__(blobs, clock)
        self.s = session

    def _save(self, upload: Upload) -> None:
        self.s.execute("INSERT INTO uploadsV2 (user, id, blob_id, size, content_type, upload_date) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       (str(upload.user), upload.id, upload.blob_id, upload.size, upload.content_type,
                        upload.uploaded))

    def _find(self, user: Username, id_: uuid.UUID) -> Upload | None:
        if id_.version != 1:   # not a TIMEUUID: Cassandra would refuse it, and no upload has it
            return None
        row = self.s.one("SELECT id, blob_id, size, content_type, upload_date FROM uploadsV2 "
                         "WHERE user = ? AND id = ?", (str(user), id_))
        return None if row is None else _from_row(row, user)

    def _all(self) -> Iterator[Upload]:
        # A scan of the whole table, as James's UploadDAO.all(): the clean-up runs rarely.
        for row in self.s.execute("SELECT user, id, blob_id, size, content_type, upload_date FROM uploadsV2"):
            yield _from_row(row, Username.of(row["user"]))

    def _delete(self, upload: Upload) -> None:
        self.s.execute("DELETE FROM uploadsV2 WHERE user = ? AND id = ?", (str(upload.user), upload.id))


def _from_row(row: dict, user: Username) -> Upload:
    uploaded = row["upload_date"] or datetime.fromtimestamp(0, UTC)   # James's UPLOAD_DATE_FALLBACK
    return Upload(row["id"], user, row["content_type"], row["size"], row["blob_id"],
                  uploaded if uploaded.tzinfo else uploaded.replace(tzinfo=UTC))
